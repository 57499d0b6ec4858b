"""One attention head (paper section 3.2): a large heatmap, a line view; and the entropy of every head.

Every builder takes a Trace (batch item 0 is drawn) and returns a go.Figure. Keys are
on x, queries on y with the first query at the top. Weights use one fixed 0-1 colour
range; scores a range symmetric about 0. Cells the mask blocks are drawn grey. A
near-transparent scatter on top makes cells and query tokens clickable in Streamlit,
which reports selections of scatter points but not of heatmap cells. All heads at
once: `grid.py`; masks: `masks.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from transformer_viz.analysis.measures import entropy_bits
from transformer_viz.figures.attention_arrays import (
    AttentionArrays,
    all_layers,
    attention_arrays,
    check_cell,
    check_choice,
    mask_value,
    value_plane,
)
from transformer_viz.figures.clicks import selected_pair, target_marker
from transformer_viz.figures.colours import HIGHLIGHT, MUTED, SEQUENTIAL
from transformer_viz.figures.fit import (
    GAP_PX,
    LINE_EM,
    MIN_FONT_PX,
    TEXT_MIN_WIDTH,
    TICK_FONT_PX,
    Ticks,
    at_least,
    cell_text,
    spaced,
    text_em,
    tick_labels,
    tick_plan,
    widest_em,
)
from transformer_viz.figures.look import merge_into, styled_figure
from transformer_viz.figures.masks import blocked_layer
from transformer_viz.figures.numbers import format_number, format_numbers
from transformer_viz.figures.token_axes import cell_label, token_axis, token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import ATTENTION_KINDS, check_index

HEAD_PX = 560  # the plot size one head is laid out for
TITLE_PX, AXIS_TITLE_PX, COLORBAR_PX = 50, 26, 80  # room for the title; an axis title; a colour bar with its title
LINES_TOP_PX = 110  # above the line view: its title and the "queries" / "keys" headings
LINES_PX = 300  # the narrowest the line view is drawn at (2/5 of the main column)
LINES_SIDE = 0.65  # x beyond each column of tokens (at 0 and 1) for its labels, at least


def cell_selection(event) -> tuple[int, int] | None:
    """(query, key) of the cell clicked in `attention_heatmap`, from st.plotly_chart's selection; else None."""
    return selected_pair(event)


def query_selection(event) -> int | None:
    """The query token clicked in `attention_lines` (its left column), from st.plotly_chart's selection; else None."""
    pair = selected_pair(event, size=1)
    return None if pair is None else pair[0]


def attention_heatmap(trace, kind: str, layer: int, head: int, value: str = "weights",
                      show_values: bool | None = None, *, highlight: tuple[int, int] | None = None,
                      width: int = HEAD_PX, max_width: int | None = None, min_font: int = MIN_FONT_PX,
                      lang: str = "en") -> go.Figure:
    """One head large: z (q_len, k_len) is `value`, blocked cells grey (trace 1 when present).

    `width` is the narrowest pixel width it is drawn at, `max_width` the widest (default: `width`). Values
    are written in the cells when `show_values` (default: when they fit at a readable font at `width`, e.g. 8
    tokens at 560 px; or only from a wider figure on, up to `max_width`). layout.meta[TEXT_MIN_WIDTH] says from
    which width they fit, and the app hides them below it.
    The last trace holds one click target per cell with customdata [query, key] (read it
    with `cell_selection`) and the hover: tokens, weight, scaled score and the mask's verdict.
    `highlight` = (query, key) outlines one cell. `min_font`: no text smaller (in presenter mode: PROJECTOR_FONT_PX).
    `lang` is the language of every word drawn.
    """
    check_choice(kind, value)
    arrays = attention_arrays(trace, kind, layer).head(head)
    mask = arrays.mask  # (q_len, k_len)
    fill = format_number(mask_value(trace))
    z, zmin, zmax, colorscale = value_plane(value, arrays)
    q_len, k_len = mask.shape
    if highlight is not None:
        highlight = check_cell(highlight, q_len, k_len, ("query", "key"))
    q_tokens, k_tokens = trace.attention_tokens(kind)
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    grey = value != "scores" and not mask.all()  # blocked cells drawn grey, with their own text
    blocked_text = "0" if value == "weights" else fill
    values = format_numbers(z)  # (q_len, k_len)
    if grey:
        values[~mask] = ""  # the grey layer writes these
    geometry = head_layout(width, q_text, k_text, min_font)
    numbers = cell_text([*values.ravel(), blocked_text] if grey else values.ravel(), geometry.cell_height, width,
                        max_width or width, geometry.left + COLORBAR_PX, 1 / k_len, min_font)
    show = numbers.font is not None if show_values is None else show_values
    font = numbers.font or at_least(MIN_FONT_PX, min_font)

    traces = [go.Heatmap(
        z=z.astype(np.float32), x=np.arange(k_len), y=np.arange(q_len), zmin=zmin, zmax=zmax,
        colorscale=colorscale, hoverinfo="skip", name=text(f"cell_value.{value}", lang),
        text=values if show else None,
        texttemplate="%{text}" if show else None, textfont_size=font,
        colorbar=dict(title=dict(text=text(f"cell_value.{value}", lang), side="right"), thickness=14),
    )]
    if grey:
        traces.append(blocked_layer(mask, blocked_text, show, font))
    traces.append(_cell_targets(arrays, q_text, k_text, fill, geometry, lang))
    layout = {} if highlight is None else {"shapes": [_cell_outline(*highlight)]}

    title = text("layer_head", lang, layer=layer + 1, head=head + 1)
    if width >= HEAD_PX:  # room for the kind too
        title = f"{text(f'kind.{kind}', lang)} · {title}"
    then = dict(plot_bgcolor="#ffffff", margin=dict(t=geometry.top))
    if show and show_values is None:
        then["meta"] = {TEXT_MIN_WIDTH: numbers.min_width}
    then.update(_head_axes(kind, q_tokens, k_tokens, q_text, k_text, geometry, lang))
    return styled_figure(traces, layout, title, height=geometry.height, then=then, min_font=min_font)


def _cell_targets(arrays: AttentionArrays, q_text: list[str], k_text: list[str], fill: str, geometry: HeadLayout,
                  lang: str) -> go.Scatter:
    """One near-transparent square per cell of one head's `arrays` (q_len, k_len), customdata [query, key];
    its hover: the tokens, weight, scaled score and the mask's verdict."""
    q_len, k_len = arrays.mask.shape
    query, key = np.divmod(np.arange(q_len * k_len), k_len)  # (q_len·k_len,) each, row by row
    blocked = text("heatmap.blocked", lang, fill=fill)
    verdict = np.where(arrays.mask.ravel(), text("may_attend", lang), blocked)
    hover = [text("heatmap.hover", lang, cell=cell_label(i, q_text[i], j, k_text[j], lang), weight=w, score=s,
                  verdict=v)
             for i, j, w, s, v in zip(query, key, arrays.weights.ravel(), arrays.scores.ravel(), verdict, strict=True)]
    return go.Scatter(
        x=key, y=query, mode="markers", name="cells", showlegend=False,
        marker=target_marker(min(geometry.cell_width, geometry.cell_height)),
        customdata=np.stack([query, key], 1), hovertext=np.array(hover), hovertemplate="%{hovertext}<extra></extra>",
    )


def _head_axes(kind: str, q_tokens: Sequence[str] | None, k_tokens: Sequence[str] | None, q_text: list[str],
               k_text: list[str], geometry: HeadLayout, lang: str) -> dict:
    """Keys along the top, queries down the side (the first at the top), each titled with where its tokens come
    from, their labels as `geometry` plans them."""
    attention = ATTENTION_KINDS[kind]
    q_len, k_len = len(q_text), len(k_text)
    # Explicit ranges: autorange would pad the axes to fit the click targets.
    xaxis = merge_into(dict(
        **token_axis(k_tokens, k_len), side="top", range=[-0.5, k_len - 0.5],
        title=dict(text=text("heatmap.key_axis", lang, side=text(f"side.{attention.key_side}", lang)), standoff=6),
    ), tick_labels(range(k_len), k_text, geometry.key_ticks))
    yaxis = merge_into(dict(
        **token_axis(q_tokens, q_len), range=[q_len - 0.5, -0.5],
        title=text("heatmap.query_axis", lang, side=text(f"side.{attention.query_side}", lang)),
    ), tick_labels(range(q_len), q_text, geometry.query_ticks))
    return dict(xaxis=xaxis, yaxis=yaxis)


def _cell_outline(query: int, key: int) -> dict:
    """The outline of one cell of `attention_heatmap`."""
    return dict(type="rect", x0=key - 0.5, x1=key + 0.5, y0=query - 0.5, y1=query + 0.5,
                line=dict(color=HIGHLIGHT, width=4), layer="above")


@dataclass(frozen=True)
class HeadLayout:
    """Pixel geometry of `attention_heatmap` at the narrowest width it is drawn at."""

    left: float  # beside the cells: the query labels and their axis title
    cell_width: float
    cell_height: float
    key_ticks: Ticks
    query_ticks: Ticks
    top: int  # margin above the cells: the title, the key axis title and the key labels
    height: int  # of the whole figure


def head_layout(width: float, query_labels: list[str], key_labels: list[str],
                min_font: int = MIN_FONT_PX) -> HeadLayout:
    """Cells as wide as `width` allows beside the query labels and the colour bar; square, 14 to 64 px high.

    Token labels that do not fit their row or column are turned upright or thinned (`tick_plan`), never
    under `min_font`.
    """
    axis_title_px = AXIS_TITLE_PX + (at_least(14, min_font) - 14) * LINE_EM  # one line of the figure's font
    left = axis_title_px + widest_em(query_labels) * at_least(TICK_FONT_PX, min_font) + GAP_PX
    cell_width = max(width - left - COLORBAR_PX, 1.0) / len(key_labels)
    cell_height = float(np.clip(cell_width, 14, 64))
    keys = tick_plan(key_labels, cell_width, "x", largest=15, min_font=min_font)
    queries = tick_plan(query_labels, cell_height, "y", largest=15, min_font=min_font)
    top = round(TITLE_PX + axis_title_px + keys.depth + 10)
    return HeadLayout(left, cell_width, cell_height, keys, queries, top,
                      round(cell_height * len(query_labels)) + top + 30)


def attention_lines(trace, kind: str, layer: int, head: int, query: int | None = None, hidden: int | None = None, *,
                    min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """BertViz-style line view: queries left, keys right, a line per pair as opaque as its weight.

    Lines are grouped into five opacity bins (one trace each, None-separated segments);
    with `query` given its lines are drawn strongly and the others faintly. The `hidden` query's row is not
    drawn at all (a lesson asks where it looks). No text under `min_font`.
    """
    check_choice(kind, "weights")
    arrays = attention_arrays(trace, kind, layer).head(head)
    weight, mask = arrays.weights, arrays.mask  # (q_len, k_len) each
    q_len, k_len = weight.shape
    if query is not None:
        query = check_index(query, q_len, "query")
    if hidden is not None:
        weight = weight.copy()
        weight[check_index(hidden, q_len, "hidden")] = 0.0
    q_tokens, k_tokens = trace.attention_tokens(kind)
    q_text, k_text = token_texts(q_tokens, q_len), token_texts(k_tokens, k_len)
    colour = sample_colorscale(SEQUENTIAL, [0.3])[0]
    traces = _weight_lines(weight, query, colour)

    height = int(np.clip(30 * max(q_len, k_len) + 130, 300, 1000))
    # Long inputs: a smaller font, then every k-th token named (the chosen query and its strong keys always).
    rows = tick_plan([*q_text, *k_text], (height - LINES_TOP_PX - 10) / max(q_len, k_len), "y", largest=15,
                     min_font=min_font)
    traces.append(_query_column(weight, mask, q_text, k_text, query, rows, colour, lang))
    if hidden is not None:
        traces[-1].hovertext = [text("lines.hidden", lang, query=hidden, text=q_text[hidden]) if i == hidden else hover
                                for i, hover in enumerate(traces[-1].hovertext)]
    traces.append(_key_column(weight, mask, k_text, query, rows, colour, lang))
    title = text("layer_head", lang, layer=layer + 1, head=head + 1)
    hidden = dict(visible=False, fixedrange=True)
    headings = _column_headings(kind, at_least(14, min_font), lang)
    left, right = (_label_side(column.text, rows.font, heading["text"], heading["font"]["size"])
                   for column, heading in zip(traces[-2:], headings, strict=True))
    return styled_figure(
        traces, dict(annotations=headings),
        title + ("" if query is None else " · " + text("lines.title_query", lang, query=query)), height=height,
        then=dict(showlegend=False, plot_bgcolor="#ffffff", margin=dict(t=LINES_TOP_PX),
                  xaxis=dict(**hidden, range=[-left, 1 + right]),
                  yaxis=dict(**hidden, range=[max(q_len, k_len) - 0.5, -0.5])), min_font=min_font)


def _label_side(labels: Sequence[str], label_font: int, heading: str, heading_font: int) -> float:
    """How far the x range reaches beyond a column of tokens (LINES_SIDE at least): room for its labels (beside
    their markers) and its heading at LINES_PX."""
    room = max(widest_em(labels) * label_font + 14, text_em(heading) * heading_font * 1.05 + GAP_PX)  # bold heading
    share = min(room / (LINES_PX - 20), 0.4)  # of the plot's width, each side
    return max(LINES_SIDE, share / (1 - 2 * share))


def _weight_lines(weight: np.ndarray, query: int | None, colour: str) -> list[go.Scatter]:
    """The lines of weight (q_len, k_len) in five opacity bins, one trace each; with `query` given, only its lines
    are binned and the other queries' lines (weight ≥ 0.1) are drawn faintly."""
    q_len = weight.shape[0]
    focus = np.ones(q_len, bool) if query is None else np.arange(q_len) == query  # (q_len,)
    edges = (0.02, 0.1, 0.25, 0.5, 0.75, 1.01)
    traces = []
    for low, high in pairwise(edges):
        shown = focus[:, None] & (weight >= low) & (weight < high)  # (q_len, k_len)
        traces.append(_segments(shown, colour, opacity=min(1.0, (low + high) / 2 + 0.2), width=1 + 5 * low,
                                name=f"weight {low:g}–{min(high, 1):g}"))  # trace names here are ids, never drawn
    if query is not None:
        traces.append(_segments(~focus[:, None] & (weight >= 0.1), MUTED, opacity=0.1, width=1, name="other queries"))
    return traces


def _query_column(weight: np.ndarray, mask: np.ndarray, q_text: list[str], k_text: list[str], query: int | None,
                  rows: Ticks, colour: str, lang: str) -> go.Scatter:
    """The queries down the left (x = 0), clickable (customdata [query]), every `rows.step`-th named and the
    chosen one always; the hover names the three keys each looks at most."""
    q_len = len(q_text)
    named_queries = set(spaced(q_len, rows.step, first=() if query is None else (query,)))
    live = mask.any(1)  # (q_len,) queries with at least one key to look at
    top_keys = [" · ".join(f"{k_text[j]} {weight[i, j]:.2f}" for j in np.argsort(-weight[i])[:3] if weight[i, j] > 0)
                for i in range(q_len)]
    return go.Scatter(
        x=[0] * q_len, y=list(range(q_len)), mode="markers+text", textposition="middle left",
        text=[token if i in named_queries else "" for i, token in enumerate(q_text)],
        textfont=dict(size=rows.font, color=[HIGHLIGHT if query == i else "#222222" if live[i] else MUTED
                                      for i in range(q_len)]),
        marker=dict(size=10, color=[HIGHLIGHT if query == i else colour for i in range(q_len)]),
        customdata=[[i] for i in range(q_len)], showlegend=False,  # customdata: see query_selection
        name=text("lines.query_column", lang),
        hovertext=[f"<b>{text('lines.query', lang, query=i, text=q_text[i])}</b><br>"
                   + (text("lines.looks_at", lang, keys=top_keys[i]) if live[i] else text("lines.row_blocked", lang))
                   for i in range(q_len)],
        hovertemplate="%{hovertext}<extra></extra>",
    )


def _key_column(weight: np.ndarray, mask: np.ndarray, k_text: list[str], query: int | None, rows: Ticks,
                colour: str, lang: str) -> go.Scatter:
    """The keys down the right (x = 1), every `rows.step`-th named; with `query` given, its three strongest keys
    named always and each key labelled with the weight the query gives it."""
    k_len = len(k_text)
    named_keys = set(spaced(k_len, rows.step, first=() if query is None else np.argsort(-weight[query])[:3]))
    key_hover = [f"<b>{text('lines.key', lang, key=j, text=k_text[j])}</b>" + ("" if query is None else
                 "<br>" + text("lines.weight_from", lang, query=query, weight=weight[query, j])) for j in range(k_len)]
    key_labels = k_text if query is None else [
        f"{key}  <b>{weight[query, j]:.2f}</b>" if weight[query, j] >= 0.01 else key for j, key in enumerate(k_text)]
    return go.Scatter(
        x=[1] * k_len, y=list(range(k_len)), mode="markers+text", textposition="middle right",
        text=[key_label if j in named_keys else "" for j, key_label in enumerate(key_labels)],
        textfont=dict(size=rows.font, color=["#222222" if mask[:, j].any() else MUTED for j in range(k_len)]),
        marker=dict(size=10, color=colour), showlegend=False, name=text("lines.key_column", lang),
        hovertext=key_hover, hovertemplate="%{hovertext}<extra></extra>",
    )


def _column_headings(kind: str, font: int, lang: str) -> list[dict]:
    """The columns' headings: the queries left, the keys right, each with the side its tokens come from."""
    attention = ATTENTION_KINDS[kind]
    query_side, key_side = text(f"side.{attention.query_side}", lang), text(f"side.{attention.key_side}", lang)
    return [dict(x=x, xanchor=anchor, y=1, yref="paper", yanchor="bottom", text=f"<b>{heading}</b>",
                 showarrow=False, font=dict(size=font))
            for x, anchor, heading in ((0, "right", text("lines.queries", lang, side=query_side)),
                                       (1, "left", text("lines.keys", lang, side=key_side)))]


def head_entropy(trace, kind: str, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Per-head entropy in bits (bars grouped by layer) with a dashed line at what uniform attention gives.

    A head that spreads its attention evenly over n keys has entropy log2(n); one that
    looks at a single key has 0. A bar is the mean over the queries with an allowed key,
    so the line is the mean over those queries of log2(their number of allowed keys):
    the bar of a head that attends uniformly (with 7 decoder tokens under the look-ahead
    mask, the mean of log2(1..7) = 1.76 bits, not log2 of the mean 4 keys = 2.00). No text under `min_font`.
    """
    check_choice(kind, "weights")
    stacks = all_layers(trace, kind)
    bits = np.stack([entropy_bits(a.weights, a.mask) for a in stacks])  # (layers, heads)
    allowed = np.concatenate([a.mask.sum(1)[a.mask.any(1)] for a in stacks])  # allowed keys of each live query
    uniform = float(np.log2(allowed).mean()) if allowed.size else 0.0
    layers, heads = bits.shape
    colours = sample_colorscale(SEQUENTIAL, list(np.linspace(0.0, 0.85, heads)))
    x = [text("layer", lang, layer=layer + 1) for layer in range(layers)]
    traces = [go.Bar(
        x=x, y=bits[:, head], name=text("head", lang, head=head + 1), marker_color=colours[head],
        customdata=2 ** bits[:, head],
        hovertemplate=text("entropy.hover", lang, layer="%{x}", head=head + 1, bits="%{y:.2f}",
                            keys="%{customdata:.1f}", uniform=f"{uniform:.2f}") + "<extra></extra>",
    ) for head in range(heads)]
    # A shape and an annotation, not add_hline: that helper costs ~15 ms of validation.
    layout = dict(
        shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=uniform, y1=uniform,
                     line=dict(dash="dash", color="#444444", width=2))],
        annotations=[dict(xref="paper", x=1, xanchor="right", y=uniform, yanchor="bottom", showarrow=False,
                          text=text("entropy.uniform", lang, bits=f"{uniform:.2f}"),
                          font=dict(size=at_least(13, min_font)))],
    )
    return styled_figure(traces, layout, text("entropy.title", lang, kind=text(f"kind.{kind}", lang)), height=340,
                         then=dict(barmode="group", bargap=0.25, legend=dict(orientation="h", y=-0.15),
                                   yaxis=dict(title=text("entropy.axis", lang), rangemode="tozero",
                                              range=[0, max(uniform, bits.max()) * 1.15 + 0.05])),
                         min_font=min_font)


def _segments(shown: np.ndarray, colour: str, opacity: float, width: float, name: str) -> go.Scatter:
    """One line trace from query i (x=0) to key j (x=1) for every True (i, j) of shown (q_len, k_len)."""
    xs, ys = [], []
    for i, j in zip(*np.nonzero(shown), strict=True):
        xs += [0, 1, None]
        ys += [int(i), int(j), None]
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=width), opacity=opacity,
                      hoverinfo="skip", name=name, showlegend=False)


