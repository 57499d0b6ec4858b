"""The pages of the app, in menu order, as st.Page objects (also for st.switch_page and st.page_link)."""

from __future__ import annotations

import importlib

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.session.words import tr

PAGES = {"lesson": ":material/school:", "overview": ":material/account_tree:", "embeddings": ":material/grid_on:",
         "attention": ":material/visibility:", "masks": ":material/blur_on:", "head": ":material/calculate:",
         "layers": ":material/stacked_line_chart:", "decoding": ":material/edit_note:",
         "attribution": ":material/manage_search:",
         "training": ":material/fitness_center:", "break_it": ":material/build:", "compare": ":material/compare:"}
HOME = "lesson"


def page(path: str) -> st.Page:
    """The st.Page of transformer_viz/app/pages/<path>.py; its URL is /<path> (the home page's is /)."""
    module = importlib.import_module(f"transformer_viz.app.pages.{path}")
    home = path == HOME  # the default page's own path is never shown: it is at /
    return st.Page(module.render, title=tr(f"nav.{path}"), url_path="home" if home else path, icon=PAGES[path],
                   default=home)


def all_pages() -> list[st.Page]:
    """Every page. The home page is at / and, through a hidden twin, at /overview like every other page."""
    twin = importlib.import_module(f"transformer_viz.app.pages.{HOME}").render
    return [page(path) for path in PAGES] + [st.Page(twin, title=tr(f"nav.{HOME}"), url_path=HOME,
                                                     visibility="hidden")]


def follow_pending_link() -> None:
    """Set the view values and open the page a click asked for (before any widget of this run is drawn)."""
    st.session_state.update(st.session_state.pop(state.PENDING_VIEW, {}))
    target = st.session_state.pop(state.GOTO, None)
    if target in PAGES:
        st.switch_page(page(target), query_params={})
