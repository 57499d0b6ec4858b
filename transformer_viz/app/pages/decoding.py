"""Decoding page: greedy decoding replayed step by step."""

from __future__ import annotations

import streamlit as st

from transformer_viz.analysis.inference import next_token_probabilities
from transformer_viz.app.session import state
from transformer_viz.app.session.page import PageContext, layer_and_head, page_context
from transformer_viz.app.session.state import View
from transformer_viz.app.session.widgets import chart, literal, tr, view_widget
from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.decoding import cross_attention_by_step, topk_bars

HALF_WIDTH = 355  # px: half of MAIN_WIDTH, less the gap


def render() -> None:
    st.title(tr("decoding.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("decoding.intro"))
    if ctx.run.teacher_forced:
        st.info(tr("decoding.teacher_forced"))
        return
    step = choose_step(ctx.run.n_steps) - 1
    layer, head = layer_and_head(ctx.trace, "cross", *st.columns(2))

    token = ctx.run.output_tokens[step]
    prefix = ctx.run.step(step).tgt_tokens  # what the decoder read
    st.markdown(tr("decoding.chosen", step=step + 1, prefix=literal(" ".join(prefix)), token=literal(token)))
    figures = ctx.figures(decoding_figures, step, layer, head)
    probabilities, by_step = st.columns([2, 3], gap="large")
    with probabilities:
        st.markdown(f"**{tr('decoding.topk')}**")
        chart(figures["topk"], key="decoding_topk")
    with by_step:
        st.markdown(f"**{tr('decoding.cross')}**")
        chart(figures["by_step"], key="decoding_cross")
    self_column, cross_column = st.columns(2, gap="large")
    with self_column:
        st.markdown(f"**{tr('decoding.self')}**")
        chart(figures["self"], key="decoding_self")
    with cross_column:
        st.markdown(f"**{tr('decoding.cross_full')}**")
        chart(figures["cross"], key="decoding_cross_full")


def decoding_figures(ctx: PageContext, step: int, layer: int, head: int, *, lang: str) -> dict:
    """The figures of greedy step `step` (from 0), built once per run and view."""
    trace, token = ctx.run.step(step), ctx.run.output_tokens[step]
    vocab = TASKS[ctx.view.task].tgt_vocab
    steps = [ctx.run.step(k) for k in range(step + 1)]
    return {"topk": topk_bars(next_token_probabilities(trace), vocab.tokens, k=5, chosen=vocab.index(token), lang=lang),
            "by_step": cross_attention_by_step(steps, layer, head, produced=ctx.run.output_tokens[: step + 1],
                                               lang=lang),
            "self": attention_heatmap(trace, "decoder_self", layer, head, width=HALF_WIDTH, lang=lang),
            "cross": attention_heatmap(trace, "cross", layer, head, width=HALF_WIDTH, lang=lang)}


def choose_step(count: int) -> int:
    """The step shown, from 1 to `count` (the last unless chosen). One step needs no slider."""
    if count == 1:
        st.caption(tr("decoding.one_step"))
        return 1
    shown = st.session_state.get(state.STEP, View.step)
    if not 1 <= shown <= count:  # 0 (the view's default) or beyond a shorter output: the last step
        st.session_state[state.STEP] = count
    elif st.session_state.get(state.STEP_COUNT) != count:
        # A new count makes a new slider, which would take the value code set last (the lesson's 0), not the
        # shown one. Written only then: a written value is sent to the browser and would undo a key press.
        st.session_state[state.STEP] = shown
    st.session_state[state.STEP_COUNT] = count
    return view_widget(st.slider, state.STEP, tr("decoding.step"), 1, count, value=count)
