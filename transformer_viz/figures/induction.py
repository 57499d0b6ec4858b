"""Induction heads forming during training (analysis/induction.py's curve), drawn as one figure: the in-context
loss above, the heads' scores below, on one step axis, so that the drop and the rise line up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer_viz.figures.colours import LINE_COLOURS
from transformer_viz.figures.fit import MIN_FONT_PX
from transformer_viz.figures.look import base_layout
from transformer_viz.i18n import text


def phase_change_figure(curve: Sequence[Mapping], phase_step: int | None = None, *, min_font: int = MIN_FONT_PX,
                        lang: str = "en") -> go.Figure:
    """Above: the loss (nats) on the first half of each sequence and on its repeat. Below: per layer, the best
    head's induction score and previous-token score. A dashed line marks `phase_step` (None: none)."""
    steps = [point["step"] for point in curve]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=(text("induction.losses", lang), text("induction.scores", lang)))
    for key, colour, dash in (("loss_first_half", LINE_COLOURS[0], "solid"), ("loss_repeat", LINE_COLOURS[1], "solid")):
        name = text(f"induction.{key}", lang)
        fig.add_trace(go.Scatter(x=steps, y=[point[key] for point in curve], name=name, mode="lines",
                                 line=dict(color=colour, width=3, dash=dash),
                                 hovertemplate=f"{name}<br>{text('step', lang)} %{{x}}: %{{y:.3f}}<extra></extra>"),
                      row=1, col=1)
    layers = len(curve[0]["induction"]) if curve else 0
    for layer in range(layers):
        for key, dash in (("induction", "solid"), ("previous_token", "dot")):
            name = text(f"induction.{key}_line", lang, layer=layer + 1)
            best = [float(np.max(point[key][layer])) for point in curve]
            fig.add_trace(go.Scatter(x=steps, y=best, name=name, mode="lines",
                                     line=dict(color=LINE_COLOURS[2 + layer], width=3 if key == "induction" else 2,
                                               dash=dash),
                                     hovertemplate=f"{name}<br>{text('step', lang)} %{{x}}: %{{y:.2f}}<extra></extra>"),
                          row=2, col=1)
    if phase_step is not None:
        for row in (1, 2):
            fig.add_vline(x=phase_step, line=dict(color="#888888", dash="dash", width=1.5), row=row, col=1)
    base_layout(fig, text("induction.title", lang), height=560, min_font=min_font)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0.0),
                      hovermode="x unified")
    fig.update_yaxes(title_text=text("induction.nats", lang), rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=text("induction.score", lang), range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text=text("step", lang), row=2, col=1)
    return fig
