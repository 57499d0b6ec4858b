"""Token embeddings and positional encodings as figures (paper section 3.4-3.5).

Every matrix is drawn as positions (rows, first at the top) by dimensions
(columns) with a diverging colour scale centred on 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..recording import check_index
from .common import DIVERGING, LINE_COLOURS, as_numpy, base_layout, symmetric_limit, token_axis, token_texts

MATRIX_HOVER = "%{customdata}<br>position %{y}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>"
POSITIONAL_TITLES = {"sinusoidal": "sinusoidal", "sinusoidal_concat": "[sin | cos]", "learned": "learned",
                     "none": "none: zeros"}
VARIANT_TITLES = {"sinusoidal": "<b>Paper</b><br>sin, cos interleaved",
                  "sinusoidal_concat": "<b>TensorFlow</b><br>[sin | cos] halves",
                  "seed002_bug": "<b>BUG</b> (seed 002)<br>exponent doubled",
                  "learned_init": "<b>Learned</b><br>random init"}
BUG_RED = "#b00020"


def embedding_heatmap_trace(matrix: np.ndarray, tokens: Sequence[str] | None, zmax: float, showscale: bool = True,
                   name: str = "") -> go.Heatmap:
    """One (positions, d_model) matrix as a heatmap trace with token / position / dimension / value hover."""
    positions, dims = matrix.shape
    labels = token_texts(tokens, positions)
    hover_tokens = np.repeat(np.array([f"“{t}”" for t in labels], dtype=object)[:, None], dims, axis=1)
    return go.Heatmap(
        z=matrix, x=np.arange(dims), y=np.arange(positions), customdata=hover_tokens, name=name,
        colorscale=DIVERGING, zmin=-zmax, zmax=zmax, zmid=0.0, showscale=showscale,
        colorbar=dict(thickness=14, len=0.9), hovertemplate=MATRIX_HOVER,
    )


def embedding_heatmap(matrix, tokens: Sequence[str] | None, title: str, zmax: float | None = None) -> go.Figure:
    """A (positions, d_model) matrix (token embeddings, positional encodings or their sum) as tokens × dimensions.

    The colour range is symmetric around 0: ±zmax, or ±max|value| when zmax is None.
    """
    matrix = as_numpy(matrix)  # (positions, d_model)
    limit = zmax if zmax is not None else symmetric_limit(matrix)
    fig = go.Figure(embedding_heatmap_trace(matrix, tokens, limit))
    base_layout(fig, title, height=max(260, 60 + 28 * matrix.shape[0]))
    fig.update_xaxes(title_text="dimension", showgrid=False, zeroline=False)
    fig.update_yaxes(token_axis(tokens, len(matrix), reverse=True), title_text="position")
    return fig


def wave_kind(column: np.ndarray) -> str:
    """"sin" or "cos" for a sinusoidal column (sin 0 = 0, cos 0 = 1); "" for anything else."""
    if math.isclose(column[0], 0.0, abs_tol=1e-6) and np.abs(column).max() <= 1.0 + 1e-6:
        return "sin"
    if math.isclose(column[0], 1.0, abs_tol=1e-6) and np.abs(column).max() <= 1.0 + 1e-6:
        return "cos"
    return ""


def positional_curves(encoding, dims: Sequence[int], tokens: Sequence[str] | None = None) -> go.Figure:
    """Chosen dimensions of a (positions, d_model) encoding as curves over the positions.

    Markers sit on the integer positions (the only values the model sees); the legend
    says whether each dimension is a sine or a cosine, read from its value at position 0.
    """
    encoding = as_numpy(encoding)  # (positions, d_model)
    positions = np.arange(encoding.shape[0])
    labels = token_texts(tokens, len(positions))
    fig = go.Figure()
    for index, dim in enumerate(dims):
        dim = check_index(dim, encoding.shape[1], "dimension")
        column = encoding[:, dim]  # (positions,)
        kind = wave_kind(column)
        label = f"dim {dim} ({kind})" if kind else f"dim {dim}"
        colour = LINE_COLOURS[index % len(LINE_COLOURS)]
        fig.add_trace(go.Scatter(
            x=positions, y=column, name=label, mode="lines+markers", line=dict(color=colour, width=2.5, shape="spline"),
            marker=dict(color=colour, size=8), customdata=labels,
            hovertemplate=f"{label}<br>“%{{customdata}}” position %{{x}}<br>value %{{y:.3f}}<extra></extra>",
        ))
    base_layout(fig, "Waves over the positions", height=440)
    axis = token_axis(tokens, len(positions)) if tokens is not None else dict(dtick=1 if len(positions) <= 24 else 4)
    fig.update_xaxes(axis, title_text="position")
    fig.update_yaxes(title_text="value", range=[-1.15, 1.15] if np.abs(encoding).max() <= 1 else None,
                     zeroline=True, zerolinecolor="#888")
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
                      hovermode="closest", margin=dict(b=20))
    return fig


def position_similarity(encoding, tokens: Sequence[str] | None = None) -> go.Figure:
    """Cosine similarity between every pair of positions of a (positions, d_model) encoding, range [-1, 1].

    An all-zero position (the "none" encoding) has similarity 0 with everything.
    """
    encoding = as_numpy(encoding).astype(np.float64)  # (positions, d_model)
    norms = np.linalg.norm(encoding, axis=1, keepdims=True)  # (positions, 1)
    unit = np.divide(encoding, norms, out=np.zeros_like(encoding), where=norms > 0)
    similarity = unit @ unit.T  # (positions, positions)
    length = len(similarity)
    labels = token_texts(tokens, length)
    pairs = np.array([[f"“{labels[i]}” (position {i}) · “{labels[j]}” (position {j})" for j in range(length)]
                      for i in range(length)], dtype=object)
    fig = go.Figure(go.Heatmap(
        z=similarity, x=np.arange(length), y=np.arange(length), customdata=pairs,
        colorscale=DIVERGING, zmin=-1.0, zmax=1.0, zmid=0.0, colorbar=dict(thickness=14, title="cosine"),
        hovertemplate="%{customdata}<br>cosine similarity %{z:.3f}<extra></extra>",
    ))
    base_layout(fig, "Cosine similarity of two positions", height=520)
    fig.update_traces(colorbar_title_side="right")  # beside the bar: above it, it meets the top tick label
    fig.update_xaxes(token_axis(tokens, length), title_text="position")
    fig.update_yaxes(token_axis(tokens, length, reverse=True), title_text="position")
    return fig


def positional_variants(tables: Mapping[str, np.ndarray]) -> go.Figure:
    """Positional encoding tables side by side, each (max_len, d_model), one shared colour range [-1, 1].

    `tables` as `model.embeddings.encoding_tables` gives them, in the order to draw; keys from
    VARIANT_TITLES. Seed 002's table is a bug, shown as one: its title is red.
    """
    fig = make_subplots(rows=1, cols=len(tables), shared_yaxes=True, horizontal_spacing=0.025,
                        subplot_titles=[VARIANT_TITLES[key] for key in tables])
    for col, (key, table) in enumerate(tables.items(), start=1):
        trace = embedding_heatmap_trace(as_numpy(table), None, 1.0, showscale=col == len(tables),
                                        name=VARIANT_TITLES[key].split("<br>")[0])
        fig.add_trace(trace, row=1, col=col)
        fig.update_xaxes(title_text="dimension", showgrid=False, zeroline=False, row=1, col=col)
    for annotation, key in zip(fig.layout.annotations, tables, strict=True):
        if key == "seed002_bug":
            annotation.font.color = BUG_RED
    max_len, d_model = as_numpy(next(iter(tables.values()))).shape
    base_layout(fig, f"{max_len} positions × {d_model} dimensions, colours −1 to 1", height=560)
    fig.update_layout(margin=dict(t=100))
    fig.update_annotations(font_size=14)
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False)
    fig.update_yaxes(title_text="position", row=1, col=1)
    return fig


def embedding_pipeline(trace, side: str) -> go.Figure:
    """token embedding | + positional encoding | = sum (| after LayerNorm when embed_norm), batch item 0.

    side is "src" or "tgt"; reads `{side}_embed.token` (batch, len, d_model), `.position`
    (len, d_model) and `.out` (batch, len, d_model). One colour range for every panel.
    """
    if side not in ("src", "tgt"):
        raise ValueError(f"side must be 'src' or 'tgt', got {side!r}.")
    config = trace.config
    token = as_numpy(trace[f"{side}_embed.token"])[0]  # (len, d_model)
    position = as_numpy(trace[f"{side}_embed.position"])  # (len, d_model)
    summed = token + position  # (len, d_model)
    tokens = trace.src_tokens if side == "src" else trace.tgt_tokens
    scaled = f" × √{config.d_model}" if config is not None and config.scale_embeddings else ""
    variant = POSITIONAL_TITLES.get(config.positional, config.positional) if config is not None else ""
    panels = [(f"token{scaled}", token), (f"+ position ({variant})", position), ("= sum", summed)]
    if config is not None and config.embed_norm:
        panels.append(("→ LayerNorm", as_numpy(trace[f"{side}_embed.out"])[0]))
    limit = symmetric_limit(*(matrix for _, matrix in panels))
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=[title for title, _ in panels])
    for col, (title, matrix) in enumerate(panels, start=1):
        trace = embedding_heatmap_trace(matrix, tokens, limit, showscale=col == len(panels), name=title)
        fig.add_trace(trace, row=1, col=col)
        fig.update_xaxes(title_text="dimension", showgrid=False, zeroline=False, row=1, col=col)
    stack = "encoder" if side == "src" else "decoder"
    base_layout(fig, f"{'Source' if side == 'src' else 'Target'}: what enters {stack} layer 1 "
                     f"(one colour range: ±{limit:.2f})", height=max(300, 110 + 30 * len(token)))
    fig.update_layout(margin=dict(t=80))
    fig.update_yaxes(token_axis(tokens, len(token), reverse=True))
    fig.update_yaxes(title_text="position", row=1, col=1)
    return fig
