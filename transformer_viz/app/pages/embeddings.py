"""Embeddings page: token embeddings, positional encodings, their sum, and the positional variants."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import figure_cache, state
from transformer_viz.app.server.limits import limits
from transformer_viz.app.session.charts import chart, figure_min_font
from transformer_viz.app.session.page import page_context
from transformer_viz.app.session.widgets import view_widget
from transformer_viz.app.session.words import lang, tr
from transformer_viz.figures.embeddings import (
    embedding_pipeline,
    positional_variants,
    rotary_figure,
    trace_curves,
    trace_similarity,
)
from transformer_viz.model import encoding_tables

# What the curves show depends on the encoding: waves, a learned table, or nothing at all.
CURVES_HELP = {"learned": "embeddings.curves_help_learned", "none": "embeddings.curves_help_none"}


def render() -> None:
    st.title(tr("embeddings.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("embeddings.intro"))
    form = ctx.trace.form  # one stream: the prompt and the answer share one embedding table
    side = view_widget(st.radio, state.SIDE, tr("embeddings.side"), form.sides, horizontal=True,
                       format_func=lambda side: tr(form.side_labels[side]))
    config = ctx.trace.config
    recorded = f"{side}_embed.position" in ctx.trace  # not by T5 (a bias in the scores) nor the Llama layout (RoPE)
    if not recorded and config.positional != "rotary":
        st.info(tr("embeddings.no_positions"), icon=":material/info:")
        return
    if recorded:
        st.subheader(tr("embeddings.pipeline"))
        chart(ctx.figure(embedding_pipeline, side), key="embeddings_pipeline")
    if config.positional == "rotary":  # nothing added to the embeddings: the turn of q and k in attention
        rotary(ctx)
        return
    curves, similarity = st.columns(2, gap="large")
    with curves:
        st.subheader(tr("embeddings.curves"))
        if state.DIMS in st.session_state:  # a narrower model since: keep the dimensions it has
            st.session_state[state.DIMS] = [d for d in st.session_state[state.DIMS] if d < config.d_model]
        telling = sorted({0, 1, config.d_model // 2, config.d_model - 1})  # fast and slow waves
        dims = view_widget(st.multiselect, state.DIMS, tr("embeddings.dims"), range(config.d_model), default=telling)
        chart(ctx.figure(trace_curves, side, tuple(dims)), key="embeddings_curves")
        st.caption(tr(CURVES_HELP.get(config.positional, "embeddings.curves_help")))
    with similarity:
        st.subheader(tr("embeddings.similarity"))
        chart(ctx.figure(trace_similarity, side), key="embeddings_similarity")
        st.caption(tr("embeddings.similarity_help"))

    st.subheader(tr("embeddings.variants"))
    st.caption(tr("embeddings.variants_help"))
    if config.d_model % 2 == 0:
        length = min(config.max_len, limits().input_tokens)  # GPT-2 reads 1,024 positions: draw what an input has
        chart(variants_figure(length, config.d_model, figure_min_font(), lang()), key="embeddings_variants")


def rotary(ctx) -> None:
    """The angle of each position and pair: drawn for a toy model, and for a Hugging Face one whose own angles are
    the ones drawn (else said, not drawn)."""
    st.subheader(tr("embeddings.rotary"))
    if not ctx.architecture.turns_as_drawn(ctx.model):
        st.info(tr("embeddings.rotary_other"), icon=":material/info:")
        return
    chart(ctx.figure(rotary_figure), key="embeddings_rotary")
    own = "" if ctx.architecture.toy else " " + tr("embeddings.rotary_hf")  # Hugging Face's angles, checked
    st.caption(tr("embeddings.rotary_help") + own)


@st.cache_resource(max_entries=16, show_spinner=False)
def variants_figure(max_len: int, d_model: int, min_font: int, lang: str):
    """The encodings of every variant for a shape: the same for every run (shared, never mutated)."""
    return figure_cache.shared(positional_variants(encoding_tables(max_len, d_model), min_font=min_font, lang=lang))
