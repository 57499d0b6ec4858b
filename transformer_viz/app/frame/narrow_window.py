"""A notice, shown only while the main column is narrower than the figures are laid out for (MAIN_WIDTH).

The server builds each figure for the narrowest width it is drawn at and cannot see the browser's: a 1280 px
screen at 150 % zoom with the sidebar open leaves the main column ~520 px, and there labels overlap. A CSS
container query on the main column shows the notice exactly then, with the two ways out: hide the sidebar, zoom
out. The server sends the same three small elements in every run; the browser decides."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.session.charts import MAIN_WIDTH
from transformer_viz.app.session.words import tr

# Below this main-column width (px) the notice shows. No figure text of eight pages overlaps or is cut off at
# 780 px, the first does at 770 (devtools/text_boxes.py, sidebar open); the 10 px below MAIN_WIDTH are a scrollbar's
# room at 150 % zoom, where presenter mode's 796 px become 786.
NOTICE_BELOW = MAIN_WIDTH - 10
# The keyed container sits in a layout wrapper of its own: hidden with it, it leaves no gap above the page.
WRAPPER = f"[data-testid=stLayoutWrapper]:has(> .st-key-{state.NARROW_NOTICE})"
NARROW_CSS = (f"<style>[data-testid=stMainBlockContainer]{{container:tv-main/inline-size}}{WRAPPER}{{display:none}}"
              f"@container tv-main (width < {NOTICE_BELOW}px){{{WRAPPER}{{display:flex}}}}</style>")


def narrow_window_notice() -> None:
    """The notice (hidden by CSS unless the main column is narrower than NOTICE_BELOW), above the page."""
    st.html(NARROW_CSS)
    with st.container(key=state.NARROW_NOTICE):
        st.info(tr("frame.narrow"), icon=":material/fit_screen:")
