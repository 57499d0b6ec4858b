"""Embeddings page: token embeddings, positional encodings, their sum, and the positional variants."""

from __future__ import annotations

import streamlit as st

from transformer_viz.figures.common import as_numpy
from transformer_viz.figures.embeddings import (
    embedding_pipeline,
    position_similarity,
    positional_curves,
    positional_variants,
)
from transformer_viz.model import encoding_tables

from . import state
from .context import page_context
from .ui import chart, lang, tr, view_widget

# What the curves show depends on the encoding: waves, a learned table, or nothing at all.
CURVES_HELP = {"learned": "embeddings.curves_help_learned", "none": "embeddings.curves_help_none"}


def render() -> None:
    st.title(tr("embeddings.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("embeddings.intro"))
    side = view_widget(st.radio, state.SIDE, tr("embeddings.side"), ("src", "tgt"), horizontal=True)
    st.subheader(tr("embeddings.pipeline"))
    chart(ctx.figure(embedding_pipeline, side), key="embeddings_pipeline")

    config = ctx.trace.config
    encoding = as_numpy(ctx.trace[f"{side}_embed.position"])  # (seq_len, d_model)
    tokens = ctx.trace.src_tokens if side == "src" else ctx.trace.tgt_tokens
    curves, similarity = st.columns(2, gap="large")
    with curves:
        st.subheader(tr("embeddings.curves"))
        if state.DIMS in st.session_state:  # a narrower model since: keep the dimensions it has
            st.session_state[state.DIMS] = [d for d in st.session_state[state.DIMS] if d < config.d_model]
        telling = sorted({0, 1, config.d_model // 2, config.d_model - 1})  # fast and slow waves
        dims = view_widget(st.multiselect, state.DIMS, tr("embeddings.dims"), range(config.d_model), default=telling)
        chart(positional_curves(encoding, dims, tokens, positional=config.positional, lang=lang()),
              key="embeddings_curves")
        st.caption(tr(CURVES_HELP.get(config.positional, "embeddings.curves_help")))
    with similarity:
        st.subheader(tr("embeddings.similarity"))
        chart(position_similarity(encoding, tokens, positional=config.positional, lang=lang()),
              key="embeddings_similarity")
        st.caption(tr("embeddings.similarity_help"))

    st.subheader(tr("embeddings.variants"))
    st.caption(tr("embeddings.variants_help"))
    if config.d_model % 2 == 0:
        chart(positional_variants(encoding_tables(config.max_len, config.d_model), lang=lang()),
              key="embeddings_variants")
