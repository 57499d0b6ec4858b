"""The link: a session starts from the view its link names, and the address bar shows the view after every run.

The app writes the link itself (from the `View`, as ids: session/link.py) rather than binding each widget to
it: Streamlit's binding writes a choice's translated label, and it leaves out a value that code (the lesson, a
room, "open in the explorer") set before a page switch, so a copied link would open another view.
"""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import checkpoints, state
from transformer_viz.app.server.limits import limits
from transformer_viz.app.server.state import VIEW_FIELDS
from transformer_viz.app.session.link import field_texts, link_params, read_params
from transformer_viz.app.session.widgets import current_view
from transformer_viz.app.session.words import literal, tr


def query_params() -> dict[str, list[str]]:
    """The address bar's query parameters, each with all its values."""
    return {key: st.query_params.get_all(key) for key in st.query_params}


def open_link() -> None:
    """A session's first run, before anything reads the view: take the view values its link names."""
    if state.LINK_ASKED in st.session_state:
        return
    asked = query_params()
    st.session_state[state.LINK_ASKED] = asked  # a room's too: a lesson opened by a link does not set itself up
    values, _unreadable = read_params(asked)
    st.session_state.update(values)


def write_link(more: dict[str, list[str]] | None = None) -> None:
    """Show the view in the address bar (one message, only when it changed): after every run, and in a page
    fragment whose widgets are view fields. Other parameters stay, and `more` are added (a room's: a page
    switch from the menu drops them)."""
    now = query_params()
    wanted = {key: texts for key, texts in now.items() if key not in VIEW_FIELDS} | link_params(current_view())
    wanted |= more or {}
    if wanted != now:
        st.query_params.from_dict(wanted)


def rejected_settings() -> list[str]:
    """The view fields of the opening link that the session does not show as written: no value of their type, or
    one its widget could not take (unknown option, out of range)."""
    values, unreadable = read_params(st.session_state.get(state.LINK_ASKED, {}))
    view = current_view()
    return unreadable + [field for field, value in values.items()
                         if field_texts(field, value) != field_texts(field, getattr(view, field))]


def link_notice() -> None:
    """After the first run's widgets have read the link: say, for the rest of the session, what was reset."""
    if state.LINK_REJECTED not in st.session_state:
        st.session_state[state.LINK_REJECTED] = rejected_settings()
    rejected = st.session_state[state.LINK_REJECTED]
    if rejected:
        st.sidebar.warning(tr("error.link", names=", ".join(rejected)))
    if set(rejected) & set(state.SHAPE_FIELDS):
        allowed = limits()
        st.sidebar.caption(tr("error.link_limits", d_model=allowed.d_model, heads=allowed.heads, layers=allowed.layers,
                              d_ff=allowed.d_ff, tokens=allowed.input_tokens))
    if state.WEIGHTS in rejected:
        name = checkpoints.checkpoint_name(st.session_state.get(state.LINK_ASKED, {}).get(state.WEIGHTS, [""])[-1])
        if name is None:
            st.sidebar.caption(tr("error.link_weights"))
        else:  # a checkpoint of another server's folder, or of another task
            task = current_view().task
            available = ", ".join(literal(extra.name) for extra in checkpoints.usable(task)) or tr("weights.none")
            st.sidebar.caption(tr("error.link_checkpoint", name=literal(name), task=tr(f"task.{task}"),
                                  available=available))
