"""The class's answers to a lesson question: a bar per choice, or a histogram of the numbers given; with the truth
once it is revealed (the right bar in the highlight colour, a line at the true number). Never who answered what."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from transformer_viz.figures.colours import HIGHLIGHT, LINE_COLOURS, MUTED
from transformer_viz.figures.fit import MIN_FONT_PX, at_least
from transformer_viz.figures.look import styled_figure
from transformer_viz.i18n import text

BIN_COUNT = 10  # a number question's histogram: bins over the range an answer may take (or whole numbers shown)
COUNT_TICKS = 5  # a count axis (students) has at most this many steps: 0, 1, 2 for two answers; 0, 10, ... for 40


def count_dtick(most: float, ticks: int = COUNT_TICKS) -> int:
    """A count axis's tick step: the smallest whole 1, 2 or 5 × 10^k that reaches `most` in at most `ticks` steps
    (no "0.5 students", and no 40 crowded labels for a class of 40)."""
    power = 0
    while True:
        for base in (1, 2, 5):
            if most <= ticks * base * 10 ** power:
                return base * 10 ** power
        power += 1


def whole_answers(low: float, high: float, tolerance: float) -> bool:
    """Whether a number question asks a whole number (a count): it forgives nothing and its range is whole."""
    return tolerance == 0 and float(low).is_integer() and float(high).is_integer()


@dataclass(frozen=True)
class Bins:
    """A number question's histogram: bins from `start`, `size` wide, up to `end`; the x axis spans `shown`."""

    start: float
    end: float
    size: float
    shown: tuple[float, float]


def number_bins(values: Sequence[float], low: float, high: float, tolerance: float = 0.0,
                truth: float | None = None) -> Bins:
    """A whole-number question (`whole_answers`): one bin per whole number, centred on it, over the numbers given
    (and the truth, once revealed) widened to BIN_COUNT + 1 numbers within low..high: 3 and 5 of 0..64 are two
    bars, not one bin of 0..6.4. Any other: BIN_COUNT bins over low..high."""
    if not whole_answers(low, high, tolerance):
        size = (high - low) / BIN_COUNT or 1.0
        return Bins(low, high + size * 1e-9, size, (low, high))
    given = [*values, *([] if truth is None else [truth])]
    first, last = (math.floor(min(given)), math.ceil(max(given))) if given else (low, low)
    first, last = max(low, first), min(high, last)
    missing = BIN_COUNT - (last - first)
    if missing > 0:
        first = max(low, first - math.ceil(missing / 2))
        last = min(high, first + BIN_COUNT)
        first = max(low, last - BIN_COUNT)
    return Bins(first - 0.5, last + 0.5, 1.0, (first - 0.5, last + 0.5))


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
                                              range=[0, max(1, *counts.values()) * 1.2], fixedrange=True,
                                              tick0=0, dtick=count_dtick(max(1, *counts.values()))),
                                   yaxis=dict(tickvals=list(range(len(ids))), ticktext=list(labels),
                                              autorange="reversed", fixedrange=True, automargin=True)),
                         min_font=min_font)


def number_histogram(values: Sequence[float], low: float, high: float, truth: float | None = None,
                     tolerance: float = 0.0, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """How many gave each number (`number_bins`); with `truth` (revealed) the answers counted right in the highlight
    colour and the others muted, as `choice_bars` does, a line at the truth (behind the bars) and, where the
    question forgives a little, the band it forgives. No text under `min_font`."""
    bins = number_bins(values, low, high, tolerance, truth)
    whole = whole_answers(low, high, tolerance)
    if truth is None:
        parts = [(list(values), LINE_COLOURS[0])]
    else:
        right = [v for v in values if abs(v - truth) <= tolerance]
        parts = [(right, HIGHLIGHT), ([v for v in values if abs(v - truth) > tolerance], MUTED)]
    bars = [go.Histogram(x=x, xbins=dict(start=bins.start, end=bins.end, size=bins.size), marker=dict(color=colour),
                         hovertemplate="%{x}: %{y}<extra></extra>") for x, colour in parts]
    shapes, annotations = [], []
    if truth is not None:
        shapes = [dict(type="line", xref="x", yref="paper", x0=truth, x1=truth, y0=0, y1=1, layer="below",
                       line=dict(color=HIGHLIGHT, width=3))]
        if tolerance:
            shapes.insert(0, dict(type="rect", xref="x", yref="paper", x0=truth - tolerance, x1=truth + tolerance,
                                  y0=0, y1=1, fillcolor=HIGHLIGHT, opacity=0.15, line=dict(width=0), layer="below"))
        annotations = [dict(x=truth, y=1, xref="x", yref="paper", yanchor="bottom", showarrow=False,
                            text=text("answers.truth", lang, value=f"{truth:.3g}"),
                            font=dict(color=HIGHLIGHT, size=at_least(14, min_font)))]
    most = max(Counter(math.floor((v - bins.start) / bins.size) for v in values).values(), default=1)
    numbers = dict(tick0=0, dtick=count_dtick(bins.shown[1] - bins.shown[0])) if whole else {}
    return styled_figure(bars, dict(shapes=shapes, annotations=annotations),
                         text("answers.title", lang, n=len(values)), height=260,
                         then=dict(showlegend=False, bargap=0.05, barmode="stack",
                                   xaxis=dict(title=text("answers.value", lang), range=list(bins.shown),
                                              fixedrange=True, **numbers),
                                   yaxis=dict(title=text("answers.count", lang), rangemode="tozero", fixedrange=True,
                                              tick0=0, dtick=count_dtick(most))),
                         min_font=min_font)
