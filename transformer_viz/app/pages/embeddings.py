"""Embeddings page: token embeddings, positional encodings, their sum, and the positional variants."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.frame.presenter import figure_min_font
from transformer_viz.app.server import figure_cache
from transformer_viz.app.session import state
from transformer_viz.app.session.page import page_context
from transformer_viz.app.session.widgets import chart, lang, tr, view_widget
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
    if ctx.trace.decoder_only:  # one stream: the prompt and the answer share one embedding table
        side = view_widget(st.radio, state.SIDE, tr("embeddings.side"), ("tgt",), horizontal=True,
                           format_func=lambda _: tr("tokens.stream"))
    else:
        side = view_widget(st.radio, state.SIDE, tr("embeddings.side"), ("src", "tgt"), horizontal=True)
    if f"{side}_embed.position" not in ctx.trace:  # T5: a relative bias in the scores, no encoding to draw
        st.info(tr("embeddings.no_positions"), icon=":material/info:")
        return
    st.subheader(tr("embeddings.pipeline"))
    chart(ctx.figure(embedding_pipeline, side), key="embeddings_pipeline")

    config = ctx.trace.config
    if config.positional == "rotary":  # nothing added to the embeddings: the turn of q and k in attention
        st.subheader(tr("embeddings.rotary"))
        chart(ctx.figure(rotary_figure), key="embeddings_rotary")
        st.caption(tr("embeddings.rotary_help"))
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
        chart(variants_figure(config.max_len, config.d_model, figure_min_font(), lang()), key="embeddings_variants")


@st.cache_resource(max_entries=16, show_spinner=False)
def variants_figure(max_len: int, d_model: int, min_font: int, lang: str):
    """The encodings of every variant for a shape: the same for every run (shared, never mutated)."""
    return figure_cache.shared(positional_variants(encoding_tables(max_len, d_model), min_font=min_font, lang=lang))
