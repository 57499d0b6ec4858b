"""A notice, shown only while the main column is narrower than the figures are laid out for (MAIN_WIDTH).

The server builds each figure for the narrowest width it is drawn at and cannot see the browser's: a 1280 px
screen at 150 % zoom with the sidebar open leaves the main column ~550 px, and there labels would overlap. A CSS
container query on the main column shows the notice exactly then, with the two ways out: hide the sidebar, zoom
out. It costs the server nothing per rerun and the browser one rule."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.session import state
from transformer_viz.app.session.widgets import MAIN_WIDTH, tr

# The keyed container sits in a layout wrapper of its own: hidden with it, it leaves no gap above the page.
NOTICE = f"[data-testid=stLayoutWrapper]:has(> .st-key-{state.NARROW_NOTICE})"
NARROW_CSS = (f"<style>[data-testid=stMainBlockContainer]{{container:tv-main/inline-size}}{NOTICE}{{display:none}}"
              f"@container tv-main (width < {MAIN_WIDTH}px){{{NOTICE}{{display:flex}}}}</style>")


def narrow_window_notice() -> None:
    """The notice (hidden by CSS unless the main column is narrower than MAIN_WIDTH), above the page."""
    st.html(NARROW_CSS)
    with st.container(key=state.NARROW_NOTICE):
        st.info(tr("frame.narrow"), icon=":material/fit_screen:")
