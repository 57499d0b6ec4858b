"""Overview page: the architecture with live shapes and parameter counts; click a block to open its page."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.overview import architecture_diagram, diagram_selection
from transformer_viz.model.summary import block_shapes, parameter_counts

from .context import page_context
from .navigation import page
from .ui import chart, tr

LINKED_PAGES = ("embeddings", "attention", "masks", "head", "decoding")


def render() -> None:
    st.title(tr("overview.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("overview.intro"))
    config = ctx.trace.config
    counts = parameter_counts(ctx.model)
    shapes = block_shapes(config, len(ctx.trace.src_tokens), len(ctx.trace.tgt_tokens))
    event = chart(architecture_diagram(config, counts, shapes), key="overview_diagram", on_select="rerun")
    target = diagram_selection(event)
    if target in LINKED_PAGES:
        st.switch_page(page(target))
    st.metric(tr("overview.total"), f"{counts['total']:,}")
    st.caption(tr("overview.open"))
    for column, path in zip(st.columns(len(LINKED_PAGES)), LINKED_PAGES, strict=True):
        column.page_link(page(path), label=tr(f"nav.{path}"))
