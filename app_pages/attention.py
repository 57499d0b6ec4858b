"""Attention page: every layer and head of one kind as a grid, one head large, the numbers behind a cell."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.attention import (
    attention_grid,
    attention_heatmap,
    attention_lines,
    cell_breakdown,
    cell_selection,
    grid_selection,
    head_entropy,
)
from transformer_viz.figures.common import attention_tokens, fill_text, n_layers

from .context import PageContext, page_context
from .state import ATTENTION_VALUES, KINDS
from .ui import bound, chart, select_field, sync_link, tr

GRID_WIDTH = 820  # px: the main column at 1280 px with the sidebar open
HEAD_WIDTH = 480  # px: the large head's column


def render() -> None:
    st.title(tr("attention.title"))
    ctx = page_context()
    if ctx is not None:
        explorer(ctx)


@st.fragment
def explorer(ctx: PageContext) -> None:
    """Controls, grid, one head and entropy: a change here reruns only this part, not the sidebar."""
    text_column, control_column = st.columns([1, 1], gap="large")
    with control_column:
        st.selectbox(tr("attention.kind"), KINDS, format_func=lambda k: tr(f"kind.{k}"), **bound("kind"))
        kind = st.session_state["kind"]
        layers, heads = clamp_selection(ctx, kind)
        value_column, layer_column, head_column = st.columns([2, 1, 1])
        value_column.selectbox(tr("attention.value"), ATTENTION_VALUES, format_func=lambda v: tr(f"value.{v}"),
                               **bound("value"))
        layer_column.selectbox(tr("attention.layer"), range(layers), format_func=lambda i: str(i + 1),
                               **bound("layer"))
        head_column.selectbox(tr("attention.head"), range(heads), format_func=lambda i: str(i + 1), **bound("head"))
    with text_column:
        st.markdown(tr("attention.intro"))
    st.caption(f"{tr(f'kind.{kind}.help')} {tr('attention.grid_help')}")
    grid = ctx.figure(attention_grid, kind, st.session_state["value"], width=GRID_WIDTH,
                      highlight=(st.session_state["layer"], st.session_state["head"]))
    chart(grid, key="attention_grid", on_select=on_grid_click)
    head_view(ctx, kind)
    st.subheader(tr("attention.entropy"))
    st.caption(tr("attention.entropy_help"))
    chart(ctx.figure(head_entropy, kind), key="attention_entropy")
    sync_link()


def on_grid_click() -> None:
    picked = grid_selection(st.session_state.get("attention_grid"))
    if picked is not None:
        select_field("layer", picked[0])
        select_field("head", picked[1])


def clamp_selection(ctx: PageContext, kind: str) -> tuple[int, int]:
    """Keep layer and head inside the current model (a smaller model may have been chosen since)."""
    layers, heads = n_layers(ctx.trace, kind), ctx.trace.config.n_heads
    for field, limit in (("layer", layers), ("head", heads)):
        if st.session_state.get(field, 0) >= limit:
            select_field(field, limit - 1)
    return layers, heads


@st.fragment
def head_view(ctx: PageContext, kind: str) -> None:
    """One head large, its line view and a clicked cell's numbers. Clicks here rerun only this part."""
    layer, head, value = st.session_state["layer"], st.session_state["head"], st.session_state["value"]

    st.subheader(tr("attention.large", layer=layer + 1, head=head + 1))
    big, lines = st.columns([3, 2], gap="medium")
    with big:
        event = chart(ctx.figure(attention_heatmap, kind, layer, head, value, width=HEAD_WIDTH), key="attention_head",
                      on_select="rerun")
        cell = cell_selection(event)
        if cell is None:
            st.caption(tr("attention.cell"))
    with lines:
        st.markdown(f"**{tr('attention.lines')}**")
        query_tokens = ctx.trace.src_tokens if kind == "encoder_self" else ctx.trace.tgt_tokens
        query = st.selectbox(tr("attention.query"), [None, *range(len(query_tokens))], key="attention_query",
                             format_func=lambda q: tr("attention.all_queries") if q is None
                             else f"{q}: {query_tokens[q]}")
        if cell is not None:
            query = cell[0]
        chart(ctx.figure(attention_lines, kind, layer, head, query=query), key="attention_lines")
    if cell is not None:
        show_cell(ctx, kind, layer, head, *cell)


def show_cell(ctx: PageContext, kind: str, layer: int, head: int, query: int, key: int) -> None:
    """The arithmetic of one weight: q·k, ÷√d_k, the mask, the softmax of its row."""
    numbers = cell_breakdown(ctx.trace, kind, layer, head, query, key)
    st.markdown(f"#### {tr('attention.cell_title', query=numbers['query_token'], key=numbers['key_token'])}")
    columns = st.columns(5)
    columns[0].metric(tr("cell.dot"), f"{numbers['dot']:.3f}")
    columns[1].metric(tr("cell.scale", d_head=numbers["d_head"]), f"{numbers['sqrt_d_head']:.3f}")
    columns[2].metric(tr("cell.score"), f"{numbers['score']:.3f}")
    fill = numbers["mask_value"]
    columns[3].metric(tr("cell.mask"), "✓" if numbers["allowed"] else fill_text(fill))
    columns[4].metric(tr("cell.weight_short"), f"{numbers['weight']:.3f}")
    _, key_tokens = attention_tokens(ctx.trace, kind)
    st.caption(tr("cell.row", query=numbers["query_token"]))
    st.dataframe(
        {tr("attention.key"): [f"{j}: {token}" for j, token in enumerate(key_tokens)],
         tr("cell.masked_score"): [fill_text(v) if v <= fill else f"{v:.3f}" for v in numbers["row_masked_scores"]],
         tr("cell.weight"): [round(float(w), 4) for w in numbers["row_softmax"]]},
        hide_index=True, use_container_width=True,
    )
