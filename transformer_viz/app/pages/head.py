"""Inside one head: scaled dot-product attention step by step with the model's real numbers."""

from __future__ import annotations

import streamlit as st

from transformer_viz.analysis.source import head_step_code
from transformer_viz.app.frame.code import show_code
from transformer_viz.app.server import state
from transformer_viz.app.session.charts import chart
from transformer_viz.app.session.page import PageContext, attention_selectors, cell_selectors, page_context
from transformer_viz.app.session.widgets import lazy_expander
from transformer_viz.app.session.words import error_text, tr
from transformer_viz.figures.head import dot_product_figure, step_keys, walkthrough_figures
from transformer_viz.i18n import particular

SMALL_MODEL = {state.D_MODEL: 8, state.N_HEADS: 2, state.N_ENCODER_LAYERS: 1, state.N_DECODER_LAYERS: 1,
               state.D_FF: 16, state.WEIGHTS: "random"}

READABLE_WIDTH = 16  # d_model up to which every matrix of the walkthrough is drawn open
WIDE_STEPS = ("x", "projections", "concat", "output")  # the steps with a d_model-wide matrix


def use_small_model() -> None:
    st.session_state.update(SMALL_MODEL)


def render() -> None:
    st.title(tr("head.title"))
    ctx = page_context()
    if ctx is None:
        return
    st.markdown(tr(particular("head.intro", ctx.architecture.words)))
    if ctx.architecture.toy:  # a small model of the same form: every number fits on screen
        st.button(tr("head.small"), on_click=use_small_model)
    kind, layer, head = attention_selectors(ctx.trace, *st.columns(3))
    if shared := shared_key_value_head(ctx.trace.config, head):
        st.caption(shared)
    try:
        walk = walkthrough(ctx, kind, layer, head)
    except ValueError as error:  # a trace that is not this model's (TraceMismatchError)
        st.info(error_text(error), icon=":material/info:")
        return

    query, key = cell_selectors(walk.query_tokens, walk.key_tokens, *st.columns(2))
    wide = walk.d_model > READABLE_WIDTH  # then the d_model-wide steps open folded: rows of a few pixels
    folded = [step for step in step_keys(walk) if wide and step in WIDE_STEPS]  # built only once opened
    figures, dot = ctx.figures(head_figures, kind, layer, head, (query, key),
                               tuple(step for step in step_keys(walk) if step not in folded))
    for step in step_keys(walk):
        if step in folded:  # drawn only once opened (Streamlit's lazy expander): four charts less
            label = tr("head.wide", step=tr(f"head.step.{step}"), d_model=walk.d_model)
            with (expander := lazy_expander(st, label, state.HEAD_OPEN.format(step))):
                if expander.open:  # these steps do not depend on the chosen cell
                    opened, _ = ctx.figures(head_figures, kind, layer, head, None, (step,))
                    chart(opened[step], key=f"head_step_{step}")
        else:
            st.markdown(f"**{tr(step_text(walk, step))}**")
            chart(figures[step], key=f"head_step_{step}")
        if ctx.architecture.toy:  # the toy model's own code; a Hugging Face model runs its library's
            show_code([head_step_code(step, ctx.trace.config.norm_first)])
        if step == "qk":
            st.markdown(f"**{tr('head.dot')}**")
            chart(dot, key="head_dot")


def step_text(walk, step: str) -> str:
    """The catalog key explaining a step: T5 scales and biases its scores its own way."""
    t5_scores = step == "scale" and (walk.position_bias is not None or walk.unscaled)
    return "head.step.scale_t5" if t5_scores else f"head.step.{step}"


def shared_key_value_head(config, head: int) -> str:
    """Under grouped-query attention, which key/value head query head `head` reads and who shares it; else ""."""
    shared = getattr(config, "kv_head_of_query_head", ())
    if len(set(shared)) == len(shared):  # every query head has its own (the toy models, GPT-2)
        return ""
    group = [other + 1 for other, kv in enumerate(shared) if kv == shared[head]]
    return tr("head.shared_kv", head=head + 1, kv=shared[head] + 1, heads=f"{group[0]}–{group[-1]}")


def walkthrough(ctx: PageContext, kind: str, layer: int, head: int):
    """One head step by step, for a toy model or a Hugging Face one."""
    return ctx.architecture.head_walkthrough(ctx.model, ctx.trace, kind, layer, head)


def head_figures(ctx: PageContext, kind: str, layer: int, head: int, cell: tuple[int, int] | None,
                 steps: tuple[str, ...], *, min_font: int, lang: str):
    """The walkthrough's `steps` as {step: figure}, and the dot product of `cell` (None without a cell), built
    once per run and view; no text under `min_font`."""
    walk = walkthrough(ctx, kind, layer, head)
    figures = dict(walkthrough_figures(walk, cell=cell, steps=steps, min_font=min_font, lang=lang))
    return figures, None if cell is None else dot_product_figure(walk, *cell, min_font=min_font, lang=lang)

