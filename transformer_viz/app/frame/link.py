"""What became of the link a session was opened with: the settings the app could not use are named."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import checkpoints
from transformer_viz.app.server.limits import limits
from transformer_viz.app.session import state
from transformer_viz.app.session.state import VIEW_FIELDS
from transformer_viz.app.session.widgets import FORMATS, current_view, linked_language, literal, tr
from transformer_viz.i18n import CATALOGS


def link_text(field: str, value) -> str:
    """A view value as its widget writes it into the link (of a multiple choice: its last, as
    st.query_params.to_dict() reads a repeated parameter; the language: its code)."""
    if isinstance(value, tuple):
        return link_text(field, value[-1]) if value else ""
    if field in FORMATS and field != state.LANG:
        return FORMATS[field](value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def rejected_settings() -> list[str]:
    """The view fields of the opening link that the widgets did not take as written (invalid, out of range); a
    language named as older links name it (lang=中文) is taken as its code."""
    asked = dict(st.session_state.get(state.LINK_ASKED, {}))
    if state.LANG in asked:
        asked[state.LANG] = linked_language(asked[state.LANG]) or asked[state.LANG]
    written = st.query_params.to_dict()
    view = current_view()
    return [field for field, text in asked.items() if field in VIEW_FIELDS
            and written.get(field, link_text(field, getattr(view, field))) != text]


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
        name = checkpoint_in_label(st.session_state.get(state.LINK_ASKED, {}).get(state.WEIGHTS, ""))
        if name is None:
            st.sidebar.caption(tr("error.link_weights"))
        else:  # a checkpoint of another server's folder, or of another task
            task = current_view().task
            available = ", ".join(literal(extra.name) for extra in checkpoints.usable(task)) or tr("weights.none")
            st.sidebar.caption(tr("error.link_checkpoint", name=literal(name), task=tr(f"task.{task}"),
                                  available=available))


def checkpoint_in_label(text: str) -> str | None:
    """The checkpoint name in a weights label of the link ("checkpoint “mine”" in any language), or None."""
    for catalog in CATALOGS.values():
        before, _, after = catalog["weights.checkpoint"].partition("{name}")
        if len(text) > len(before) + len(after) and text.startswith(before) and text.endswith(after):
            return text[len(before):len(text) - len(after)]
    return None
