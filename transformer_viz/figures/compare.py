"""Two runs side by side: the difference of their attention weights, B − A, tile by tile."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.attention_arrays import all_layers
from transformer_viz.figures.colours import DIVERGING
from transformer_viz.figures.fit import MIN_FONT_PX
from transformer_viz.figures.grid import COLOUR_BAR, GRID_PX, _names, _tile, grid_layout, tile_axes, tile_titles
from transformer_viz.figures.look import styled_figure
from transformer_viz.figures.numbers import symmetric_limit
from transformer_viz.figures.token_axes import token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import token_labels


def difference_grid(trace_a, trace_b, kind: str, *, width: int | None = None, min_font: int = MIN_FONT_PX,
                    lang: str = "en") -> go.Figure:
    """Every layer × head of `kind`: weights of B minus weights of A, one colour scale symmetric about 0.

    Both traces must have the same layers, heads and tokens (ValueError naming what differs): a difference
    of two different shapes would draw nothing true. Laid out as `attention_grid` at the same `width`, so that
    the three grids of a comparison line up; no text under `min_font`.
    """
    a = np.stack([arrays.weights for arrays in all_layers(trace_a, kind)])  # (layers, heads, q_len, k_len)
    b = np.stack([arrays.weights for arrays in all_layers(trace_b, kind)])
    if a.shape != b.shape:
        raise ValueError(f"A and B differ in shape: {a.shape} and {b.shape} (layers, heads, queries, keys); "
                         "a difference needs the same model shape and the same tokens.")
    difference = b - a
    layers, heads, q_len, k_len = difference.shape
    q_tokens, k_tokens = trace_a.attention_tokens(kind)
    layout = grid_layout(layers, heads, q_len, k_len, max(map(len, token_labels(q_tokens, q_len)), default=1),
                         max(map(len, token_labels(k_tokens, k_len)), default=1), width or GRID_PX, min_font)
    gap = layout.gap
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    y_names, x_names = _names("grid.row", layers, q_text, gap, lang), _names("grid.column", heads, k_text, gap, lang)
    limit = max(symmetric_limit(difference), 1e-6)
    heatmap = go.Heatmap(
        z=_tile(difference, gap), x=np.array(x_names), y=np.array(y_names), zmin=-limit, zmax=limit,
        colorscale=DIVERGING, hoverongaps=False, name=text("compare.b_minus_a", lang),
        colorbar=dict(title=dict(text=text("compare.b_minus_a", lang), side="right"), **COLOUR_BAR,
                      len=min(1.0, 420 / layout.height)),
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{text('compare.b_minus_a', lang)} <b>%{{z:+.3f}}</b><extra></extra>",
    )
    xaxis, yaxis = tile_axes(x_names, y_names, k_text, q_text, difference.shape, layout)
    return styled_figure(
        [heatmap], dict(annotations=tile_titles(difference.shape, layout, lang)),
        text("compare.heatmap_title", lang, kind=text(f"kind.{kind}", lang)), layout.height,
        then=dict(margin=dict(l=layout.left, r=layout.right, t=layout.top, b=layout.bottom), xaxis=xaxis, yaxis=yaxis),
        min_font=min_font)
