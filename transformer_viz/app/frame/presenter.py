"""Presenter mode (`?present=true`): no sidebar, larger text, for a 1280×720 projector."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.session.words import tr

# Nothing in presenter mode stands over what it shows. The way out sits at the top right of the page and scrolls
# with it (fixed, it covered whatever scrolled under it), the title's row leaves it room, as does the room's news
# above the title. The lesson's Previous, step
# chooser and Next stick to the top of the screen while a step scrolls (the main element is what scrolls). Plotly's
# toolbar, which covered titles and legends on hover, is left out: zooming and saving PNGs are for a desk.
PRESENTER_CSS = f"""<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"] {{display: none !important}}
html {{font-size: 19px}}
.block-container {{max-width: 100% !important; padding: 1.2rem 1.5rem 2rem 1.5rem !important; position: relative}}
.st-key-{state.PRESENT_EXIT} {{position: absolute; top: 0.5rem; right: 1.5rem; width: auto !important;
  z-index: 1000010}}
.block-container h1, .st-key-{state.ROOM_BANNERS} {{padding-right: 12.5rem}}
[data-testid="stLayoutWrapper"]:has(> [data-testid="stHorizontalBlock"] .st-key-{state.LESSON_NEXT}) {{
  position: sticky; top: 0; z-index: 999; background: white; padding: 0.4rem 0; margin-top: -0.4rem}}
.js-plotly-plot .modebar-container {{display: none !important}}
</style>"""


def leave_presenter_mode() -> None:
    st.session_state[state.PRESENT] = False


def presenter_frame() -> None:
    """In presenter mode: hide the sidebar, enlarge the text and offer the way out at the top right (beside the
    page's title, so it takes no row of a 720 px high screen)."""
    if st.session_state.get(state.PRESENT):
        st.html(PRESENTER_CSS)
        st.button(tr("present.exit"), icon=":material/close_fullscreen:", on_click=leave_presenter_mode,
                  key=state.PRESENT_EXIT, width="content")
