"""Take the view home: every figure of this page in one HTML file that works offline."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.session.words import tr
from transformer_viz.figures.export import standalone_html


def start_view() -> None:
    """Before a page draws: its figures are collected afresh (ui.chart adds each one by key)."""
    st.session_state[state.VIEW_FIGURES] = {}


def view_download(title: str) -> None:
    """A sidebar button for the page's figures as one HTML file (built only when clicked)."""
    figures = list(st.session_state.get(state.VIEW_FIGURES, {}).values())
    if not figures:
        return
    link = tr("take_home.caption")
    st.sidebar.download_button(tr("take_home.html"), data=lambda: standalone_html(figures, title, link),
                               file_name="transformer_viz.html", mime="text/html", on_click="ignore",
                               icon=":material/download:", width="stretch")
