"""Inside one head: scaled dot-product attention step by step with the model's real numbers."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.common import n_layers
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.walkthrough import head_walkthrough

from .context import page_context
from .state import KINDS
from .ui import bound, chart, tr

SMALL_MODEL = {"d_model": 8, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 16,
               "weights": "random"}


def use_small_model() -> None:
    st.session_state.update(SMALL_MODEL)


def render() -> None:
    st.title(tr("head.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("head.intro"))
    st.button(tr("head.small"), on_click=use_small_model)
    kind_column, layer_column, head_column = st.columns(3)
    kind_column.selectbox(tr("attention.kind"), KINDS, format_func=lambda k: tr(f"kind.{k}"), **bound("kind"))
    kind = st.session_state["kind"]
    layers, heads = n_layers(ctx.trace, kind), ctx.trace.config.n_heads
    layer = layer_column.selectbox(tr("attention.layer"), range(layers), key="head_layer",
                                   index=min(st.session_state.get("layer", 0), layers - 1),
                                   format_func=lambda i: str(i + 1))
    head = head_column.selectbox(tr("attention.head"), range(heads), key="head_head",
                                 index=min(st.session_state.get("head", 0), heads - 1),
                                 format_func=lambda i: str(i + 1))
    walk = head_walkthrough(ctx.model, ctx.trace, kind, layer, head)

    query_column, key_column = st.columns(2)
    query = query_column.selectbox(tr("attention.query"), range(len(walk.query_tokens)), key="head_query",
                                   format_func=lambda i: f"{i}: {walk.query_tokens[i]}")
    key = key_column.selectbox(tr("attention.key"), range(len(walk.key_tokens)), key="head_key",
                               format_func=lambda i: f"{i}: {walk.key_tokens[i]}")
    for step, fig in walkthrough_figures(walk, cell=(query, key)):
        st.markdown(f"**{tr(f'head.step.{step}')}**")
        chart(fig, key=f"head_step_{step}")
        if step == "qk":
            st.markdown(f"**{tr('head.dot')}**")
            chart(dot_product_figure(walk, query, key), key="head_dot")
