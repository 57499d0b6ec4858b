"""Masks page: padding, look-ahead and their combination, and what masking does to one head's scores."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.attention import mask_figures, masking_steps
from transformer_viz.figures.common import fill_text

from .context import page_context
from .state import KINDS
from .ui import bound, chart, tr


def render() -> None:
    st.title(tr("masks.title"))
    st.markdown(tr("masks.intro"))
    pad_to = st.slider(tr("masks.pad_to"), 0, 32, 0, key="masks_pad_to", help=tr("masks.pad_help"))
    ctx = page_context(pad_to=pad_to)
    if ctx is None:
        return
    figures = ctx.figure(mask_figures)
    columns = st.columns(len(figures))
    for column, (title, fig) in zip(columns, figures.items(), strict=True):
        with column:
            chart(fig, key=f"mask_{title}")

    st.subheader(tr("masks.steps"))
    fill = ctx.trace.config.mask_value
    st.caption(tr("masks.steps_help", value=fill_text(fill)))
    kind_column, layer_column, head_column = st.columns(3)
    kind_column.selectbox(tr("attention.kind"), KINDS, format_func=lambda k: tr(f"kind.{k}"), **bound("kind"))
    kind = st.session_state["kind"]
    layers = ctx.trace.config.n_encoder_layers if kind == "encoder_self" else ctx.trace.config.n_decoder_layers
    layer = min(st.session_state.get("layer", 0), layers - 1)
    head = min(st.session_state.get("head", 0), ctx.trace.config.n_heads - 1)
    layer = layer_column.selectbox(tr("attention.layer"), range(layers), index=layer, key="masks_layer",
                                   format_func=lambda i: str(i + 1))
    head = head_column.selectbox(tr("attention.head"), range(ctx.trace.config.n_heads), index=head,
                                 key="masks_head", format_func=lambda i: str(i + 1))
    chart(ctx.figure(masking_steps, kind, layer, head), key="masks_steps")
