"""A figure's text alternative, read off the figure itself: a sentence a screen reader says, and its numbers as
tables it can walk (WCAG 2.1, 1.1.1 non-text content). Whatever a figure draws, its alternative says: it is
computed from the figure's own traces, labels and title, never written beside it.

    alternative = text_alternative(fig, "zh")
    alternative.description, alternative.tables[0].rows[0]

A heatmap is a table of its rows by its columns (a blocked cell: "blocked"); bars a column of values; lines a
table of their points; a diagram's words a list. At most MAX_CELLS numbers in all: the sentence says how many of
the figure's parts are described without their numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from transformer_viz.i18n import text

MAX_CELLS = 600  # numbers in a figure's tables: a 12 × 12 head's 144, not a 6 × 8 grid of 32 × 32 heads' 49,152
TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Table:
    """One trace's numbers: a caption, the column headers and (row header, cells) rows, all text."""

    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class TextAlternative:
    description: str
    tables: tuple[Table, ...]


def number(value) -> str:
    """A drawn number as a reader hears it: three decimals (a weight of 1e-40 is 0.000), large ones shortened."""
    value = float(value)
    return f"{value:.3f}" if abs(value) < 1000 else f"{value:.3g}"


def plain(label) -> str:
    """A label without Plotly's markup (<br>, <sub>, <b>)."""
    return TAGS.sub(" ", str(label)).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def axis_labels(fig: go.Figure, trace, letter: str, count: int) -> list[str]:
    """The labels along one axis of a trace: its own names (a grid's "Layer 2 · query 3"), or its positions read
    through its axis's tick texts (token axes), else 0, 1, 2…"""
    values = getattr(trace, letter, None)
    values = list(range(count)) if values is None else list(values)[:count]
    axis = fig.layout[f"{letter}axis{str(getattr(trace, f'{letter}axis') or letter)[1:]}"]
    names = dict(zip(axis.tickvals or (), axis.ticktext or (), strict=False))
    labels = [plain(value if isinstance(value, str) else names.get(value, value)) for value in values]
    return labels + [str(i) for i in range(len(values), count)]


def _heatmap(fig: go.Figure, trace, name: str, lang: str, budget: int) -> tuple[str, Table | None]:
    z = np.asarray(trace.z, dtype=float)  # (rows, columns)
    if z.ndim != 2 or not z.size:
        return "", None
    rows, columns = axis_labels(fig, trace, "y", z.shape[0]), axis_labels(fig, trace, "x", z.shape[1])
    if trace.hoverongaps is False:  # its empty cells are gaps between tiles, not data: leave their rows and columns
        keep_rows, keep_columns = np.isfinite(z).any(1), np.isfinite(z).any(0)
        z = z[keep_rows][:, keep_columns]
        rows = [r for r, kept in zip(rows, keep_rows, strict=True) if kept]
        columns = [c for c, kept in zip(columns, keep_columns, strict=True) if kept]
    shown = np.isfinite(z)
    if not shown.any():
        return text("alt.heatmap_blocked", lang, name=name, rows=z.shape[0], columns=z.shape[1]), None
    row, column = np.unravel_index(np.where(shown, z, -math.inf).argmax(), z.shape)
    sentence = text("alt.heatmap", lang, name=name, rows=z.shape[0], columns=z.shape[1],
                    low=number(z[shown].min()), high=number(z[row, column]), row=rows[row], column=columns[column])
    if z.size > budget:
        return sentence, None
    blocked = text("alt.blocked", lang)
    cells = tuple((rows[i], tuple(number(v) if np.isfinite(v) else blocked for v in z[i])) for i in range(len(z)))
    return sentence, Table(text("alt.numbers", lang, name=name), tuple(columns), cells)


def _points(fig: go.Figure, trace, name: str, lang: str, budget: int) -> tuple[str, Table | None]:
    """Bars and lines: a value per x (or per y, for horizontal bars)."""
    horizontal = getattr(trace, "orientation", None) == "h"
    drawn = trace.x if horizontal else trace.y
    values = [] if drawn is None else list(drawn)
    if not values:
        return "", None
    places = axis_labels(fig, trace, "y" if horizontal else "x", len(values))
    finite = [float(v) for v in values if v is not None and np.isfinite(float(v))]
    if not finite:
        return "", None
    kind = "alt.line" if trace.type.startswith("scatter") else "alt.bars"
    sentence = text(kind, lang, name=name, count=len(values), low=number(min(finite)), high=number(max(finite)))
    if len(values) > budget:
        return sentence, None
    cells = tuple((place, ("—" if v is None or not np.isfinite(float(v)) else number(v),))
                  for place, v in zip(places, values, strict=True))
    return sentence, Table(text("alt.numbers", lang, name=name), (text("alt.value", lang),), cells)


def _labels(fig: go.Figure, trace, name: str, lang: str, budget: int) -> tuple[str, Table | None]:
    """Text drawn at places (a diagram's blocks): its words, in order."""
    words = [plain(w) for w in trace.text if plain(w)]
    if not words:
        return "", None
    sentence = text("alt.labels", lang, name=name, words="; ".join(words[:12]) + ("…" if len(words) > 12 else ""))
    return sentence, None if len(words) > budget else Table(text("alt.numbers", lang, name=name),
                                                             (text("alt.label", lang),),
                                                             tuple((str(i + 1), (w,)) for i, w in enumerate(words)))


def reader(trace):
    """How to read a trace, or None for one drawn for the eye or the mouse with no numbers of its own: click
    targets (one marker drawn), a one-colour layer (blocked cells), legend keys and guides (no hover)."""
    if trace.type == "heatmap":
        colours = {colour for _, colour in trace.colorscale or ()}
        return None if len(colours) == 1 else _heatmap
    if trace.type in ("bar", "waterfall"):
        return _points
    if trace.type not in ("scatter", "scattergl") or trace.hoverinfo == "skip" or trace.marker.maxdisplayed == 1:
        return None
    return _labels if trace.text is not None and "text" in (trace.mode or "") else _points


def text_alternative(fig: go.Figure, lang: str = "en") -> TextAlternative:
    """What `fig` shows, in words and tables of its numbers (see the module's docstring)."""
    title = plain(fig.layout.title.text or "") or text("alt.untitled", lang)
    sentences, tables, budget, left_out = [text("alt.figure", lang, title=title)], [], MAX_CELLS, 0
    for index, trace in enumerate(fig.data):
        read = reader(trace)
        if read is None:
            continue
        name = plain(trace.name or "") or text("alt.part", lang, n=index + 1)
        sentence, table = read(fig, trace, name, lang, budget)
        if not sentence:
            continue
        sentences.append(sentence)
        if table is None:
            left_out += 1
        else:
            tables.append(table)
            budget -= sum(len(cells) for _, cells in table.rows)
    words = [plain(note.text) for note in fig.layout.annotations if plain(note.text or "")]
    if words and len(sentences) == 1:  # a diagram whose words are its notes (the architecture's blocks)
        sentences.append(text("alt.labels", lang, name=text("alt.notes", lang), words="; ".join(words[:40])))
    if left_out:
        sentences.append(text("alt.left_out", lang, n=left_out))
    return TextAlternative(" ".join(sentences), tuple(tables))
