"""Attention page: every layer and head of one kind as a grid, one head large, the numbers behind a cell; below,
head scores, attention rollout and the trace to take home.

Two fragments: the explorer (its controls, the grid, the large head) and what lies below it (entropy, head scores,
rollout, downloads), which depends on the kind alone. A change of layer, head or value reruns the explorer only;
a change of kind reruns both."""

from __future__ import annotations

import io

import streamlit as st

from transformer_viz.analysis.walkthrough import cell_numbers
from transformer_viz.app.frame.link import write_link
from transformer_viz.app.rooms.teach import share_view
from transformer_viz.app.server import state
from transformer_viz.app.server.state import View
from transformer_viz.app.session.charts import MAIN_WIDTH, chart, figure_min_font
from transformer_viz.app.session.page import (
    PageContext,
    attention_selectors,
    cell_selectors,
    chosen_kind,
    page_context,
)
from transformer_viz.app.session.widgets import view_widget
from transformer_viz.app.session.words import lang, literal, tr
from transformer_viz.data.tasks import get_task
from transformer_viz.figures.attention import attention_heatmap, attention_lines, cell_selection, head_entropy
from transformer_viz.figures.attention_arrays import ATTENTION_VALUES
from transformer_viz.figures.grid import attention_grid, grid_selection
from transformer_viz.figures.numbers import format_number
from transformer_viz.figures.rollout import head_score_table, rollout_figure

EXPLORER, BELOW = "attention_explorer", "attention_below"  # the two fragments' keys
GRID_WIDTH = MAIN_WIDTH  # px, see MAIN_WIDTH
HEAD_WIDTH, MAX_HEAD_WIDTH = 455, 1100  # px: the large head's column (3/5 of MAIN_WIDTH, MAX_MAIN_WIDTH)


def render() -> None:
    st.title(tr("attention.title"))
    ctx = page_context()
    if ctx is not None:
        explorer(ctx)
        below_the_explorer(ctx)


@st.fragment(key=EXPLORER)
def explorer(ctx: PageContext) -> None:
    """Controls, grid and one head: a change here reruns only this part, not the sidebar or what lies below."""
    share_view()  # a teacher's room sees a change made here at once, not at the next full run
    write_link()  # and so does the address bar
    text_column, control_column = st.columns([1, 1], gap="large")
    with control_column:
        # The kind and what to draw each take the column's width: their options are long ("scaled scores
        # q·k/√d_k"), and at 150 % zoom a third of it cut them off.
        kind_column, value_column = st.container(), st.container()
        layer_column, head_column = st.columns(2)
        kind, layer, head = attention_selectors(ctx.trace, kind_column, layer_column, head_column,
                                                on_kind_change=rerun_both)
        value = view_widget(value_column.selectbox, state.VALUE, tr("attention.value"), ATTENTION_VALUES,
                            index=ATTENTION_VALUES.index(View.value))
    with text_column:
        st.markdown(tr("attention.intro"))
    st.caption(f"{tr(f'kind.{kind}.help')} {tr('attention.grid_help')}")
    shared = shared_heads(ctx.trace.config)
    if shared:
        st.caption(tr("attention.gqa", groups=shared))
    grid = ctx.figure(attention_grid, kind, value, width=GRID_WIDTH, highlight=(layer, head),
                      min_font=figure_min_font())
    chart(grid, key=state.GRID_CHART, on_select=on_grid_click)
    head_view(ctx, kind, layer, head, value)


def rerun_both() -> None:
    """A new kind changes what lies below the explorer too: rerun both fragments (still not the whole page)."""
    st.rerun([EXPLORER, BELOW])


@st.fragment(key=BELOW)
def below_the_explorer(ctx: PageContext) -> None:
    """Entropy, head scores, rollout and downloads: not rerun by a change of layer, head or value, which they do
    not show (the head-score table alone made each of those reruns ~35 ms slower, `bench/bench_ui.py`)."""
    kind = chosen_kind(ctx.trace)
    st.subheader(tr("attention.entropy"))
    st.caption(tr("attention.entropy_help"))
    chart(ctx.figure(head_entropy, kind, min_font=figure_min_font()), key="attention_entropy")
    head_scores_and_rollout(ctx, kind)
    trace_downloads(ctx)


def shared_heads(config) -> str:
    """Which query heads share a key/value head under grouped-query attention ("query heads 1–2 share key/value
    head 1; ..."), or "" when every head has its own (the toy models, GPT-2)."""
    shared = getattr(config, "kv_head_of_query_head", ())
    if len(set(shared)) == len(shared):
        return ""
    groups = {kv: [head + 1 for head, of in enumerate(shared) if of == kv] for kv in sorted(set(shared))}
    return "; ".join(tr("attention.gqa_group", heads=f"{heads[0]}–{heads[-1]}", kv=kv + 1)
                     for kv, heads in groups.items())


def on_grid_click() -> None:
    picked = grid_selection(st.session_state.get(state.GRID_CHART))
    if picked is not None:
        st.session_state[state.LAYER], st.session_state[state.HEAD] = picked


@st.fragment
def head_view(ctx: PageContext, kind: str, layer: int, head: int, value: str) -> None:
    """One head large, its line view and one cell's numbers. A click on a cell chooses it (and its query)."""
    share_view()
    write_link()
    st.subheader(tr("attention.large", layer=layer + 1, head=head + 1))
    query_tokens, key_tokens = ctx.trace.attention_tokens(kind)
    big, lines = st.columns([3, 2], gap="medium")
    with big:
        query_column, key_column = st.columns(2)
        cell = cell_selectors(query_tokens, key_tokens, query_column, key_column, optional=True)
        highlight = cell if cell[0] is not None else None
        chart(ctx.figure(attention_heatmap, kind, layer, head, value, width=HEAD_WIDTH, max_width=MAX_HEAD_WIDTH,
                         highlight=highlight, min_font=figure_min_font()),
              key=state.HEAD_CHART, on_select=on_cell_click)
        st.caption(tr("attention.cell"))
    with lines:
        st.markdown(f"**{tr('attention.lines')}**")
        query = view_widget(st.selectbox, state.QUERY, tr("attention.query"), [None, *range(len(query_tokens))],
                            format_func=lambda q: tr("attention.all_queries") if q is None
                            else f"{q}: {query_tokens[q]}")
        chart(ctx.figure(attention_lines, kind, layer, head, query=query, min_font=figure_min_font()),
              key="attention_lines")
    if cell[0] is not None:  # only once chosen: the arithmetic costs every rerun of this page ~40 ms
        show_cell(ctx, kind, layer, head, *cell)


def on_cell_click() -> None:
    picked = cell_selection(st.session_state.get(state.HEAD_CHART))
    if picked is not None:
        st.session_state[state.CELL_QUERY], st.session_state[state.CELL_KEY] = picked
        st.session_state[state.QUERY] = picked[0]


def show_cell(ctx: PageContext, kind: str, layer: int, head: int, query: int, key: int) -> None:
    """The arithmetic of one weight: q·k, ÷√d_k, the mask, the softmax of its row."""
    numbers = cell_numbers(ctx.trace, kind, layer, head, query, key)
    query, key = literal(numbers.query_token), literal(numbers.key_token)
    st.markdown(f"#### {tr('attention.cell_title', query=query, key=key)}")
    bias = numbers.position_bias
    columns = iter(st.columns(5 if bias is None else 6))
    next(columns).metric(tr("cell.dot"), f"{numbers.dot:.3f}")
    next(columns).metric(tr("cell.scale_folded") if numbers.unscaled else tr("cell.scale", d_head=numbers.d_head),
                         f"{numbers.scale:.3f}")
    if bias is not None:
        next(columns).metric(tr("cell.bias"), f"{bias:.3f}")
    next(columns).metric(tr("cell.score"), f"{numbers.score:.3f}")
    fill = numbers.mask_value
    next(columns).metric(tr("cell.mask"), "✓" if numbers.allowed else format_number(fill))
    next(columns).metric(tr("cell.weight_short"), f"{numbers.weight:.3f}")
    _, key_tokens = ctx.trace.attention_tokens(kind)
    st.caption(tr("cell.row", query=query))
    # A static table: lighter in the browser than the interactive data grid.
    st.table({tr("attention.key"): [f"{j}: {token}" for j, token in enumerate(key_tokens)],
              tr("cell.masked_score"): [format_number(v, digits=3) for v in numbers.row_masked_scores],
              tr("cell.weight"): [format_number(w, digits=4) for w in numbers.row_softmax]}, border="horizontal")


def head_scores_and_rollout(ctx: PageContext, kind: str) -> None:
    st.subheader(tr("attention.scores"))
    st.caption(tr("attention.scores_help"))
    task = get_task(ctx.view.task)
    pairs = task.alignment(ctx.trace.src_tokens, ctx.trace.tgt_tokens) if kind == "cross" else None
    st.dataframe(head_score_table(ctx.trace, kind, pairs or None, lang=lang()), hide_index=True, width="stretch")
    if kind != "cross":
        st.subheader(tr("attention.rollout"))
        st.caption(tr("attention.rollout_help"))
        chart(ctx.figure(rollout_figure, kind, min_font=figure_min_font()), key="attention_rollout")
    else:
        st.caption(tr("attention.rollout_cross"))


def trace_downloads(ctx: PageContext) -> None:
    """The whole trace as .npz (tensors, tokens, config) and its attention weights as a tidy CSV table."""
    npz, csv = st.columns(2)
    npz.download_button(tr("attention.download_npz"), data=lambda: npz_bytes(ctx.trace), file_name="trace.npz",
                        mime="application/octet-stream", on_click="ignore", icon=":material/download:")
    csv.download_button(tr("attention.download_csv"), data=lambda: ctx.trace.to_dataframe().to_csv(index=False),
                        file_name="attention.csv", mime="text/csv", on_click="ignore", icon=":material/download:")


def npz_bytes(trace) -> bytes:
    buffer = io.BytesIO()
    trace.to_npz(buffer)
    return buffer.getvalue()
