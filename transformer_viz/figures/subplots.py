"""Rows and columns of subplots: make_subplots' layout, made once for each shape."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence


def subplot_row(cols: int, spacing: float, shared_yaxes: bool = False, titles: Sequence[str] | None = None,
                column_widths: Sequence[float] | None = None) -> dict:
    """The layout `make_subplots(rows=1, cols=cols, ...)` starts a figure with, as a new dict: its axes (trace
    `c` of column c draws on xaxis="x<c>", yaxis="y<c>", "x" and "y" for the first) and its titles.

    make_subplots costs ~13 ms a figure; its layout depends only on these arguments, so it is made once.
    """
    titled = None if titles is None else tuple(bool(title) for title in titles)  # make_subplots skips ""
    return _titled_copy(_subplots_layout(1, cols, spacing, shared_yaxes, titled,
                                         None if column_widths is None else tuple(column_widths)),
                        [t for t in titles or () if t])


def subplot_column(rows: int, spacing: float, titles: Sequence[str]) -> dict:
    """The layout `make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=spacing,
    subplot_titles=titles)` starts a figure with, as a new dict (made once for its shape, as `subplot_row`)."""
    return _titled_copy(_subplots_layout(rows, 1, spacing, True, (True,) * rows, None), titles)


def _titled_copy(layout: dict, titles: Sequence[str]) -> dict:
    """A copy of a cached subplot layout with `titles` written into its title annotations, in order."""
    layout = copy.deepcopy(layout)
    for annotation, title in zip(layout.get("annotations", ()), titles, strict=True):
        annotation["text"] = title
    return layout


@functools.lru_cache(maxsize=64)
def _subplots_layout(rows: int, cols: int, spacing: float, shared: bool, titled: tuple[bool, ...] | None,
                     column_widths) -> dict:
    """make_subplots' layout for a row (rows == 1: `spacing` between columns, y axes shared when `shared`) or a
    column (cols == 1: `spacing` between rows, x axes shared when `shared`); titles as placeholders."""
    from plotly.subplots import make_subplots

    row = rows == 1
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=shared and row, shared_xaxes=shared and not row,
                        **({"horizontal_spacing": spacing} if row else {"vertical_spacing": spacing}),
                        subplot_titles=None if titled is None else [str(i) if t else "" for i, t in enumerate(titled)],
                        column_widths=None if column_widths is None else list(column_widths))
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)  # the look replaces it
    return layout


def subplot_axes(n: int) -> dict:
    """The axes a trace in subplot `n` (from 1: the column of a `subplot_row`, the row of a `subplot_column`)
    draws on."""
    suffix = "" if n == 1 else str(n)
    return dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")


def axis_key(name: str) -> str:
    """A trace's axis name as its layout key: "x2" -> "xaxis2", "y" -> "yaxis"."""
    return f"{name[0]}axis{name[1:]}"
