"""All heads at once (paper section 3.2): every layer × head of one attention kind as one heatmap.

Keys are on x, queries on y with the first query at the top, in tiles separated by NaN
gutters. Cells the mask blocks are covered by one grey path; a near-transparent
scatter with one point per tile makes the tiles clickable in Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from transformer_viz.figures.attention_arrays import AttentionArrays, all_layers, check_cell, check_choice, value_plane
from transformer_viz.figures.clicks import selected_pair, target_marker
from transformer_viz.figures.colours import BLOCKED_GREY, HIGHLIGHT
from transformer_viz.figures.fit import GAP_PX, MIN_FONT_PX, at_least, fit_title, widest_em
from transformer_viz.figures.look import styled_figure
from transformer_viz.figures.token_axes import token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import token_labels

GRID_PX = 900  # the width the grid is laid out for; Streamlit stretches it to its column
TICK_FONT_PX = 12  # the tokens under and beside the tiles
TICK_PX = 13  # a row or column at least this many pixels high/wide gets its token as tick text (at TICK_FONT_PX)
TILE_PX = (90, 360)  # the smallest and largest height of one tile
TOP_PX, RIGHT_PX = 96, 96  # room for the title and head names; for the colour bar
TITLE_LINE_PX = 26  # one more line of title
# The colour bar a fixed 22 px right of the tiles, whatever the width the grid is drawn at (Plotly's default, 2 % of
# the plot's width, outgrew the right margin in a wide chart): grids of one width line up (Compare's three).
COLOUR_BAR = dict(thickness=14, x=1.0, xanchor="left", xpad=22)


@dataclass(frozen=True)
class GridLayout:
    """Pixel geometry of `attention_grid` at its nominal width (margins and sizes in px)."""

    gap: int  # cells between two tiles
    min_font: int  # no text smaller
    tick_font: int  # of the tokens beside the tiles
    cell_width: float
    cell_height: float
    show_key_ticks: bool  # tokens under the columns, when a column is wide enough to read one
    show_query_ticks: bool
    key_step: int  # every key_step-th token named: a larger font than the screen's may need two cells for one
    query_step: int
    left: int
    right: int
    top: int
    bottom: int
    height: int  # of the whole figure
    target_size: float  # the click target of a tile
    layer_title_shift: int  # how far left of the plot the "Layer i" titles sit


def grid_layout(layers: int, heads: int, q_len: int, k_len: int, query_label_chars: int, key_label_chars: int,
                width: int = GRID_PX, min_font: int = MIN_FONT_PX) -> GridLayout:
    """Lay out layers × heads tiles of q_len × k_len cells in `width` px.

    Cells are square unless a tile would leave TILE_PX; tokens label the axes only where a
    cell has room for them at TICK_FONT_PX (or `min_font`, if larger); label lengths (in characters) size the
    margins they need.
    """
    font = at_least(TICK_FONT_PX, min_font)
    gap = max(1, round(0.08 * max(q_len, k_len)))
    left = 40 + 8 * font / TICK_FONT_PX * max(query_label_chars, 1)
    right = RIGHT_PX + 7 * (font - TICK_FONT_PX)  # the colour bar and its title grow with the font
    cell_width = (width - left - right) / (heads * (k_len + gap) - gap)
    cell_height = float(np.clip(cell_width * q_len, *TILE_PX)) / q_len
    show_keys, show_queries = cell_width >= TICK_PX, cell_height >= TICK_PX  # as on a screen, at any font
    tick_px = TICK_PX + font - TICK_FONT_PX
    left = round(left) if show_queries else 40
    bottom = round(16 + 7 * font / TICK_FONT_PX * max(key_label_chars, 1)) if show_keys else 16
    height = round(cell_height * (layers * (q_len + gap) - gap)) + TOP_PX + bottom
    return GridLayout(
        gap=gap, min_font=min_font, tick_font=font, cell_width=cell_width, cell_height=cell_height,
        show_key_ticks=show_keys, show_query_ticks=show_queries, key_step=math.ceil(tick_px / cell_width),
        query_step=math.ceil(tick_px / cell_height), left=left, right=right, top=TOP_PX, bottom=bottom,
        height=height,
        target_size=0.7 * min(cell_width * k_len, cell_height * q_len),
        layer_title_shift=left - 30 if show_queries else 8,
    )


def attention_grid(trace, kind: str, value: str = "weights", *, highlight: tuple[int, int] | None = None,
                   width: int | None = None, whose: str = "", min_font: int = MIN_FONT_PX,
                   lang: str = "en") -> go.Figure:
    """Every layer (rows) × head (columns) of one attention kind, drawn as ONE heatmap.

    The tiles sit in one z matrix, (layers·(q_len+gap) - gap, heads·(k_len+gap) - gap),
    with NaN gutters, because one heatmap redraws far faster than one per head. The axes
    are categories named after layer/head and token, so the hover names the layer, head,
    query and key without a string per cell. Trace 1 holds one click target per tile
    with customdata [layer, head] (read it with `grid_selection`); its hover names the
    tile, the cells around it show their own numbers. `highlight` = (layer, head) outlines
    one tile; `width` is the pixel width to lay out for (heights, ticks and targets follow); `whose` names the
    model in front of the title ("The broken model"); `min_font`: no text smaller (presenter mode: PROJECTOR_FONT_PX);
    `lang` is the language of every word drawn.
    """
    check_choice(kind, value)
    # weights, scores, masked (layers, heads, q_len, k_len); mask (layers, q_len, k_len)
    weights, scores, masked, mask = (np.stack(planes) for planes in zip(*all_layers(trace, kind), strict=True))
    layers, heads, q_len, k_len = weights.shape
    if highlight is not None:
        highlight = check_cell(highlight, layers, heads, ("layer", "head"))
    width = width or GRID_PX
    q_tokens, k_tokens = trace.attention_tokens(kind)
    layout = grid_layout(layers, heads, q_len, k_len, max(map(len, token_labels(q_tokens, q_len)), default=1),
                         max(map(len, token_labels(k_tokens, k_len)), default=1), width, min_font)
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    y_names = _names("grid.row", layers, q_text, layout.gap, lang)
    x_names = _names("grid.column", heads, k_text, layout.gap, lang)

    traces = [_value_heatmap(AttentionArrays(weights, scores, masked, mask[:, None]), value, x_names, y_names,
                             layout, lang),
              _click_targets(weights.shape, x_names, y_names, layout, lang)]
    shapes = _tile_shapes(mask, heads, value, highlight, layout.gap)
    annotations = tile_titles(weights.shape, layout, lang)
    title = _grid_title(kind, value, layers, heads, lang)
    title = f"{whose} · {title}" if whose else title
    # A title too long for the width takes two lines (fit_title): the head names move down by one.
    extra = fit_title(title, width, min_font=min_font)[0].count("<br>") * TITLE_LINE_PX
    margin = dict(l=layout.left, r=layout.right, t=layout.top + extra, b=layout.bottom)
    xaxis, yaxis = tile_axes(x_names, y_names, k_text, q_text, weights.shape, layout)
    return styled_figure(traces, dict(shapes=shapes, annotations=annotations) if shapes else
                         dict(annotations=annotations), title, layout.height + extra, width=width,
                         then=dict(margin=margin, plot_bgcolor="#ffffff", xaxis=xaxis, yaxis=yaxis), min_font=min_font)


def grid_selection(event) -> tuple[int, int] | None:
    """(layer, head) of the tile clicked in `attention_grid`, from st.plotly_chart's selection; else None."""
    return selected_pair(event)


def _value_heatmap(arrays: AttentionArrays, value: str, x_names: list[str], y_names: list[str], layout: GridLayout,
                   lang: str) -> go.Heatmap:
    """The tiles of `value` (arrays (layers, heads, q_len, k_len)) as one heatmap; the hover shows whichever of
    weight and scaled score the colour does not."""
    z, zmin, zmax, colorscale = value_plane(value, arrays)
    other = {"weights": arrays.scores, "scores": arrays.weights,
             "masked_scores": np.stack([arrays.weights, arrays.scores], -1)}[value]
    weight, raw, masked_score = (text(f"cell_value.{v}", lang) for v in ("weights", "scores", "masked_scores"))
    number = {"weights": f"{weight} <b>%{{z:.3f}}</b><br>{raw} %{{customdata:.3f}}",
              "scores": f"{raw} <b>%{{z:.3f}}</b><br>{weight} %{{customdata:.3f}}",
              "masked_scores": f"{masked_score} <b>%{{z:.4~g}}</b><br>{raw} %{{customdata[1]:.3f}}<br>"
                               f"{weight} %{{customdata[0]:.3f}}"}[value]
    return go.Heatmap(
        # numpy arrays, not lists: Plotly validates a list element by element (tens of ms here).
        z=_tile(z, layout.gap), x=np.array(x_names), y=np.array(y_names), customdata=_tile(other, layout.gap),
        zmin=zmin, zmax=zmax, colorscale=colorscale, hoverongaps=False, name="attention",
        colorbar=dict(title=dict(text=text(f"cell_value.{value}", lang), side="right"), **COLOUR_BAR,
                      len=min(1.0, 420 / layout.height)),
        hovertemplate=f"%{{y}}<br>%{{x}}<br>{number}<extra></extra>",
    )


def _click_targets(shape: tuple[int, ...], x_names: list[str], y_names: list[str], layout: GridLayout,
                   lang: str) -> go.Scatter:
    """One near-transparent square at the centre of each tile, customdata [layer, head]; shape as the weights'."""
    layers, heads, q_len, k_len = shape
    centre_x = [x_names[h * (k_len + layout.gap) + k_len // 2] for h in range(heads)]
    centre_y = [y_names[layer * (q_len + layout.gap) + q_len // 2] for layer in range(layers)]
    return go.Scatter(
        x=centre_x * layers, y=np.repeat(centre_y, heads).tolist(), mode="markers", name="tiles",
        marker=target_marker(layout.target_size),
        customdata=[[layer, head] for layer in range(layers) for head in range(heads)],
        hovertext=[f"<b>{text('layer_head', lang, layer=layer + 1, head=head + 1)}</b><br>"
                   + text("grid.open", lang) for layer in range(layers) for head in range(heads)],
        hovertemplate="%{hovertext}<extra></extra>", showlegend=False,
    )


def _tile_shapes(mask: np.ndarray, heads: int, value: str, highlight: tuple[int, int] | None, gap: int) -> list[dict]:
    """Grey over the blocked cells (mask (layers, q_len, k_len), True = may attend; not on raw scores) and an
    outline around the highlighted (layer, head)."""
    _, q_len, k_len = mask.shape
    shapes = []
    if value != "scores" and not mask.all():
        shapes.append(dict(type="path", path=blocked_path(mask, heads, gap), fillcolor=BLOCKED_GREY,
                           line=dict(color=BLOCKED_GREY, width=1),  # also hides the anti-aliased seams at the edges
                           layer="above"))
    if highlight is not None:
        top_row, left_col = highlight[0] * (q_len + gap), highlight[1] * (k_len + gap)
        shapes.append(dict(type="rect", x0=left_col - 0.5, x1=left_col + k_len - 0.5, y0=top_row - 0.5,
                           y1=top_row + q_len - 0.5, line=dict(color=HIGHLIGHT, width=3), layer="above"))
    return shapes


def tile_titles(shape: tuple[int, ...], layout: GridLayout, lang: str) -> list[dict]:
    """"Head h" over each column of tiles, "Layer l" beside each row; shape as the weights'."""
    layers, heads, q_len, k_len = shape
    gap = layout.gap
    smallest = at_least(MIN_FONT_PX, layout.min_font)
    # Head names as large as fit over a tile (Head 1Head 2 in narrow tiles otherwise).
    head_font = int(np.clip((layout.cell_width * k_len - 2 * GAP_PX) // widest_em(
        [text("head", lang, head=heads)]), smallest, max(15, smallest)))
    # All titles at once: add_annotation one at a time costs ~3 ms each.
    return [
        *(dict(x=head * (k_len + gap) + (k_len - 1) / 2, y=1, yref="paper", yanchor="bottom",
               text=text("head", lang, head=head + 1), showarrow=False, font=dict(size=head_font))
          for head in range(heads)),
        *(dict(x=0, xref="paper", xanchor="right", xshift=-layout.layer_title_shift,
               y=layer * (q_len + gap) + (q_len - 1) / 2, text=text("layer", lang, layer=layer + 1),
               textangle=-90, showarrow=False, font=dict(size=max(15, smallest))) for layer in range(layers)),
    ]


def _grid_title(kind: str, value: str, layers: int, heads: int, lang: str) -> str:
    """"Encoder self-attention · Weights · 2 layers × 4 heads"."""
    size = (text("grid.layers" if layers > 1 else "grid.one_layer", lang, n=layers) + " × "
            + text("grid.heads" if heads > 1 else "grid.one_head", lang, n=heads))
    return " · ".join((text(f"kind.{kind}", lang), text(f"values.{value}", lang), size))


def tile_axes(x_names: list[str], y_names: list[str], k_text: list[str], q_text: list[str],
              shape: tuple[int, ...], layout: GridLayout) -> tuple[dict, dict]:
    """The category axes (x, y), tokens as tick text under the tiles where a cell has room for them."""
    layers, heads, q_len, k_len = shape
    names = dict(showgrid=False, zeroline=False, fixedrange=True, tickfont=dict(size=layout.tick_font),
                 tickmode="array")
    keys = _every(_tile_names(x_names, heads, k_len, layout.gap), k_text * heads, k_len, layout.key_step)
    queries = _every(_tile_names(y_names, layers, q_len, layout.gap), q_text * layers, q_len, layout.query_step)
    no_ticks = dict(tickvals=[], ticktext=[])
    # Explicit ranges: autorange would pad the axes to fit the large click targets.
    xaxis = dict(**names, **(keys if layout.show_key_ticks else no_ticks), automargin=True,
                 range=[-0.5, len(x_names) - 0.5])
    yaxis = dict(**names, **(queries if layout.show_query_ticks else no_ticks), automargin=False,
                 range=[len(y_names) - 0.5, -0.5])
    return xaxis, yaxis


def _every(names: list[str], texts: list[str], length: int, step: int) -> dict:
    """Tick values and texts of every `step`-th token of each tile (`length` tokens a tile)."""
    shown = [i for i in range(len(names)) if i % length % step == 0]
    return dict(tickvals=[names[i] for i in shown], ticktext=[texts[i] for i in shown])


def _names(key: str, count: int, texts: list[str], gap: int, lang: str) -> list[str]:
    """Category names of the grid's rows (key "grid.row": "Layer 2 · query 3 “the”") or columns, gutters "gap 1.0".

    Each name is unique: a category axis merges equal names into one row.
    """
    names = [text(key, lang, block=block + 1, index=i, text=texts[i]) if i < len(texts)
             else text("grid.gap", lang, block=block, index=i)
             for block in range(count) for i in range(len(texts) + gap)]
    return names[:-gap]


def _tile_names(names: list[str], count: int, length: int, gap: int) -> list[str]:
    """The category names that belong to tiles (not gutters), in order."""
    return [names[block * (length + gap) + i] for block in range(count) for i in range(length)]


def _tile(values: np.ndarray, gap: int) -> np.ndarray:
    """(layers, heads, q_len, k_len, *extra) -> (rows, cols, *extra) float32, NaN gutters `gap` cells wide."""
    layers, heads, q_len, k_len, *extra = values.shape
    padded = np.full((layers, heads, q_len + gap, k_len + gap, *extra), np.nan, np.float32)
    padded[:, :, :q_len, :k_len] = values
    rows = padded.swapaxes(1, 2).reshape(layers * (q_len + gap), heads * (k_len + gap), *extra)
    return rows[:-gap, :-gap]


def blocked_rectangles(blocked: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Blocked cells (q_len, k_len) as (top, bottom, left, right) half-open rectangles.

    Runs within a row, merged with the same run in the rows below (a padding column is one rectangle).
    """
    rectangles, open_runs = [], {}
    for row, cells in enumerate([*blocked, np.zeros(blocked.shape[1], bool)]):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], cells.astype(np.int8), [0]])))
        runs = set(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))
        for run in [r for r in open_runs if r not in runs]:
            rectangles.append((open_runs.pop(run), row, *run))
        for run in runs:
            open_runs.setdefault(run, row)
    return rectangles


def blocked_path(mask: np.ndarray, heads: int, gap: int) -> str:
    """One SVG path over every blocked cell of `attention_grid`'s tiles (`gap` cells apart).

    mask (layers, q_len, k_len), True = may attend; the same for every head of a layer.
    """
    layers, q_len, k_len = mask.shape
    parts = []
    for layer in range(layers):
        for top, bottom, left, right in blocked_rectangles(~mask[layer]):
            y0, y1 = layer * (q_len + gap) + top - 0.5, layer * (q_len + gap) + bottom - 0.5
            for head in range(heads):
                x0, x1 = head * (k_len + gap) + left - 0.5, head * (k_len + gap) + right - 0.5
                parts.append(f"M{x0:g},{y0:g}H{x1:g}V{y1:g}H{x0:g}Z")
    return "".join(parts)
