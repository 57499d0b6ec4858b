"""Inside the layers: the residual stream, what each sublayer adds, the FFN's activations, the logit lens."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.page import page_context
from transformer_viz.app.session.widgets import clamped_index, view_widget
from transformer_viz.app.session.words import tr
from transformer_viz.figures.layers import ffn_figure, logit_lens_figure, residual_figure
from transformer_viz.i18n import particular


def render() -> None:
    st.title(tr("layers.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("layers.intro"))
    stacks = ctx.trace.form.stacks  # GPT's form: no encoder
    stack = view_widget(st.radio, state.STACK, tr("layers.stack"), stacks, horizontal=True)
    st.subheader(tr("layers.residual"))
    st.caption(tr("layers.residual_help"))
    chart(ctx.figure(residual_figure, stack), key="layers_residual")

    st.subheader(tr("layers.ffn"))
    config = ctx.trace.config
    if getattr(config, "attention_only", False):
        st.info(tr("layers.attention_only"), icon=":material/info:")
    else:
        layers = range(ctx.trace.stack_layers(stack))
        layer = view_widget(st.selectbox, state.LAYER, tr("attention.layer"), layers,
                            index=clamped_index(ctx.view.layer, len(layers)))
        # GPT-2's GELU or the Llama layout's gated product
        st.caption(tr(particular("layers.ffn_help", ctx.architecture.words), d_ff=config.d_ff))
        chart(ctx.figure(ffn_figure, stack, layer), key="layers_ffn")

    st.subheader(tr("layers.lens"))
    st.caption(tr("layers.lens_help"))
    chart(ctx.figures(lens_figure), key="layers_lens")


def lens_figure(ctx, *, min_font: int, lang: str):
    """The logit lens of this run through its model's own readout, computed and drawn once per run (a Hugging
    Face model's readout is its whole vocabulary for every layer and position)."""
    architecture = ctx.architecture
    lens = architecture.logit_lens(ctx.model, ctx.trace, architecture.tasks().get(ctx.view.task))
    return logit_lens_figure(lens, min_font=min_font, lang=lang)
