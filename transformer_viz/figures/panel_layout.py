"""Pixel geometry of the walkthrough's grids of matrices (figures/head.py): cell sizes, room for labels, positions.

Pure arithmetic on matrix sizes (in cells) and pixels; head.py draws with the results.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from transformer_viz.figures.fit import CELL_FONT_PX, GAP_PX, LINE_EM, MIN_FONT_PX, at_least, text_em, tick_plan
from transformer_viz.figures.token_axes import escape_text

HEADER_PX, SUBPLOT_TITLE_PX = 80, 24  # room for the title with its subtitle; for a subplot's title
PAGE_PX = 790  # the width figures are laid out for: the narrowest main column (app/session/charts.py MAIN_WIDTH)
MIN_CELL_PX, MIN_TOKEN_PX = 6.0, 14.0  # smallest cell height; rows labelled by tokens need room for the text
VALUE_ASPECT = 0.6  # cell height / width where a cell shows a number such as "−0.94"
SPACING = 0.06  # between two grid columns, as a fraction of the width
COLUMN_GAP_PX = 70  # between two grid columns, for the next one's row labels


def cell_heights(row_sizes: Sequence[int], col_sizes: Sequence[int], token_rows: Sequence[bool],
                 aspect: float, min_font: int = MIN_FONT_PX) -> list[float]:
    """Cell height in px for each grid row: as large as fits PAGE_PX wide and about 640 px tall,
    but never so small that token labels (at `min_font` or more) collide, unless the page is too narrow for that.

    row_sizes: the most matrix rows in each grid row; col_sizes: the most matrix columns in each
    grid column; token_rows: whether a grid row's matrices have tokens as row labels; aspect:
    cell height / cell width.
    """
    fits_width = aspect * (PAGE_PX - COLUMN_GAP_PX * (len(col_sizes) - 1)) / sum(col_sizes)
    base = min(48.0, 640 / sum(row_sizes), fits_width)
    token_px = max(MIN_TOKEN_PX, math.ceil(min_font * LINE_EM))
    return [max(base, min(token_px if tokens else MIN_CELL_PX, fits_width)) for tokens in token_rows]


def fits_with_values(col_sizes: Sequence[int], min_font: int = MIN_FONT_PX) -> bool:
    """Whether matrices `col_sizes` columns wide fit PAGE_PX side by side with a number such as "−0.94" in
    each cell at the smallest cell font (or `min_font`)."""
    cell = text_em("−0.94") * at_least(CELL_FONT_PX[0], min_font) + GAP_PX
    return sum(col_sizes) * cell + COLUMN_GAP_PX * (len(col_sizes) - 1) <= PAGE_PX


def top_label_px(labels: Sequence[str], cell_width_px: float, min_font: int = MIN_FONT_PX) -> float:
    """Height of a top axis's tick labels, flat, slanted or upright as `tick_plan` lays them out."""
    return tick_plan([escape_text(label) for label in labels], cell_width_px, "x", min_font=min_font).depth + 8


@dataclass(frozen=True)
class PanelLayout:
    """Where the grid's columns and rows of matrices sit, as [start, end] fractions of the plot area."""

    x_domains: tuple[tuple[float, float], ...]  # per grid column, left to right
    y_domains: tuple[tuple[float, float], ...]  # per grid row, top to bottom
    top_px: int  # top margin: the title, the first row's tick labels and panel titles
    height: int  # of the whole figure, px


def panel_layout(row_sizes: Sequence[int], col_sizes: Sequence[int], cell_px: Sequence[float], aspect: float,
                 label_px: Sequence[float], titled: bool, lone: bool,
                 title_px: float = SUBPLOT_TITLE_PX) -> PanelLayout:
    """Stack the grid rows from the top, `cell_px[r]` px per matrix row.

    Between two rows there is room for the lower row's top tick labels (`label_px`) and, when
    `titled`, its panel titles (`title_px` high). Columns share the width in proportion to their sizes, except a
    `lone` matrix: it takes its own width, so its colour bar sits beside it, not at the far edge.
    """
    row_px = [size * px for size, px in zip(row_sizes, cell_px, strict=True)]
    title_px = title_px if titled else 0
    gap_px = max(label_px[1:], default=0) + title_px + 16
    plot_px = sum(row_px) + gap_px * (len(row_px) - 1)
    tops = [1 - (sum(row_px[:r]) + gap_px * r) / plot_px for r in range(len(row_px))]
    if lone:
        widths = [min(1.0, col_sizes[0] * cell_px[0] / aspect / PAGE_PX)]
    else:
        widths = [(1 - SPACING * (len(col_sizes) - 1)) * size / sum(col_sizes) for size in col_sizes]
    lefts = [sum(widths[:c]) + SPACING * c for c in range(len(widths))]
    top_px = HEADER_PX + label_px[0] + title_px
    return PanelLayout(
        # min(): the sum of the fractions can overshoot 1 in the last bit, which Plotly refuses.
        x_domains=tuple((left, min(1.0, left + width)) for left, width in zip(lefts, widths, strict=True)),
        y_domains=tuple((max(0.0, top - px / plot_px), top) for top, px in zip(tops, row_px, strict=True)),
        top_px=top_px, height=int(plot_px + top_px + 10),
    )
