"""The class's answers to a lesson question: a bar per choice, or a histogram of the numbers given; with the truth
once it is revealed (the right bar in the highlight colour, a line at the true number). Never who answered what."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from transformer_viz.figures.colours import HIGHLIGHT, LINE_COLOURS, MUTED
from transformer_viz.figures.fit import MIN_FONT_PX, at_least
from transformer_viz.figures.look import styled_figure
from transformer_viz.i18n import text

BIN_COUNT = 10  # a number question's histogram: bins over the range an answer may take


def choice_bars(counts: Mapping[str, int], labels: Sequence[str], truth: str | None = None, *,
                min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Horizontal bars, one per choice in the question's order (`counts` by choice id, `labels` alike); with
    `truth` (revealed) the right choice's bar is marked. No text under `min_font`."""
    ids = list(counts)
    total = sum(counts.values())
    colours = [HIGHLIGHT if truth is not None and i == truth else (MUTED if truth is not None else LINE_COLOURS[0])
               for i in ids]
    bars = go.Bar(x=[counts[i] for i in ids], y=list(range(len(ids))), orientation="h", marker=dict(color=colours),
                  text=[f"{counts[i]}" for i in ids], textposition="outside", cliponaxis=False,
                  textfont=dict(size=at_least(15, min_font)),
                  hovertemplate="%{customdata}: %{x}<extra></extra>", customdata=list(labels))
    return styled_figure([bars], {}, text("answers.title", lang, n=total), height=max(180, 70 + 40 * len(ids)),
                         then=dict(showlegend=False, margin=dict(l=10, r=30),
                                   xaxis=dict(title=text("answers.count", lang), rangemode="tozero",
                                              range=[0, max(1, *counts.values()) * 1.2], fixedrange=True),
                                   yaxis=dict(tickvals=list(range(len(ids))), ticktext=list(labels),
                                              autorange="reversed", fixedrange=True, automargin=True)),
                         min_font=min_font)


def number_histogram(values: Sequence[float], low: float, high: float, truth: float | None = None,
                     tolerance: float = 0.0, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """How many gave each number (bins over low..high); with `truth` (revealed) a line at it and the band of
    answers counted right. No text under `min_font`."""
    size = (high - low) / BIN_COUNT or 1.0
    bars = go.Histogram(x=list(values), xbins=dict(start=low, end=high + size * 1e-9, size=size),
                        marker=dict(color=LINE_COLOURS[0]), hovertemplate="%{x}: %{y}<extra></extra>")
    shapes, annotations = [], []
    if truth is not None:
        shapes = [dict(type="rect", xref="x", yref="paper", x0=truth - tolerance, x1=truth + tolerance, y0=0, y1=1,
                       fillcolor=HIGHLIGHT, opacity=0.15, line=dict(width=0), layer="below"),
                  dict(type="line", xref="x", yref="paper", x0=truth, x1=truth, y0=0, y1=1,
                       line=dict(color=HIGHLIGHT, width=3))]
        annotations = [dict(x=truth, y=1, xref="x", yref="paper", yanchor="bottom", showarrow=False,
                            text=text("answers.truth", lang, value=f"{truth:.3g}"),
                            font=dict(color=HIGHLIGHT, size=at_least(14, min_font)))]
    return styled_figure([bars], dict(shapes=shapes, annotations=annotations),
                         text("answers.title", lang, n=len(values)), height=260,
                         then=dict(showlegend=False, bargap=0.05,
                                   xaxis=dict(title=text("answers.value", lang), range=[low, high], fixedrange=True),
                                   yaxis=dict(title=text("answers.count", lang), rangemode="tozero", fixedrange=True,
                                              dtick=1)),
                         min_font=min_font)
