"""Presenter mode (`?present=true`): no sidebar, larger text, for a 1280×720 projector."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.session import state
from transformer_viz.app.session.widgets import tr

PRESENTER_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"] {display: none !important}
html {font-size: 19px}
.block-container {max-width: 100% !important; padding: 1.2rem 1.5rem 2rem 1.5rem !important}
.st-key-present_exit {position: fixed; top: 0.5rem; right: 1.5rem; width: auto !important; z-index: 1000010}
</style>"""


def leave_presenter_mode() -> None:
    st.session_state[state.PRESENT] = False


def presenter_frame() -> None:
    """In presenter mode: hide the sidebar, enlarge the text and offer the way out at the top right (over
    the page's header, so it takes no row of a 720 px high screen)."""
    if st.session_state.get(state.PRESENT):
        st.html(PRESENTER_CSS)
        st.button(tr("present.exit"), icon=":material/close_fullscreen:", on_click=leave_presenter_mode,
                  key=state.PRESENT_EXIT, width="content")
