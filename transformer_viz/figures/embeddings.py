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

from transformer_viz.config import POSITIONAL_ENCODINGS
from transformer_viz.figures.attention_arrays import as_numpy
from transformer_viz.figures.colours import DIVERGING, LINE_COLOURS
from transformer_viz.figures.fit import MIN_FONT_PX, at_least
from transformer_viz.figures.look import base_layout, merge_into, styled_figure
from transformer_viz.figures.numbers import symmetric_limit
from transformer_viz.figures.subplots import subplot_axes, subplot_row
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.i18n import text
from transformer_viz.model.rotary import rotary_angles
from transformer_viz.trace.names import check_index

BUG_RED = "#b00020"
VARIANTS = ("sinusoidal", "sinusoidal_concat", "seed002_bug", "learned_init")  # titled by text(f"variant.{key}")


def matrix_hover(lang: str = "en") -> str:
    """The hover of an embedding matrix: token, position, dimension, value."""
    return text("matrix.hover", lang, token="%{customdata}", position="%{y}", dim="%{x}",
                 value="%{z:.3f}") + "<extra></extra>"


def embedding_heatmap_trace(matrix: np.ndarray, tokens: Sequence[str] | None, zmax: float, showscale: bool = True,
                   name: str = "", lang: str = "en") -> go.Heatmap:
    """One (positions, d_model) matrix as a heatmap trace with token / position / dimension / value hover."""
    positions, dims = matrix.shape
    labels = token_texts(tokens, positions)
    hover_tokens = np.repeat(np.array([f"“{t}”" for t in labels], dtype=object)[:, None], dims, axis=1)
    return go.Heatmap(
        z=matrix, x=np.arange(dims), y=np.arange(positions), customdata=hover_tokens, name=name,
        colorscale=DIVERGING, zmin=-zmax, zmax=zmax, zmid=0.0, showscale=showscale,
        colorbar=dict(thickness=14, len=0.9), hovertemplate=matrix_hover(lang),
    )


def embedding_heatmap(matrix, tokens: Sequence[str] | None, title: str, zmax: float | None = None, *,
                      min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """A (positions, d_model) matrix (token embeddings, positional encodings or their sum) as tokens × dimensions.

    The colour range is symmetric around 0: ±zmax, or ±max|value| when zmax is None. No text under `min_font`.
    """
    matrix = as_numpy(matrix)  # (positions, d_model)
    limit = zmax if zmax is not None else symmetric_limit(matrix)
    return styled_figure([embedding_heatmap_trace(matrix, tokens, limit, lang=lang)], {}, title,
                         height=max(260, 60 + 28 * matrix.shape[0]), min_font=min_font, then=dict(
                             xaxis=dict(title=dict(text=text("dimension", lang)), showgrid=False, zeroline=False),
                             yaxis=dict(token_axis(tokens, len(matrix), reverse=True),
                                        title=dict(text=text("position", lang)))))


def wave_kind(column: np.ndarray) -> str:
    """"sin" or "cos" for a sinusoidal column (sin 0 = 0, cos 0 = 1); "" for anything else (all zeros too)."""
    bounded = np.abs(column).max() <= 1.0 + 1e-6
    if math.isclose(column[0], 0.0, abs_tol=1e-6) and bounded and np.abs(column).max() > 1e-6:
        return "sin"
    if math.isclose(column[0], 1.0, abs_tol=1e-6) and bounded:
        return "cos"
    return ""


def encoding_kind(encoding: np.ndarray, positional: str | None) -> str:
    """The positional encoding a (positions, d_model) table was made by: `positional` when given, else
    "none" for an all-zero table and "sinusoidal" for anything else (its columns then say sin or cos)."""
    if positional is None:
        return "none" if not np.any(encoding) else "sinusoidal"
    if positional not in POSITIONAL_ENCODINGS:
        raise ValueError(f"positional must be one of {', '.join(POSITIONAL_ENCODINGS)} or None, got {positional!r}.")
    return positional


def no_encoding_note(fig: go.Figure, lang: str, min_font: int = MIN_FONT_PX) -> None:
    """Say in the figure itself that the model adds no positional encoding (the curves are flat zeros)."""
    fig.add_annotation(no_encoding_annotation(lang, min_font))


def no_encoding_annotation(lang: str, min_font: int = MIN_FONT_PX) -> dict:
    """The annotation of `no_encoding_note`."""
    return dict(text=text("encoding.none_note", lang), xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                font=dict(size=at_least(15, min_font), color=BUG_RED), bgcolor="rgba(255, 255, 255, 0.85)")


def positional_curves(encoding, dims: Sequence[int], tokens: Sequence[str] | None = None, *,
                      positional: str | None = None, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Chosen dimensions of a (positions, d_model) encoding as curves over the positions.

    Markers sit on the integer positions (the only values the model sees). `positional` is the
    encoding's kind (POSITIONAL_ENCODINGS; None: read from the table). The legend says whether a
    sinusoidal dimension is a sine or a cosine (its value at position 0), or that a table is learned;
    with "none" the figure says that the model adds no positional encoding. No text under `min_font`.
    """
    encoding = as_numpy(encoding)  # (positions, d_model)
    positional = encoding_kind(encoding, positional)
    positions = np.arange(encoding.shape[0])
    labels = token_texts(tokens, len(positions))
    traces = []
    for index, dim in enumerate(dims):
        dim = check_index(dim, encoding.shape[1], "dimension")
        column = encoding[:, dim]  # (positions,)
        kind = text("learned", lang) if positional == "learned" else \
            wave_kind(column) if positional.startswith("sinusoidal") else ""
        name = text("curves.dim_kind" if kind else "curves.dim", lang, dim=dim, kind=kind)
        colour = LINE_COLOURS[index % len(LINE_COLOURS)]
        traces.append(go.Scatter(
            x=positions, y=column, name=name, mode="lines+markers", line=dict(color=colour, width=2.5, shape="spline"),
            marker=dict(color=colour, size=8), customdata=labels,
            hovertemplate=name + "<br>" + text("curves.hover", lang, token="%{customdata}", position="%{x}",
                                                value="%{y:.3f}") + "<extra></extra>",
        ))
    layout = dict(annotations=[no_encoding_annotation(lang, min_font)]) if positional == "none" else {}
    axis = token_axis(tokens, len(positions)) if tokens is not None else dict(dtick=1 if len(positions) <= 24 else 4)
    return styled_figure(traces, layout, text(f"curves.title.{positional}", lang), height=440, then=dict(
        xaxis=dict(axis, title=dict(text=text("position", lang))),
        yaxis=dict(title=dict(text=text("value", lang)), range=[-1.15, 1.15] if np.abs(encoding).max() <= 1 else None,
                   zeroline=True, zerolinecolor="#888"),
        # Under the position axis's labels and title, which grow with the font.
        legend=dict(orientation="h", yanchor="top", y=-0.2 * at_least(14, min_font) / 14, xanchor="left", x=0.0),
        hovermode="closest",
        margin=dict(b=20)), min_font=min_font)


def position_similarity(encoding, tokens: Sequence[str] | None = None, *, positional: str | None = None,
                        min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Cosine similarity between every pair of positions of a (positions, d_model) encoding, range [-1, 1].

    An all-zero position has similarity 0 with everything; with the "none" encoding (`positional`, or
    an all-zero table) the figure says that the model adds no positional encoding. No text under `min_font`.
    """
    encoding = as_numpy(encoding).astype(np.float64)  # (positions, d_model)
    positional = encoding_kind(encoding, positional)
    norms = np.linalg.norm(encoding, axis=1, keepdims=True)  # (positions, 1)
    unit = np.divide(encoding, norms, out=np.zeros_like(encoding), where=norms > 0)
    similarity = unit @ unit.T  # (positions, positions)
    length = len(similarity)
    labels = token_texts(tokens, length)
    pairs = np.array([[text("similarity.pair", lang, a=labels[i], i=i, b=labels[j], j=j) for j in range(length)]
                      for i in range(length)], dtype=object)
    heatmap = go.Heatmap(
        z=similarity, x=np.arange(length), y=np.arange(length), customdata=pairs,
        colorscale=DIVERGING, zmin=-1.0, zmax=1.0, zmid=0.0,
        # The title beside the bar: above it, it meets the top tick label.
        colorbar=dict(thickness=14, title=dict(text=text("similarity.colorbar", lang), side="right")),
        hovertemplate="%{customdata}<br>" + text("similarity.hover", lang, value="%{z:.3f}") + "<extra></extra>",
    )
    position = dict(title=dict(text=text("position", lang)))
    return styled_figure([heatmap], dict(annotations=[no_encoding_annotation(lang, min_font)])
                         if positional == "none" else {}, text("similarity.title", lang), height=520, then=dict(
                             xaxis=dict(token_axis(tokens, length), **position),
                             yaxis=dict(token_axis(tokens, length, reverse=True), **position)), min_font=min_font)


def positional_variants(tables: Mapping[str, np.ndarray], *, min_font: int = MIN_FONT_PX,
                        lang: str = "en") -> go.Figure:
    """Positional encoding tables side by side, each (max_len, d_model), one shared colour range [-1, 1].

    `tables` as `model.embeddings.encoding_tables` gives them, in the order to draw; keys from
    VARIANTS. Seed 002's table is a bug, shown as one: its title is red and says what is wrong.
    No text under `min_font`.
    """
    titles = [text(f"variant.{key}", lang) for key in tables]
    fig = make_subplots(rows=1, cols=len(tables), shared_yaxes=True, horizontal_spacing=0.025, subplot_titles=titles)
    for col, (table, title) in enumerate(zip(tables.values(), titles, strict=True), start=1):
        trace = embedding_heatmap_trace(as_numpy(table), None, 1.0, showscale=col == len(tables),
                                        name=title.split("<br>")[0], lang=lang)
        fig.add_trace(trace, row=1, col=col)
        fig.update_xaxes(title_text=text("dimension", lang), showgrid=False, zeroline=False, row=1, col=col)
    for annotation, key in zip(fig.layout.annotations, tables, strict=True):
        if key == "seed002_bug":
            annotation.font.color = BUG_RED
    max_len, d_model = as_numpy(next(iter(tables.values()))).shape
    base_layout(fig, text("variants.title", lang, positions=max_len, dims=d_model), height=560, min_font=min_font)
    fig.update_layout(margin=dict(t=100))
    fig.update_annotations(font_size=at_least(14, min_font))
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False)
    fig.update_yaxes(title_text=text("position", lang), row=1, col=1)
    return fig


def embedding_pipeline(trace, side: str, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """token embedding | + positional encoding | = sum (| after LayerNorm when embed_norm), batch item 0.

    side is "src" or "tgt"; reads `{side}_embed.token` (batch, len, d_model), `.position`
    (len, d_model) and `.out` (batch, len, d_model). One colour range for every panel. No text under `min_font`.
    """
    if side not in ("src", "tgt"):
        raise ValueError(f"side must be 'src' or 'tgt', got {side!r}.")
    config = trace.config
    token = as_numpy(trace[f"{side}_embed.token"])[0]  # (len, d_model)
    position = as_numpy(trace[f"{side}_embed.position"])  # (len, d_model)
    summed = token + position  # (len, d_model)
    tokens = trace.src_tokens if side == "src" else trace.tgt_tokens
    heading = f"pipeline.title.{trace.form.side_names[side]}"  # one stream: no "target"
    scaled = f" × √{config.d_model}" if config is not None and config.scale_embeddings else ""
    positional = config.positional if config is not None else None
    variant = "" if positional is None else text("pipeline.rotary" if positional == "rotary" else
                                                   f"encoding.{positional}", lang)
    panels = [(text("pipeline.token", lang) + scaled, token), (text("pipeline.position", lang, variant=variant),
                                                                 position), (text("pipeline.sum", lang), summed)]
    if config is not None and config.embed_norm:
        panels.append(("→ LayerNorm", as_numpy(trace[f"{side}_embed.out"])[0]))
    limit = symmetric_limit(*(matrix for _, matrix in panels))
    layout = subplot_row(len(panels), 0.03, shared_yaxes=True, titles=[title for title, _ in panels])
    traces, then = [], dict(margin=dict(t=80))
    for col, (title, matrix) in enumerate(panels, start=1):
        trace = embedding_heatmap_trace(matrix, tokens, limit, showscale=col == len(panels), name=title, lang=lang)
        trace.xaxis, trace.yaxis = subplot_axes(col).values()
        traces.append(trace)
        x, y = ("xaxis", "yaxis") if col == 1 else (f"xaxis{col}", f"yaxis{col}")
        merge_into(layout[x], dict(title=dict(text=text("dimension", lang)), showgrid=False, zeroline=False))
        then[y] = token_axis(tokens, len(token), reverse=True)
    then["yaxis"]["title"] = dict(text=text("position", lang))
    for annotation in layout.get("annotations", ()):  # the panels' titles
        annotation["font"]["size"] = at_least(annotation["font"]["size"], min_font)
    return styled_figure(traces, layout, text(heading, lang, limit=f"{limit:.2f}"),
                         height=max(300, 110 + 30 * len(token)), then=then, min_font=min_font)


def side_encoding(trace, side: str):
    """The positional encoding a side's tokens got, (seq_len, d_model), and those tokens."""
    return as_numpy(trace[f"{side}_embed.position"]), trace.src_tokens if side == "src" else trace.tgt_tokens


def trace_curves(trace, side: str, dims: tuple[int, ...], *, min_font: int = MIN_FONT_PX,
                 lang: str = "en") -> go.Figure:
    """`positional_curves` of the encoding a run's `side` ("src" or "tgt") got."""
    encoding, tokens = side_encoding(trace, side)
    return positional_curves(encoding, list(dims), tokens, positional=trace.config.positional, min_font=min_font,
                             lang=lang)


def trace_similarity(trace, side: str, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """`position_similarity` of the encoding a run's `side` got."""
    encoding, tokens = side_encoding(trace, side)
    return position_similarity(encoding, tokens, positional=trace.config.positional, min_font=min_font, lang=lang)


def rotary_figure(trace, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Rotary position embeddings: the angle by which each position (rows, the run's tokens) turns each pair of
    dimensions (2i, 2i+1) of every head's q and k (columns), shown modulo a full turn on a cyclic scale: the first
    pairs spin fast, the last barely move. The score of two tokens sees only the difference of their angles."""
    config = trace.config
    tokens = trace.tgt_tokens if trace.src_tokens is None else trace.src_tokens
    length = len(tokens) if tokens is not None else config.max_len
    angles = rotary_angles(length, config.d_head).double().numpy()  # (length, d_head / 2), radians
    degrees = np.degrees(angles) % 360.0  # (length, pairs)
    pairs = angles.shape[1]
    cells = np.array([[text("rotary.cell", lang, token=token, position=p, pair=i, first=2 * i, second=2 * i + 1,
                            turns=angles[p, i] / (2 * math.pi), degrees=degrees[p, i])
                       for i in range(pairs)] for p, token in enumerate(token_texts(tokens, length))], dtype=object)
    heatmap = go.Heatmap(z=degrees, x=np.arange(pairs), y=np.arange(length), zmin=0, zmax=360, colorscale="Twilight",
                         customdata=cells, hovertemplate="%{customdata}<extra></extra>",
                         colorbar=dict(thickness=14, title=dict(text=text("rotary.angle", lang), side="right"),
                                       tickvals=[0, 90, 180, 270, 360]))
    return styled_figure(
        [heatmap], {}, text("rotary.title", lang, d_head=config.d_head, pairs=pairs),
        height=round(max(320, 140 + 22 * length)), min_font=min_font,
        then=dict(xaxis=dict(title=dict(text=text("rotary.x", lang)), dtick=1 if pairs <= 16 else None),
                  yaxis=dict(token_axis(tokens, length, reverse=True), title=dict(text=text("rotary.y", lang)))))
