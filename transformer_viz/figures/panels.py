"""Matrices drawn as annotated heatmaps and laid out as a grid (Inside one head's steps, one matrix alone).

A `Panel` is one matrix with its labels; `panel_grid` sizes each subplot by its matrix and writes the values in
the cells where they fit at the smallest font allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.attention_arrays import as_numpy
from transformer_viz.figures.colours import BLOCKED_GREY, DIVERGING, MASK_COLOURS, SEQUENTIAL
from transformer_viz.figures.fit import (
    GAP_PX,
    LINE_SPACING,
    MIN_FONT_PX,
    at_least,
    cell_font,
    tick_labels,
    tick_plan,
    wrapped,
)
from transformer_viz.figures.look import styled_figure
from transformer_viz.figures.numbers import format_numbers
from transformer_viz.figures.panel_layout import (
    PAGE_PX,
    SPACING,
    SUBPLOT_TITLE_PX,
    VALUE_ASPECT,
    cell_heights,
    panel_layout,
    top_label_px,
)
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.i18n import text

MAX_VALUE_ROWS, MAX_VALUE_COLS = 12, 16  # larger matrices show colours only (values on hover)
OUTLINE = "#111111"


@dataclass(frozen=True)
class Panel:
    """One matrix to draw. style: "signed" (diverging around 0), "weights" ([0, 1]) or "mask" (0/1)."""

    matrix: np.ndarray  # (rows, cols)
    row_labels: Sequence[str]
    col_labels: Sequence[str]
    title: str
    style: str = "signed"
    blocked: np.ndarray | None = None  # (rows, cols) bool, True = masked out: drawn grey, outside the colours
    text: np.ndarray | None = None  # (rows, cols) str, replaces the formatted values
    marks: tuple[dict, ...] = ()  # outlines and lines in cell coordinates (x = column, y = row)


def matrix_heatmap(matrix, row_labels, col_labels, title: str, signed: bool = True, show_values: bool | None = None,
                   highlight: tuple[int, int] | None = None, blocked=None, *, min_font: int = MIN_FONT_PX,
                   lang: str = "en") -> go.Figure:
    """One annotated matrix, first row at the top; values in cells when it is small (≤ 12 × 16) unless told.

    `blocked` (rows, cols) bool marks masked cells (e.g. of masked scores): grey, with their
    value as text, and left out of the colour range; non-finite values are always treated so.
    `highlight` (row, col) is outlined. No text under `min_font`. `lang`: the language of the words drawn
    besides `title`.
    """
    panel = Panel(as_numpy(matrix), row_labels, col_labels, title, "signed" if signed else "weights",
                  None if blocked is None else as_numpy(blocked).astype(bool),
                  marks=() if highlight is None else (outline(*highlight),))
    return panel_grid([[panel]], title, show_values=show_values, colorbar=True, min_font=min_font, lang=lang)


def panel_grid(cells: list[list[Panel | None]], title: str, subtitle: str | None = None,
          show_values: bool | None = None, colorbar: bool = False, min_font: int = MIN_FONT_PX,
          lang: str = "en") -> go.Figure:
    """Panels laid out as a grid, each subplot sized by its matrix; values in cells where they fit at `min_font`.

    `colorbar` (a single panel only): a colour bar when the cells carry no numbers.

    The layout is written out as one dict: building a figure by many small updates is several times slower.
    """
    n_cols = len(cells[0])
    panels = [(r, c, p) for r, row in enumerate(cells) for c, p in enumerate(row) if p is not None]
    row_sizes = [max(p.matrix.shape[0] for p in row if p is not None) for row in cells]
    col_sizes = [max(row[c].matrix.shape[1] for row in cells if row[c] is not None) for c in range(n_cols)]
    token_rows = [any(p is not None and _is_tokens(p.row_labels) for p in row) for row in cells]
    if show_values is None:
        value_px = cell_heights(row_sizes, col_sizes, token_rows, VALUE_ASPECT, min_font)
        values = [p.matrix.shape[0] <= MAX_VALUE_ROWS and p.matrix.shape[1] <= MAX_VALUE_COLS and value_px[r] >= 24
                  for r, _, p in panels]
    else:
        values = [show_values] * len(panels)
    # Cells wider than tall only where they hold a number; colour-only cells are square and take less room.
    aspect = VALUE_ASPECT if any(values) else 1.0
    cell_px = cell_heights(row_sizes, col_sizes, token_rows, aspect, min_font)
    # Room above each matrix for its top tick labels (upright when wider than a cell) and its title.
    label_px = [max(top_label_px(p.col_labels, cell_px[r] / aspect, min_font) for p in row if p is not None)
                for r, row in enumerate(cells)]
    titled = len(panels) > 1
    title_font = at_least(14, min_font)
    titles, title_px = _panel_titles(panels, col_sizes, title_font)
    grid = panel_layout(row_sizes, col_sizes, cell_px, aspect, label_px, titled, lone=colorbar, title_px=title_px)

    traces, annotations, shapes, layout = [], [], [], {}
    for n, ((r, c, panel), show) in enumerate(zip(panels, values, strict=True), start=1):
        suffix = "" if n == 1 else str(n)
        x, y = f"x{suffix}", f"y{suffix}"
        rows, cols = panel.matrix.shape
        texts = _texts(panel)
        font = cell_font(cell_px[r] / aspect, cell_px[r], texts.ravel(), min_font=min_font)
        show = show and (font is not None or show_values is not None)
        # A colour bar as tall as the matrix, with no more numbers than fit beside it at the figure's font.
        bar = dict(thickness=12, x=grid.x_domains[0][1] + 0.01, xanchor="left",
                   nticks=max(3, int(rows * cell_px[r] // (2 * at_least(14, min_font))))) if colorbar and not show \
            else None
        traces += _panel_traces(panel, bar, font or at_least(MIN_FONT_PX, min_font), dict(xaxis=x, yaxis=y), show,
                                lang, texts)
        layout[f"xaxis{suffix}"] = dict(_axis(panel.col_labels, cols, cell_px[r] / aspect, min_font, axis="x"),
                                        anchor=y,
                                        side="top",
                                        domain=list(grid.x_domains[c]), constrain="domain",
                                        constraintoward="left")
        # scaleanchor keeps the matrix's shape however wide the page is; it then hugs the top left of its slot.
        layout[f"yaxis{suffix}"] = dict(_axis(panel.row_labels, rows, cell_px[r], min_font, reverse=True), anchor=x,
                                        domain=list(grid.y_domains[r]), scaleanchor=x,
                                        scaleratio=aspect, constrain="domain", constraintoward="top")
        shapes += [dict(mark, xref=x, yref=y) for mark in panel.marks]
        if titled:
            annotations.append(dict(text=titles[n - 1], x=grid.x_domains[c][0], y=grid.y_domains[r][1],
                                    xref="paper", yref="paper", align="left",
                                    xanchor="left", yanchor="bottom", yshift=label_px[r], showarrow=False,
                                    font=dict(size=title_font)))
    return styled_figure(traces, layout, title, height=grid.height, width=PAGE_PX, then=dict(
        annotations=annotations, shapes=shapes, margin=dict(t=grid.top_px),
        title=dict(yref="container", y=1.0, yanchor="top", pad=dict(t=12),
                   subtitle=dict(text=subtitle, font=dict(size=at_least(14, min_font))))), min_font=min_font)


def _panel_titles(panels: list[tuple[int, int, Panel]], col_sizes: Sequence[int], font: int) -> tuple[list[str], float]:
    """The panels' titles, broken into lines where one is wider than its column and the gap after it at `font`
    px (a projector's font), and the room they take above a row of matrices."""
    share = [(1 - SPACING * (len(col_sizes) - 1)) * size / sum(col_sizes) + SPACING for size in col_sizes]
    plot_px = PAGE_PX - 60  # the row labels of the first column take some of the page
    titles = [wrapped(panel.title, share[c] * plot_px - 2 * GAP_PX, font) for _, c, panel in panels]
    lines = max((title.count("<br>") + 1 for title in titles), default=1)
    return titles, SUBPLOT_TITLE_PX + (lines - 1) * round(LINE_SPACING * font)


def _panel_traces(panel: Panel, colorbar: dict | None, font_size: int, axes: dict,
                  show_values: bool, lang: str = "en", texts: np.ndarray | None = None) -> list[go.Heatmap]:
    """The heatmap of a panel (with `colorbar`, if given), plus a grey layer for blocked
    cells so they never set the colour range. `texts`: the panel's `_texts`, when already made."""
    matrix = panel.matrix.astype(float)  # (rows, cols)
    rows, cols = matrix.shape
    blocked = ~np.isfinite(matrix) if panel.blocked is None else panel.blocked | ~np.isfinite(matrix)
    shown = np.where(blocked, np.nan, matrix)  # (rows, cols)
    cell_texts = _texts(panel) if texts is None else texts
    row_texts, col_texts = token_texts(panel.row_labels, rows), token_texts(panel.col_labels, cols)
    cells = cell_texts.tolist()  # Python strings: indexing a numpy array cell by cell is slow
    # A numpy array: Plotly converts a list of lists element by element (an eighth of what the panels cost)
    hover = np.array([[f"{row_texts[i]} · {col_texts[j]}: {cells[i][j]}" for j in range(cols)] for i in range(rows)],
                     dtype=str)
    if panel.style == "weights":
        colours = dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0)
    elif panel.style == "mask":
        colours = dict(colorscale=MASK_COLOURS, zmin=0.0, zmax=1.0)
    else:
        finite = np.abs(shown[np.isfinite(shown)])
        limit = (float(finite.max()) if finite.size else 0.0) or 1.0
        colours = dict(colorscale=DIVERGING, zmin=-limit, zmax=limit, zmid=0.0)
    main = go.Heatmap(z=shown, **colours, **axes, hovertext=hover, hoverinfo="text", hoverongaps=False, xgap=1, ygap=1,
                      showscale=colorbar is not None and panel.style != "mask", colorbar=colorbar or {},
                      **(dict(text=np.where(blocked, "", cell_texts), texttemplate="%{text}", textfont_size=font_size)
                         if show_values else {}))  # blocked cells: the grey layer's text (Plotly writes NaN cells too)
    traces = [main]
    if blocked.any():
        traces.append(go.Heatmap(
            z=np.where(blocked, 1.0, np.nan), colorscale=[[0.0, BLOCKED_GREY], [1.0, BLOCKED_GREY]], zmin=0.0, zmax=1.0,
            **axes,
            showscale=False,
            hovertext=np.array([[text("walk.blocked_hover", lang, hover=h) for h in row] for row in hover], dtype=str),
            hoverinfo="text", hoverongaps=False, xgap=1, ygap=1,
            text=np.where(blocked, cell_texts, ""), texttemplate="%{text}" if show_values else "",
            textfont=dict(size=font_size, color="#555555"),
        ))
    return traces


def _texts(panel: Panel) -> np.ndarray:
    """What the cells of a panel write: its own text, or its values as a student writes them."""
    return panel.text if panel.text is not None else format_numbers(panel.matrix)


def _axis(labels: Sequence[str], length: int, cell_px: float, min_font: int, reverse: bool = False,
          axis: str = "y") -> dict:
    """Integer positions with labels as tick text, `cell_px` apart: the font fitted to the cells, labels
    turned or thinned to every k-th where even the smallest readable font (`min_font`) would collide (`tick_plan`)."""
    settings = token_axis(labels, length, reverse=reverse)
    plan = tick_plan(settings["ticktext"], cell_px, axis, min_font=min_font)
    return settings | tick_labels(settings["tickvals"], settings["ticktext"], plan)


def _is_tokens(labels: Sequence[str]) -> bool:
    """Token labels cannot be thinned out; numbered dimensions (and positions) can."""
    return not all(str(label).isdigit() for label in labels)


def outline(i0: int, j0: int, i1: int | None = None, j1: int | None = None) -> dict:
    """An outline around cells (i0..i1, j0..j1), rows i and columns j; one cell when i1, j1 are not given."""
    i1, j1 = i0 if i1 is None else i1, j0 if j1 is None else j1
    return dict(type="rect", x0=j0 - 0.5, x1=j1 + 0.5, y0=i0 - 0.5, y1=i1 + 0.5, line=dict(color=OUTLINE, width=3))
