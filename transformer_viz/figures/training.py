"""Training figures: the loss and accuracy curves, and one head's attention taking shape over the steps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from transformer_viz.figures.attention_arrays import as_numpy
from transformer_viz.figures.colours import LINE_COLOURS, SEQUENTIAL
from transformer_viz.figures.fit import MIN_FONT_PX, at_least
from transformer_viz.figures.look import base_layout
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.i18n import text


def loss_curve(history: Sequence[tuple[int, float, float]], *, min_font: int = MIN_FONT_PX,
               lang: str = "en") -> go.Figure:
    """Cross-entropy loss (left axis) and token accuracy in [0, 1] (right axis) against the training step.

    history: (step, loss, accuracy) tuples in step order. No text under `min_font`.
    """
    steps, losses, accuracies = (list(column) for column in zip(*history, strict=True)) if history else ([], [], [])
    step, loss, accuracy = (text(key, lang) for key in ("step", "loss", "accuracy"))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=steps, y=losses, name=loss, mode="lines", line=dict(color=LINE_COLOURS[0], width=3),
                             hovertemplate=f"{step} %{{x}}<br>{loss} %{{y:.4f}}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=steps, y=accuracies, name=accuracy, mode="lines",
                             line=dict(color=LINE_COLOURS[1], width=3, dash="dash"),
                             hovertemplate=f"{step} %{{x}}<br>{accuracy} %{{y:.1%}}<extra></extra>"), secondary_y=True)
    base_layout(fig, text("loss.title", lang), height=380, min_font=min_font)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
                      hovermode="x unified")
    fig.update_xaxes(title_text=step, showgrid=False)
    fig.update_yaxes(title_text=loss, title_font_color=LINE_COLOURS[0], rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text=accuracy, title_font_color=LINE_COLOURS[1], range=[0, 1.02], tick0=0,
                     dtick=0.2, tickformat=".0%", showgrid=False, secondary_y=True)
    fig.update_xaxes(ticklabelstandoff=8)  # below the accuracy axis's "0%", level with the plot's bottom
    if not history:
        fig.add_annotation(text=text("loss.empty", lang), showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                           font=dict(size=18, color="#888"))
    return fig


def attention_heatmap_trace(weights: np.ndarray, query_labels: list[str], key_labels: list[str],
                            lang: str = "en") -> go.Heatmap:
    """One (q_len, k_len) weight matrix on integer positions, colours fixed to [0, 1]; labels already escaped."""
    q_len, k_len = weights.shape
    pairs = np.array([[text("animation.pair", lang, query=query_labels[i], i=i, key=key_labels[j], j=j)
                       for j in range(k_len)] for i in range(q_len)], dtype=object)
    weight = text("cell_value.weights", lang)
    return go.Heatmap(z=weights, x=np.arange(k_len), y=np.arange(q_len), customdata=pairs, colorscale=SEQUENTIAL,
                      zmin=0.0, zmax=1.0, colorbar=dict(thickness=14, title=weight),
                      hovertemplate=f"%{{customdata}}<br>{weight} %{{z:.3f}}<extra></extra>")


def attention_animation(snapshots: Sequence[tuple[int, np.ndarray]], query_tokens: Sequence[str] | None,
                        key_tokens: Sequence[str] | None, title: str, *, min_font: int = MIN_FONT_PX,
                        lang: str = "en") -> go.Figure:
    """One head's (or the head-averaged) attention over training as Plotly frames, with play / pause and a slider.

    snapshots: (step, weights (q_len, k_len)) in step order; colours fixed to [0, 1] so frames compare. No text
    under `min_font`.
    """
    if not snapshots:
        fig = base_layout(go.Figure(), title, height=420, min_font=min_font)
        fig.add_annotation(text=text("animation.empty", lang), showarrow=False,
                           xref="paper", yref="paper", x=0.5, y=0.5, font=dict(size=18, color="#888"))
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        return fig
    matrices = [(step, as_numpy(weights)) for step, weights in snapshots]  # (q_len, k_len) each
    q_len, k_len = matrices[0][1].shape
    queries, keys = token_texts(query_tokens, q_len), token_texts(key_tokens, k_len)
    def at_step(step: int) -> str:
        return f"{title} — {text('animation.step', lang, step=step)}"

    frames = [go.Frame(name=str(step), data=[attention_heatmap_trace(w, queries, keys, lang)], traces=[0],
                       layout=dict(title_text=at_step(step))) for step, w in matrices]
    fig = go.Figure(data=frames[0].data, frames=frames)
    base_layout(fig, at_step(matrices[0][0]), height=max(420, 200 + 34 * q_len), min_font=min_font)
    play = dict(frame=dict(duration=350, redraw=True), transition=dict(duration=0), fromcurrent=True, mode="immediate")
    pause = dict(frame=dict(duration=0, redraw=False), transition=dict(duration=0), mode="immediate")
    for data in (fig.data[0], *(frame.data[0] for frame in frames)):
        data.colorbar.title.side = "right"  # beside the bar: above it, it meets the top tick label
    fig.update_layout(
        margin=dict(l=10, r=10, t=50, b=140),
        # One button above the other: side by side they reach the slider's label in a narrow column.
        updatemenus=[dict(type="buttons", direction="down", x=0.0, y=-0.2, xanchor="left", yanchor="top",
                          pad=dict(t=0, r=10), showactive=False,
                          buttons=[dict(label=text("animation.play", lang), method="animate", args=[None, play]),
                                   dict(label=text("animation.pause", lang), method="animate",
                                        args=[[None], pause])])],
        sliders=[dict(active=0, x=0.22, len=0.78, y=-0.16, yanchor="top", pad=dict(t=0),
                      currentvalue=dict(prefix=text("animation.prefix", lang), font=dict(size=at_least(15, min_font))),
                      steps=[dict(label=str(step), method="animate",
                                  args=[[str(step)], dict(pause, frame=dict(duration=0, redraw=True))])
                             for step, _ in matrices])],
    )
    fig.update_xaxes(token_axis(key_tokens, k_len), title_text=text("key", lang))
    fig.update_yaxes(token_axis(query_tokens, q_len, reverse=True), title_text=text("query", lang))
    return fig
