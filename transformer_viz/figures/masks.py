"""Mask figures (paper section 3.2.3): padding and look-ahead masks, and what masking does to one head.

Masks are boolean (q_len, k_len) arrays with True = "this query may attend to this
key" (the model's convention). A blocked score is replaced by the config's
`mask_value` (e.g. -1e9) before the softmax, which turns it into a weight of 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.attention_arrays import as_numpy, attention_arrays, check_choice, mask_value
from transformer_viz.figures.colours import BLOCKED_GREY, DIVERGING, MASK_COLOURS, SEQUENTIAL
from transformer_viz.figures.fit import (
    FLAT_FONT_PX,
    GAP_PX,
    LINE_EM,
    LINE_SPACING,
    MIN_FONT_PX,
    TEXT_MIN_WIDTH,
    Ticks,
    at_least,
    cell_text,
    text_em,
    tick_labels,
    tick_plan,
    widest_em,
    wrapped,
)
from transformer_viz.figures.look import merge_into, styled_figure
from transformer_viz.figures.numbers import format_number, format_numbers, symmetric_limit
from transformer_viz.figures.subplots import subplot_axes, subplot_row
from transformer_viz.figures.token_axes import cell_label, escape_text, token_axis, token_texts
from transformer_viz.i18n import text

STEPS_PX, STEPS_RIGHT_PX = 1100, 70  # the width the three masking panels are laid out for; their colour bar
STEPS_SPACING = 0.09  # between two masking panels, of the plot's width
STEPS_PANEL = (1 - 2 * STEPS_SPACING) / 3  # one masking panel, of the plot's width
SUBTITLE_PX = 13
BLOCKED_TEXT = "#3b3b3b"

MASK_PX = 180  # the width of one mask figure: a quarter of the narrowest main column, less the gaps
PAD_TEXT = escape_text("<pad>")


def padding_edge(texts: Sequence[str]) -> tuple[int, ...]:
    """The labels a thinned mask axis keeps: the last token before the padding (<eos>) and the first <pad>, or
    the last token when there is no padding. A padding mask is about where the padding starts."""
    if PAD_TEXT not in texts:
        return (len(texts) - 1,)
    first_pad = list(texts).index(PAD_TEXT)
    return (first_pad - 1, first_pad) if first_pad else (first_pad,)


def blocked_layer(mask: np.ndarray, text: str, show_text: bool, font_size: int, **position) -> go.Heatmap:
    """A grey heatmap over the blocked cells of mask (q_len, k_len) (True = may attend), optionally labelled."""
    blocked = ~mask
    return go.Heatmap(
        z=np.where(blocked, 1.0, np.nan).astype(np.float32), colorscale=[[0, BLOCKED_GREY], [1, BLOCKED_GREY]],
        showscale=False, hoverinfo="skip", name="blocked",
        text=np.where(blocked, text, "").tolist() if show_text else None,
        texttemplate="%{text}" if show_text else None, textfont=dict(size=font_size, color=BLOCKED_TEXT), **position,
    )


def mask_heatmap(mask, query_tokens: Sequence[str] | None, key_tokens: Sequence[str] | None,
                 title: str, width: int = MASK_PX, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """A boolean mask (q_len, k_len), True = may attend, in MASK_COLOURS with a "may attend" / "blocked" legend.

    `width` is the narrowest it is drawn at (four side by side on a page); labels and title fit it, no text
    under `min_font`.
    """
    return _mask_heatmap(mask, query_tokens, key_tokens, title, width, min_font=min_font, lang=lang)


def _mask_heatmap(mask, query_tokens: Sequence[str] | None, key_tokens: Sequence[str] | None,
                  title: str, width: int = MASK_PX, subtitle: str | None = None, *, min_font: int = MIN_FONT_PX,
                  lang: str = "en") -> go.Figure:
    """`mask_heatmap` with a subtitle under the title (broken into more lines where it is wider than `width`)."""
    mask = np.asarray(as_numpy(mask), bool)
    q_len, k_len = mask.shape
    q_text, k_text = token_texts(query_tokens, q_len), token_texts(key_tokens, k_len)
    blocked_colour, allowed_colour = MASK_COLOURS[0][1], MASK_COLOURS[-1][1]
    allowed, blocked = text("may_attend", lang), text("blocked", lang)
    hover = [[f"{cell_label(i, q_text[i], j, k_text[j], lang)}<br><b>{allowed if mask[i, j] else blocked}</b>"
              for j in range(k_len)] for i in range(q_len)]
    gap = 1 if max(q_len, k_len) <= 24 else 0
    traces = [go.Heatmap(
        z=mask.astype(np.int8), x=np.arange(k_len), y=np.arange(q_len), zmin=0, zmax=1, showscale=False,
        colorscale=[[0.0, blocked_colour], [0.5, blocked_colour], [0.5, allowed_colour], [1.0, allowed_colour]],
        xgap=gap, ygap=gap, hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", name=title,
    )]
    for name, colour in ((allowed, allowed_colour), (blocked, blocked_colour)):
        traces.append(go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                                 marker=dict(symbol="square", size=14, color=colour)))
    cell = float(np.clip(300 / max(q_len, k_len), 10, 36))  # px per row
    label_font, subtitle_font = at_least(FLAT_FONT_PX, min_font), at_least(SUBTITLE_PX, min_font)
    left = widest_em(q_text) * label_font + GAP_PX + 10
    keys = tick_plan(k_text, (width - left - 10) / k_len, "x", largest=label_font, min_font=min_font)
    queries = tick_plan(q_text, cell, "y", largest=label_font, min_font=min_font)
    title_font = int(np.clip((width - 10) // text_em(title), at_least(13, min_font), at_least(17, min_font)))
    subtitle = wrapped(subtitle, width - 10, subtitle_font) if subtitle else subtitle
    # The title, room for a subtitle of two lines or more (mask_figures), then the key labels.
    lines = max(2, subtitle.count("<br>") + 1 if subtitle else 0)
    top = round(14 + LINE_EM * title_font + (LINE_EM + LINE_SPACING * (lines - 1)) * subtitle_font + 12 + keys.depth)
    then = dict(plot_bgcolor="#ffffff", margin=dict(t=top, b=40), title=dict(font=dict(size=title_font)),
                legend=dict(orientation="h", x=0, y=-0.02, yanchor="top", font=dict(size=at_least(14, min_font))),
                xaxis=merge_into(dict(**token_axis(key_tokens, k_len), side="top", fixedrange=True),
                                 tick_labels(range(k_len), k_text, keys, keep=padding_edge(k_text))),
                yaxis=merge_into(dict(**token_axis(query_tokens, q_len, reverse=True), fixedrange=True),
                                 tick_labels(range(q_len), q_text, queries, keep=padding_edge(q_text))))
    if subtitle is not None:
        then["title"]["subtitle"] = dict(text=subtitle, font=dict(size=subtitle_font))
    return styled_figure(traces, {}, title, height=round(cell * q_len) + top + 70, then=then, min_font=min_font)


def mask_figures(trace, width: int = MASK_PX, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> dict[str, go.Figure]:
    """The four masks of this run, read from the recorded masks of layer 1, each laid out for `width` px (no text
    under `min_font`).

    "source_padding" (src_len, src_len) as the encoder applies it; "target_padding" (tgt_len, tgt_len);
    "look_ahead" (tgt_len, tgt_len), the lower triangle; "decoder_self", the decoder's
    look-ahead AND target padding. A decoder-only model has no source: its three masks are its one stream's.
    """
    src, tgt = trace.src_tokens, trace.tgt_tokens
    combined = attention_arrays(trace, "decoder_self", 0).mask  # (tgt_len, tgt_len)
    # The last query may look at every earlier position, so its row is exactly the target padding.
    target = np.broadcast_to(combined[-1], combined.shape)  # (tgt_len, tgt_len)
    look_ahead = np.tril(np.ones_like(combined))  # (tgt_len, tgt_len)
    masks = {"target_padding": (target, tgt, tgt), "look_ahead": (look_ahead, tgt, tgt),
             "decoder_self": (combined, tgt, tgt)}
    if trace.form.has_kind("encoder_self"):
        source = attention_arrays(trace, "encoder_self", 0).mask  # (src_len, src_len)
        masks = {"source_padding": (source, src, src), **masks}
    # Short lines under the titles: the app shows the four side by side in narrow columns.
    return {key: _mask_heatmap(*arrays, text(f"masks.{key}", lang), width, text(f"masks.{key}.subtitle", lang),
                               min_font=min_font, lang=lang)
            for key, arrays in masks.items()}


def masking_steps(trace, kind: str, layer: int, head: int, width: int = STEPS_PX, max_width: int | None = None,
                  *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Three panels for one head: scaled scores -> masked scores (blocked = the fill) -> softmax weights.

    Panels 1 and 2 share one colour range symmetric about 0 from the scaled scores, so a cell
    keeps its colour until the mask greys it; panel 3 uses the fixed 0-1 weight range.
    `width` is the narrowest it is drawn at, `max_width` the widest (default: `width`): cells write their
    values when they fit at a readable font at `width`, or only from a wider figure on (up to `max_width`;
    layout.meta[TEXT_MIN_WIDTH] says from which width, and the app hides them below it). No text under `min_font`.
    """
    check_choice(kind)
    weight, score, masked, mask = attention_arrays(trace, kind, layer).head(head)  # (q_len, k_len) each
    q_len, k_len = weight.shape
    fill = format_number(mask_value(trace))
    limit = symmetric_limit(score[np.isfinite(score)])
    q_tokens, k_tokens = trace.attention_tokens(kind)
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    cell = float(np.clip(300 / max(q_len, k_len), 10, 44))  # px per row
    label_font = at_least(FLAT_FONT_PX, min_font)
    fixed_px = widest_em(q_text) * label_font + GAP_PX + STEPS_RIGHT_PX  # beside the panels
    cell_width = (width - fixed_px) * STEPS_PANEL / k_len

    texts = [format_numbers(z, 2 if col == 3 else 1)
             for col, z in enumerate((score, masked, weight), start=1)]  # (q_len, k_len) each
    blocked_texts = {2: fill, 3: "0"}
    for col in blocked_texts:
        texts[col - 1][~mask] = ""  # the grey layer writes these
    numbers = cell_text([t for panel_texts in texts for t in panel_texts.ravel()] + list(blocked_texts.values()),
                        cell, width, max_width or width, fixed_px, STEPS_PANEL / k_len, min_font)
    score_hover, masked_hover, weight_hover = _step_hovers(score, weight, mask, q_text, k_text, fill, lang)
    panels = ((score, -limit, limit, DIVERGING, score_hover), (masked, -limit, limit, DIVERGING, masked_hover),
              (weight, 0.0, 1.0, SEQUENTIAL, weight_hover))
    traces = _step_traces(panels, texts, mask, blocked_texts, numbers.font, lang)

    title = text("steps.title", lang, kind=text(f"kind.{kind}", lang),
                 where=text("layer_head", lang, layer=layer + 1, head=head + 1))
    keys = tick_plan(k_text, cell_width, "x", label_font, min_font)
    queries = tick_plan(q_text, cell, "y", label_font, min_font)
    then = dict(plot_bgcolor="#ffffff", margin=dict(t=100, b=20))
    if numbers.font is not None and numbers.min_width:
        then["meta"] = {TEXT_MIN_WIDTH: numbers.min_width}
    then.update(_step_axes(q_tokens, k_tokens, q_text, k_text, queries, keys))
    return styled_figure(traces, _step_titles(width, fill, min_font, lang), title,
                         height=round(cell * q_len) + 110 + round(keys.depth), then=then, min_font=min_font)


def _step_hovers(score: np.ndarray, weight: np.ndarray, mask: np.ndarray, q_text: list[str], k_text: list[str],
                 fill: str, lang: str) -> list[list[list[str]]]:
    """Each panel's hover (q_len, k_len): the cell, then its score, masked score or weight and what the mask did."""
    q_len, k_len = mask.shape
    labels = [[cell_label(i, q_text[i], j, k_text[j], lang) for j in range(k_len)] for i in range(q_len)]

    def hover(describe) -> list[list[str]]:
        return [[f"<b>{labels[i][j]}</b><br>{describe(i, j)}" for j in range(k_len)] for i in range(q_len)]

    def step_text(key: str, **values) -> str:
        return text(f"steps.{key}", lang, fill=fill, **values)

    return [
        hover(lambda i, j: step_text("score_hover", score=score[i, j]) + (
            "" if mask[i, j] else "<br>" + step_text("score_blocked"))),
        hover(lambda i, j: step_text("masked_hover", score=score[i, j]) if mask[i, j] else step_text("masked_blocked")),
        hover(lambda i, j: step_text("weight_hover", weight=weight[i, j]) + (
            "" if mask[i, j] else "<br>" + step_text("weight_blocked"))),
    ]


def _step_traces(panels, texts: list[np.ndarray], mask: np.ndarray, blocked_texts: dict[int, str],
                 font: int | None, lang: str) -> list[go.Heatmap]:
    """The panels' heatmaps, each (z, zmin, zmax, colorscale, hover), cells writing `texts` at `font` (None: no
    numbers), and a grey layer over the blocked cells of panels 2 and 3 writing `blocked_texts` (by column)."""
    q_len, k_len = mask.shape
    show = font is not None
    traces = []
    for col, (z, zmin, zmax, colorscale, hover) in enumerate(panels, start=1):
        colorbar = dict(thickness=12, len=0.9, x=col * STEPS_PANEL + (col - 1) * STEPS_SPACING + 0.005, xanchor="left",
                        title=dict(text=text("score" if col == 2 else "cell_value.weights", lang), side="right"))
        traces.append(go.Heatmap(
            z=z.astype(np.float32), x=np.arange(k_len), y=np.arange(q_len), zmin=zmin, zmax=zmax,
            colorscale=colorscale, showscale=col > 1, colorbar=colorbar, hoverongaps=True,
            text=texts[col - 1] if show else None,
            texttemplate="%{text}" if show else None, textfont_size=font,
            hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", **subplot_axes(col),
        ))
        if col > 1 and not mask.all():
            traces.append(blocked_layer(mask, blocked_texts[col], show, font, **subplot_axes(col)))
    return traces


def _step_titles(width: int, fill: str, min_font: int, lang: str) -> dict:
    """The row of three panels, their titles as large as fit over a panel and the gap beside it, arrows between."""
    layout = subplot_row(3, STEPS_SPACING, shared_yaxes=True, titles=[
        text("steps.scores", lang), text("steps.masked", lang, fill=fill), text("steps.weights", lang)])
    panel_px = (width - STEPS_RIGHT_PX) * (STEPS_PANEL + STEPS_SPACING)
    titles = layout["annotations"]
    size = int(min(at_least(15, min_font), max(min_font, panel_px // max(text_em(a["text"]) for a in titles))))
    for annotation in titles:
        annotation["font"]["size"] = size
    titles.append(dict(x=STEPS_PANEL + STEPS_SPACING / 2, y=0.5, xref="paper", yref="paper", text="→",
                       showarrow=False, font=dict(size=34, color="#777777")))
    return layout


def _step_axes(q_tokens: Sequence[str] | None, k_tokens: Sequence[str] | None, q_text: list[str], k_text: list[str],
               queries: Ticks, keys: Ticks) -> dict:
    """The three panels' token axes, labelled by the tick plans; query labels beside the first panel only."""
    q_len, k_len = len(q_text), len(k_text)
    axes = {}
    for col in (1, 2, 3):
        suffix = "" if col == 1 else str(col)
        axes[f"xaxis{suffix}"] = merge_into(dict(**token_axis(k_tokens, k_len), fixedrange=True),
                                            tick_labels(range(k_len), k_text, keys, keep=padding_edge(k_text)))
        axes[f"yaxis{suffix}"] = merge_into(dict(**token_axis(q_tokens, q_len, reverse=True), fixedrange=True),
                                            tick_labels(range(q_len), q_text, queries, keep=padding_edge(q_text)))
        if col > 1:
            axes[f"yaxis{suffix}"]["showticklabels"] = False
    return axes
