"""Is attention an explanation? For one output token, the input tokens' scores by attention, rollout, flow,
value-weighted norms, two gradient methods and leave-one-out, side by side; and the published tables. Unless a link
or the reader chose one, the output token explained is one worth explaining (analysis.attribution.telling_output)."""

from __future__ import annotations

import streamlit as st

from transformer_viz.analysis.attribution import attention_and_leave_one_out, explain, telling_output
from transformer_viz.app.server import state
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.page import PageContext, bar_vocab, choose_step, page_context
from transformer_viz.app.session.widgets import clamped_index, view_widget
from transformer_viz.app.session.words import lang, literal, tr
from transformer_viz.data.tasks import get_task
from transformer_viz.data.vocab import Vocab
from transformer_viz.figures.attribution import attribution_figure, weights_and_norms_figure
from transformer_viz.figures.papers import papers_tables


def render() -> None:
    st.title(tr("attribution.page_title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr("attribution.intro"))
    positions = explained_positions(ctx)
    if not positions:
        st.info(tr("attribution.nothing"), icon=":material/info:")
        return
    position = positions[choose_step(len(positions), "attribution.output", state.OUTPUT, state.OUTPUT_COUNT,
                                     own=lambda: positions.index(ctx.figures(telling_position, positions)) + 1) - 1]
    figures = ctx.figures(attribution_figures, position)
    result = figures["result"]
    st.markdown(tr("attribution.explaining", output=literal(result.output), position=position,
                   after=literal(ctx.trace.tgt_tokens[position])))
    chart(figures["methods"], key="attribution_methods")
    if ctx.architecture.toy:
        st.caption(tr("attribution.how", delta=f"{abs(result.ig_delta):.3f}"))
    else:
        st.info(tr("attribution.trace_only"), icon=":material/info:")

    st.subheader(tr("attribution.norms_title"))
    st.markdown(tr("attribution.norms_intro"))
    layers = sorted(figures["norms"])
    if layers:
        layer = view_widget(st.selectbox, state.LAYER, tr("attention.layer"), [n - 1 for n in layers],
                            index=clamped_index(ctx.view.layer, len(layers)))
        chart(figures["norms"][layer + 1], key="attribution_norms")
    papers_section()


def explained_positions(ctx: PageContext) -> tuple[int, ...]:
    """The decoder positions whose next token can be explained: from the last prompt token (<bos>) on, up to
    the last real token (not after <eos>, not on padding)."""
    tokens = ctx.trace.tgt_tokens
    return tuple(p for p in range(ctx.run.prompt_len - 1, len(tokens)) if tokens[p] not in (Vocab.PAD, Vocab.EOS))


def model_and_task(ctx: PageContext) -> tuple:
    """What the gradient methods and leave-one-out need, (None, None) for a trace alone: they need the toy
    model's embedding inputs."""
    return (ctx.model, get_task(ctx.view.task)) if ctx.architecture.toy else (None, None)


def telling_position(ctx: PageContext, positions: tuple[int, ...], *, lang: str) -> int:
    """The position of `positions` whose output token is worth explaining (telling_output, on the quick methods),
    chosen once per run (`lang`: the cache's key, the same choice in every language)."""
    vocab = bar_vocab(ctx).tokens
    return telling_output([attention_and_leave_one_out(ctx.trace, position, vocab, *model_and_task(ctx))
                           for position in positions]).position


def attribution_figures(ctx: PageContext, position: int, *, min_font: int, lang: str) -> dict:
    """Every method for the token predicted at `position`, computed once per run and position, and its figure."""
    result = explain(ctx.trace, position, bar_vocab(ctx).tokens, *model_and_task(ctx))
    norms = {int(method.split(".")[1]): weights_and_norms_figure(result, int(method.split(".")[1]),
                                                                 min_font=min_font, lang=lang)
             for method in result.heads if method.startswith("value_norm.")}
    return {"result": result, "methods": attribution_figure(result, min_font=min_font, lang=lang), "norms": norms}


def papers_section() -> None:
    """The published tables beside ours, as bench/bench_papers.py measured them on the shipped models."""
    st.subheader(tr("attribution.papers_title"))
    st.markdown(tr("attribution.papers_intro"))
    for title, table in papers_tables(lang()):
        st.markdown(f"**{title}**")
        st.dataframe(table, hide_index=True)
