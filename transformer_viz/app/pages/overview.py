"""Overview page: the architecture with live shapes and parameter counts; click a block to open its page."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.frame.navigation import page
from transformer_viz.app.server import state
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.page import page_context
from transformer_viz.app.session.words import tr
from transformer_viz.figures.overview import architecture_diagram, diagram_selection
from transformer_viz.model.summary import block_shapes

LINKED_PAGES = ("embeddings", "attention", "masks", "head", "decoding")


def open_clicked_block() -> None:
    """A click on a block asks app.py to open its page at the start of the next run."""
    target = diagram_selection(st.session_state.get(state.DIAGRAM_CHART))
    if target in LINKED_PAGES:
        st.session_state[state.GOTO] = target


def model_counts(ctx) -> dict[str, int]:
    return ctx.architecture.parameter_counts(ctx.model)


def diagram(ctx, *, min_font: int, lang: str):
    """The architecture for this run's model and input: built once per run, language and smallest font for the
    whole class."""
    shapes = block_shapes(ctx.trace.config, len(ctx.trace.src_tokens or ()), len(ctx.trace.tgt_tokens))
    return architecture_diagram(ctx.trace.config, model_counts(ctx), shapes, min_font=min_font, lang=lang)


def render() -> None:
    st.title(tr("overview.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("overview.intro" + ctx.trace.form.words))
    chart(ctx.figures(diagram), key=state.DIAGRAM_CHART, on_select=open_clicked_block)
    st.metric(tr("overview.total"), f"{model_counts(ctx)['total']:,}")
    st.caption(tr("overview.open"))
    links = st.container(horizontal=True)  # the links wrap: five columns cut "Inside one head" short at 150 %
    for path in LINKED_PAGES:
        links.page_link(page(path), label=tr(f"nav.{path}"))
