"""Two runs side by side: the difference of their attention weights, B − A, tile by tile."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.common import (
    DIVERGING,
    all_layers,
    base_layout,
    symmetric_limit,
    token_labels,
    token_texts,
)
from transformer_viz.figures.grid import GRID_PX, _names, _tile, _tile_names, grid_layout
from transformer_viz.i18n import text


def difference_grid(trace_a, trace_b, kind: str, *, width: int | None = None, lang: str = "en") -> go.Figure:
    """Every layer × head of `kind`: weights of B minus weights of A, one colour scale symmetric about 0.

    Both traces must have the same layers, heads and tokens (ValueError naming what differs): a difference
    of two different shapes would draw nothing true.
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
                         max(map(len, token_labels(k_tokens, k_len)), default=1), width or GRID_PX)
    gap = layout.gap
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    y_names, x_names = _names("grid.row", layers, q_text, gap, lang), _names("grid.column", heads, k_text, gap, lang)
    limit = max(symmetric_limit(difference), 1e-6)
    fig = go.Figure(go.Heatmap(
        z=_tile(difference, gap), x=np.array(x_names), y=np.array(y_names), zmin=-limit, zmax=limit,
        colorscale=DIVERGING, hoverongaps=False, name="difference",
        colorbar=dict(title=dict(text=text("compare.b_minus_a", lang), side="right"), thickness=14,
                      len=min(1.0, 420 / layout.height)),
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{text('compare.b_minus_a', lang)} <b>%{{z:+.3f}}</b><extra></extra>",
    ))
    fig.update_layout(annotations=[
        *(dict(x=head * (k_len + gap) + (k_len - 1) / 2, y=1, yref="paper", yanchor="bottom",
               text=text("head", lang, head=head + 1), showarrow=False, font_size=15) for head in range(heads)),
        *(dict(x=0, xref="paper", xanchor="right", xshift=-layout.layer_title_shift,
               y=layer * (q_len + gap) + (q_len - 1) / 2, text=text("layer", lang, layer=layer + 1),
               textangle=-90, showarrow=False, font_size=15) for layer in range(layers)),
    ])
    base_layout(fig, text("compare.heatmap_title", lang, kind=text(f"kind.{kind}", lang)), layout.height)
    fig.update_layout(margin=dict(l=layout.left, r=layout.right, t=layout.top, b=layout.bottom))
    names = dict(showgrid=False, zeroline=False, fixedrange=True, tickfont_size=12, tickmode="array")
    keys = dict(tickvals=_tile_names(x_names, heads, k_len, gap), ticktext=k_text * heads)
    queries = dict(tickvals=_tile_names(y_names, layers, q_len, gap), ticktext=q_text * layers)
    fig.update_xaxes(**names, **(keys if layout.show_key_ticks else dict(tickvals=[])),
                     range=[-0.5, len(x_names) - 0.5])
    fig.update_yaxes(**names, **(queries if layout.show_query_ticks else dict(tickvals=[])),
                     range=[len(y_names) - 0.5, -0.5])
    return fig
