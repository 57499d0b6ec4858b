"""Figures only the lesson needs: softmax saturation against the key width d_k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.common import HIGHLIGHT, LINE_COLOURS, MUTED, base_layout
from transformer_viz.figures.labels import label


def softmax_entropy_figure(d_ks: Sequence[int], scaled: Sequence[float], unscaled: Sequence[float], n_keys: int,
                           lang: str = "en") -> go.Figure:
    """Mean entropy (bits) of softmax rows over `n_keys` keys against d_k (log axis), with and without ÷√d_k;
    a dotted line at log₂(n_keys), the entropy of uniform attention."""
    fig = go.Figure()
    lines = ((scaled, "saturation.scaled", LINE_COLOURS[0]), (unscaled, "saturation.unscaled", HIGHLIGHT))
    for values, key, colour in lines:
        fig.add_scatter(x=list(d_ks), y=list(values), mode="lines+markers", name=label(key, lang),
                        line=dict(color=colour, width=3), marker=dict(size=8),
                        hovertemplate=label("saturation.hover", lang) + "<extra></extra>")
    uniform = float(np.log2(n_keys))
    fig.add_hline(y=uniform, line=dict(color=MUTED, dash="dot"),
                  annotation_text=label("saturation.uniform", lang, bits=f"{uniform:.0f}"),
                  annotation_position="top right")
    base_layout(fig, label("saturation.title", lang, n_keys=n_keys), height=360)
    fig.update_xaxes(type="log", title=label("saturation.d_k", lang), tickvals=list(d_ks),
                     ticktext=[str(d) for d in d_ks])
    fig.update_yaxes(title=label("saturation.bits", lang), range=[0, uniform * 1.15])
    fig.update_layout(legend=dict(orientation="h", y=-0.25, x=0))
    return fig
