"""Small Streamlit helpers shared by the pages: text in the current language, the current view, charts."""

from __future__ import annotations

from dataclasses import fields

import streamlit as st

from .state import View
from .text import t

VIEW_FIELDS = tuple(f.name for f in fields(View))


def tr(key: str, /, **values) -> str:
    """Catalog text in the language chosen in the sidebar."""
    return t(key, st.session_state.get("lang", "en"), **values)


def current_view() -> View:
    """The view as the widgets and selections in this session set it."""
    return View(**{f: st.session_state[f] for f in VIEW_FIELDS if f in st.session_state})


def sync_link() -> None:
    """Write the current view into the address bar, so that copying the link restores it."""
    params = current_view().to_params()
    if st.query_params.to_dict() != params:  # an unchanged link is not pushed again
        st.query_params.from_dict(params)


def chart(fig, key: str, on_select: str = "ignore", selection_mode=("points",)):
    """st.plotly_chart with the figure's own colours (not Streamlit's theme) and a compact mode bar."""
    return st.plotly_chart(
        fig, key=key, theme=None, on_select=on_select, selection_mode=selection_mode,
        config={"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]},
    )


def bound(field: str) -> dict:
    """Widget kwargs that keep a page widget in sync with a view field that outlives page changes.

    Streamlit forgets the state of widgets that are not drawn, so the value lives in a plain
    session key (the view field) and the widget gets a page-local copy.
    """
    widget_key = f"w_{field}"
    if widget_key not in st.session_state:
        st.session_state[widget_key] = st.session_state.get(field, getattr(View(), field))

    def copy_back() -> None:
        st.session_state[field] = st.session_state[widget_key]

    return {"key": widget_key, "on_change": copy_back}


def select_field(field: str, value) -> None:
    """Set a view field and its page widget (e.g. after a click on a chart)."""
    st.session_state[field] = value
    st.session_state[f"w_{field}"] = value
