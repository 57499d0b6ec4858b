"""Decoding page: greedy decoding replayed step by step."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.decoding import cross_attention_by_step, topk_bars
from transformer_viz.inference import next_token_probabilities
from transformer_viz.tasks import TASKS

from .context import page_context
from .ui import chart, tr

HALF_WIDTH = 400  # px: half the main column at 1280 px


def render() -> None:
    st.title(tr("decoding.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("decoding.intro"))
    if ctx.run.teacher_forced:
        st.info(tr("decoding.teacher_forced"))
        return
    steps = ctx.run.steps
    config = ctx.trace.config
    step = st.slider(tr("decoding.step"), 1, len(steps), len(steps), key="decoding_step") - 1
    layer_column, head_column = st.columns(2)
    layer = layer_column.selectbox(tr("attention.layer"), range(config.n_decoder_layers), key="decoding_layer",
                                   index=config.n_decoder_layers - 1, format_func=lambda i: str(i + 1))
    head = head_column.selectbox(tr("attention.head"), range(config.n_heads), key="decoding_head",
                                 format_func=lambda h: str(h + 1))

    trace = steps[step]
    token = ctx.run.output_tokens[step]
    st.markdown(tr("decoding.chosen", step=step + 1, prefix=" ".join(trace.tgt_tokens), token=token))
    probabilities, by_step = st.columns([2, 3], gap="large")
    with probabilities:
        st.markdown(f"**{tr('decoding.topk')}**")
        vocab = TASKS[ctx.view.task].tgt_vocab
        chart(topk_bars(next_token_probabilities(trace), vocab.tokens, k=5, chosen=vocab.index(token)),
              key="decoding_topk")
    with by_step:
        st.markdown(f"**{tr('decoding.cross')}**")
        chart(cross_attention_by_step(steps[: step + 1], layer, head, produced=ctx.run.output_tokens[: step + 1]),
              key="decoding_cross")
    self_column, cross_column = st.columns(2, gap="large")
    with self_column:
        st.markdown(f"**{tr('decoding.self')}**")
        chart(attention_heatmap(trace, "decoder_self", layer, head, width=HALF_WIDTH), key="decoding_self")
    with cross_column:
        st.markdown(f"**{tr('decoding.cross_full')}**")
        chart(attention_heatmap(trace, "cross", layer, head, width=HALF_WIDTH), key="decoding_cross_full")
