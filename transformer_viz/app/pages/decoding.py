"""Decoding page: decoding replayed step by step, greedy or sampled (temperature, top-k, top-p, seed)."""

from __future__ import annotations

import streamlit as st

from transformer_viz.analysis.inference import next_token_distributions, next_token_probabilities
from transformer_viz.app.server import state
from transformer_viz.app.server.state import SAMPLING_RANGES, View
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.page import PageContext, bar_vocab, choose_step, layer_and_head, page_context
from transformer_viz.app.session.widgets import view_widget
from transformer_viz.app.session.words import literal, tr
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.decoding import attention_by_step, sampling_bars, topk_bars
from transformer_viz.i18n import particular

HALF_WIDTH = 355  # px: half of MAIN_WIDTH, less the gap


def render() -> None:
    st.title(tr("decoding.title"))
    ctx = page_context()
    if ctx is None:
        return
    sampled = ctx.run.sampling is not None  # what every sentence says follows: greedy (the most likely) or drawn
    words = ctx.architecture.words
    st.markdown(tr(particular("decoding.intro_sampled", words) if sampled else particular("decoding.intro", words)))
    if ctx.run.teacher_forced:
        st.info(tr("decoding.teacher_forced"))
        return
    sampling_controls(ctx.view.source == "hf")
    step = choose_step(ctx.run.n_steps) - 1
    kind = ctx.trace.form.aligning_kind  # where each step looks back
    layer, head = layer_and_head(ctx.trace, kind, *st.columns(2))

    token = ctx.run.output_tokens[step]
    prefix = ctx.run.step(step).tgt_tokens  # what the decoder read
    st.markdown(tr("decoding.drawn" if sampled else "decoding.chosen", step=step + 1,
                   prefix=literal(" ".join(prefix)), token=literal(token)))
    figures = ctx.figures(decoding_figures, step, layer, head)
    probabilities, by_step = st.columns([2, 3], gap="large")
    with probabilities:
        st.markdown(f"**{tr('decoding.before_after' if sampled else 'decoding.topk')}**")
        chart(figures["topk"], key="decoding_sampling" if sampled else "decoding_topk")
    with by_step:
        st.markdown(f"**{tr('decoding.looks_back' if kind == 'decoder_self' else 'decoding.cross')}**")
        chart(figures["by_step"], key="decoding_cross")
    self_column, cross_column = st.columns(2, gap="large")
    with self_column:
        st.markdown(f"**{tr('decoding.self')}**")
        chart(figures["self"], key="decoding_self")
    with cross_column:
        if "cross" in figures:
            st.markdown(f"**{tr('decoding.cross_full')}**")
            chart(figures["cross"], key="decoding_cross_full")
        else:  # one stream: the prompt is read by the same masked self-attention
            st.info(tr("decoding.no_cross"), icon=":material/info:")


def sampling_controls(hugging_face: bool) -> None:
    """The sampling row: temperature (0: greedy), top-k, top-p and the draws' seed, one view field each, and a
    sentence on what each does. The run of the view decodes with them (models.run)."""
    st.markdown(f"**{tr('decoding.sampling')}**")
    if hugging_face:
        st.caption(tr("decoding.sampling_hf"))
        return
    columns = st.columns(4)
    temperature = view_widget(columns[0].slider, state.TEMPERATURE, tr("decoding.temperature"),
                              *SAMPLING_RANGES[state.TEMPERATURE], value=View.temperature, step=0.1, format="%.1f")
    greedy = temperature == 0  # the other settings wait, shown, until a temperature is chosen
    view_widget(columns[1].slider, state.TOP_K, tr("decoding.top_k"), *SAMPLING_RANGES[state.TOP_K],
                value=View.top_k, disabled=greedy)
    view_widget(columns[2].slider, state.TOP_P, tr("decoding.top_p"), *SAMPLING_RANGES[state.TOP_P],
                value=View.top_p, step=0.05, format="%.2f", disabled=greedy)
    view_widget(columns[3].slider, state.SAMPLE_SEED, tr("decoding.sample_seed"), *SAMPLING_RANGES[state.SAMPLE_SEED],
                value=View.sample_seed, disabled=greedy)
    st.caption(tr("decoding.sampling_about"))


def decoding_figures(ctx: PageContext, step: int, layer: int, head: int, *, min_font: int, lang: str) -> dict:
    """The figures of decoding step `step` (from 0), built once per run and view: "topk" is the next-token
    distribution (greedy), or the distributions before and after sampling's reshaping. No text under `min_font`."""
    trace, token = ctx.run.step(step), ctx.run.output_tokens[step]
    kind, vocab = trace.form.aligning_kind, bar_vocab(ctx)
    steps = [ctx.run.step(k) for k in range(step + 1)]
    if ctx.run.sampling is None:
        bars = topk_bars(next_token_probabilities(trace), vocab.tokens, k=5, chosen=vocab.index(token),
                         min_font=min_font, lang=lang)
    else:
        before, after = next_token_distributions(trace, ctx.run.sampling)
        bars = sampling_bars(before, after, vocab.tokens, chosen=vocab.index(token), k=6, min_font=min_font,
                             lang=lang)
    figures = {"topk": bars,
               "by_step": attention_by_step(steps, layer, head, produced=ctx.run.output_tokens[: step + 1],
                                            kind=kind, min_font=min_font, lang=lang),
               "self": attention_heatmap(trace, "decoder_self", layer, head, width=HALF_WIDTH, min_font=min_font,
                                         lang=lang)}
    if kind == "cross":
        figures["cross"] = attention_heatmap(trace, "cross", layer, head, width=HALF_WIDTH, min_font=min_font,
                                             lang=lang)
    return figures
