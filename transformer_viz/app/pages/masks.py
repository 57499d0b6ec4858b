"""Masks page: padding, look-ahead and their combination, and what masking does to one head's scores."""

from __future__ import annotations

import streamlit as st

from transformer_viz.app.server import state
from transformer_viz.app.server.state import View
from transformer_viz.app.session.charts import MAIN_WIDTH, MAX_MAIN_WIDTH, chart, figure_min_font
from transformer_viz.app.session.page import attention_selectors, page_context
from transformer_viz.app.session.widgets import view_widget
from transformer_viz.app.session.words import tr
from transformer_viz.figures.masks import MASK_PX, mask_figures, masking_steps
from transformer_viz.figures.numbers import format_number

MAX_PAD = 32
PAD = "<pad>"  # how every tokenizer here shows its padding token
def render() -> None:
    st.title(tr("masks.title"))
    st.markdown(tr("masks.intro"))
    pad_to = view_widget(st.slider, state.PAD, tr("masks.pad_to"), 0, MAX_PAD, value=View.pad,
                         help=tr("masks.pad_help"))
    ctx = page_context(pad_to=pad_to, teacher_forced=True)
    if ctx is None:
        return
    tokens = [tokens for tokens in (ctx.trace.src_tokens, ctx.trace.tgt_tokens) if tokens is not None]
    if pad_to and not any(PAD in side for side in tokens):  # a length the input already reaches: nothing to fill
        st.info(tr("masks.no_padding", pad=pad_to, n=max(map(len, tokens))), icon=":material/info:")
    figures = ctx.figure(mask_figures, width=MASK_PX, min_font=figure_min_font())
    columns = st.columns(len(figures))
    for column, (title, fig) in zip(columns, figures.items(), strict=True):
        with column:
            chart(fig, key=f"mask_{title}")

    st.subheader(tr("masks.steps"))
    st.caption(tr("masks.steps_help", value=format_number(ctx.trace.config.mask_value)))
    kind, layer, head = attention_selectors(ctx.trace, *st.columns([2, 1, 1]), kind_field=state.MASK_KIND)  # long kinds
    chart(ctx.figure(masking_steps, kind, layer, head, width=MAIN_WIDTH, max_width=MAX_MAIN_WIDTH,
                     min_font=figure_min_font()), key="masks_steps")
