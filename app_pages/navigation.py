"""The pages of the app, in menu order, as st.Page objects (also for st.switch_page and st.page_link)."""

from __future__ import annotations

import importlib

import streamlit as st

from .ui import tr

GOTO_KEY = "_goto"
PAGES = {"overview": ":material/account_tree:", "embeddings": ":material/grid_on:",
         "attention": ":material/visibility:", "masks": ":material/blur_on:", "head": ":material/calculate:",
         "decoding": ":material/edit_note:", "training": ":material/fitness_center:"}


def page(path: str) -> st.Page:
    """The st.Page of app_pages/<path>.py; its URL is /<path>."""
    module = importlib.import_module(f"app_pages.{path}")
    return st.Page(module.render, title=tr(f"nav.{path}"), url_path=path, icon=PAGES[path],
                   default=path == "overview")


def all_pages() -> list[st.Page]:
    return [page(path) for path in PAGES]


def follow_pending_link() -> None:
    """Open the page a click asked for (st.switch_page before any widget of this run is drawn)."""
    target = st.session_state.pop(GOTO_KEY, None)
    if target in PAGES:
        st.switch_page(page(target))
