"""Inside one head: every step of scaled dot-product attention (paper section 3.2) as annotated matrices.

Builders take a `HeadWalkthrough` (numbers already checked against the trace) and
return Plotly figures: one per step, in the order of the paper's equation
softmax(QKᵀ/√d_k, blocked scores replaced by the mask value)·V, then the concatenation of all heads and W_O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from transformer_viz.analysis.walkthrough import HeadWalkthrough, InputSource
from transformer_viz.figures.common import (
    BLOCKED_GREY,
    DIVERGING,
    MASK_COLOURS,
    SEQUENTIAL,
    as_numpy,
    base_layout,
    check_cell,
    escape_text,
    format_number,
    format_numbers,
    styled_figure,
    token_axis,
    token_texts,
)
from transformer_viz.figures.fit import (
    GAP_PX,
    LINE_SPACING,
    MIN_FONT_PX,
    at_least,
    cell_font,
    tick_labels,
    tick_plan,
    wrapped,
)
from transformer_viz.figures.panel_layout import (
    PAGE_PX,
    SPACING,
    SUBPLOT_TITLE_PX,
    VALUE_ASPECT,
    cell_heights,
    fits_with_values,
    panel_layout,
    top_label_px,
)
from transformer_viz.i18n import text

# The steps in the order of the computation (the app explains each: head.step.<key>).
STEP_KEYS = ("x", "projections", "qk", "scale", "mask", "softmax", "weighted_sum", "concat", "output")
MAX_VALUE_ROWS, MAX_VALUE_COLS = 12, 16  # larger matrices show colours only (values on hover)
OUTLINE = "#111111"


@dataclass(frozen=True)
class Panel:
    """One matrix to draw. style: "signed" (diverging around 0), "weights" ([0, 1]) or "mask" (0/1)."""

    matrix: np.ndarray  # (rows, cols)
    row_labels: Sequence[str]
    col_labels: Sequence[str]
    title: str
    style: str = "signed"
    blocked: np.ndarray | None = None  # (rows, cols) bool, True = masked out: drawn grey, outside the colours
    text: np.ndarray | None = None  # (rows, cols) str, replaces the formatted values
    marks: tuple[dict, ...] = ()  # outlines and lines in cell coordinates (x = column, y = row)


# One step of the walkthrough: its panels (rows of matrices, None where a slot stays empty) and its title.
_Step = tuple[list[list[Panel | None]], str]


def dims(n: int) -> list[str]:
    """Labels of vector dimensions. Positions and dimensions count from 0, as in PE(pos, 2i); layers, heads
    and steps count from 1 (the first layer)."""
    return [str(i) for i in range(n)]


def matrix_heatmap(matrix, row_labels, col_labels, title: str, signed: bool = True, show_values: bool | None = None,
                   highlight: tuple[int, int] | None = None, blocked=None, *, min_font: int = MIN_FONT_PX,
                   lang: str = "en") -> go.Figure:
    """One annotated matrix, first row at the top; values in cells when it is small (≤ 12 × 16) unless told.

    `blocked` (rows, cols) bool marks masked cells (e.g. of masked scores): grey, with their
    value as text, and left out of the colour range; non-finite values are always treated so.
    `highlight` (row, col) is outlined. No text under `min_font`. `lang`: the language of the words drawn
    besides `title`.
    """
    panel = Panel(as_numpy(matrix), row_labels, col_labels, title, "signed" if signed else "weights",
                  None if blocked is None else as_numpy(blocked).astype(bool),
                  marks=() if highlight is None else (_box(*highlight),))
    return _grid([[panel]], title, show_values=show_values, colorbar=True, min_font=min_font, lang=lang)


def source_text(source: InputSource, lang: str = "en") -> str:
    """How the walkthrough's X or M was obtained: "norm1(src_embed.out)" in English (the trace's names),
    "LayerNorm(编码器的输入（嵌入之和）)" in Chinese. `source`: HeadWalkthrough.x_query_source or .x_key_source."""
    if source.norm:
        return text("source.norm", lang, norm=source.norm, inner=source_text(replace(source, norm=None), lang))
    if source.stack is not None:  # a layer's residual stream
        return text(f"source.{source.leaf}", lang, stack=text(f"stack.{source.stack}", lang),
                     index=source.layer, layer=source.layer + 1)
    return text(f"source.{source.recorded}", lang)  # src_embed.out, tgt_embed.out, encoder.out


def walkthrough_figures(w: HeadWalkthrough, cell: tuple[int, int] | None = None, *, min_font: int = MIN_FONT_PX,
                        lang: str = "en") -> list[tuple[str, go.Figure]]:
    """The steps of one head as (step key, figure), keys as in STEP_KEYS; `cell` (query, key) is outlined.

    No text under `min_font`; `lang` is the language of every word drawn (formulas stay formulas).
    """
    if cell is not None:
        cell = check_cell(cell, len(w.query_tokens), len(w.key_tokens), ("query", "key"), "cell")
    steps = {
        "x": _input_step(w, lang),
        "projections": _projections_step(w, lang),
        "qk": _qk_step(w, cell),
        "scale": _scale_step(w, cell, lang),
        "mask": _mask_step(w, cell, lang),
        "softmax": _softmax_step(w, cell, lang),
        "weighted_sum": _weighted_sum_step(w, lang),
        "concat": _concat_step(w, lang),
        "output": _output_step(w, lang, min_font),
    }
    context = _walk_text("context", lang, kind=text(f"kind.{w.kind}", lang), layer=w.layer + 1, head=w.head + 1,
                         heads=w.n_heads)
    return [(key, _grid(cells, title, subtitle=context, colorbar=len(cells) * len(cells[0]) == 1, min_font=min_font,
                        lang=lang)) for key, (cells, title) in steps.items()]


def _input_step(w: HeadWalkthrough, lang: str) -> _Step:
    """X, what enters the head (and M, the encoder's memory, that keys and values come from in cross-attention)."""
    dm = dims(w.d_model)
    x_title = f"X = {source_text(w.x_query_source, lang)} {_size(len(w.query_tokens), w.d_model)}"
    if w.kind != "cross":
        return [[Panel(w.x_query, w.query_tokens, dm, "")]], _walk_text("x", lang, x=x_title)
    m_title = f"M = {source_text(w.x_key_source, lang)} {_size(len(w.key_tokens), w.d_model)}"
    panels = [[Panel(w.x_query, w.query_tokens, dm, x_title)], [Panel(w.x_key, w.key_tokens, dm, m_title)]]
    return panels, _walk_text("x_memory", lang)


def _projections_step(w: HeadWalkthrough, lang: str) -> _Step:
    """Q, K and V: the input times this head's W_Q, W_K, W_V, plus their biases."""
    qt, kt, dm, dh = w.query_tokens, w.key_tokens, dims(w.d_model), dims(w.d_head)
    q_len, k_len, d_model, d_head = len(qt), len(kt), w.d_model, w.d_head
    xk = "M" if w.kind == "cross" else "X"  # keys and values come from the encoder's memory in cross-attention
    return [
        [Panel(w.w_q, dm, dh, f"W_Q {_size(d_model, d_head)}"), Panel(w.w_k, dm, dh, f"W_K {_size(d_model, d_head)}"),
         Panel(w.w_v, dm, dh, f"W_V {_size(d_model, d_head)}")],
        [Panel(w.b_q[None], ["b"], dh, "b_Q"), Panel(w.b_k[None], ["b"], dh, "b_K"),
         Panel(w.b_v[None], ["b"], dh, "b_V")],
        [Panel(w.q, qt, dh, f"Q = X·W_Q + b_Q {_size(q_len, d_head)}"),
         Panel(w.k, kt, dh, f"K = {xk}·W_K + b_K {_size(k_len, d_head)}"),
         Panel(w.v, kt, dh, f"V = {xk}·W_V + b_V {_size(k_len, d_head)}")],
    ], _walk_text("projections", lang, head=w.head + 1, xk=xk)


def _qk_step(w: HeadWalkthrough, cell: tuple[int, int] | None) -> _Step:
    """QKᵀ: the chosen cell is row `query` of Q times column `key` of Kᵀ."""
    qt, kt, dh = w.query_tokens, w.key_tokens, dims(w.d_head)
    q_len, k_len, d_head = len(qt), len(kt), w.d_head
    q_row = () if cell is None else (_box(cell[0], 0, cell[0], d_head - 1),)
    kt_col = () if cell is None else (_box(0, cell[1], d_head - 1, cell[1]),)
    return [[
        Panel(w.q, qt, dh, f"Q {_size(q_len, d_head)}", marks=q_row),
        Panel(w.k.T, dh, kt, f"Kᵀ {_size(d_head, k_len)}", marks=kt_col),
        Panel(w.qk, qt, kt, f"QKᵀ {_size(q_len, k_len)}", marks=_cell_box(cell)),
    ]], f"QKᵀ = Q·Kᵀ {_size(q_len, k_len)}"


def _scale_step(w: HeadWalkthrough, cell: tuple[int, int] | None, lang: str) -> _Step:
    """The scores: QKᵀ divided by √d_head (or not, where the model folds it into W_Q), plus T5's position bias."""
    qt, kt, box = w.query_tokens, w.key_tokens, _cell_box(cell)
    scores, size = _walk_text("scores", lang), _size(len(qt), len(kt))
    scaled = f"QKᵀ / √d_head = QKᵀ / {w.scale:.2f}" if not w.unscaled else _walk_text("folded", lang)
    if w.position_bias is None:
        return [[Panel(w.scores, qt, kt, "", marks=box)]], f"{scores} = {scaled} {size}"
    # T5's self-attention: a learned bias for each (bucketed) distance between query and key
    return [[
        Panel(w.qk / w.scale, qt, kt, "QKᵀ" if w.unscaled else f"QKᵀ / {w.scale:.2f}"),
        Panel(w.position_bias, qt, kt, _walk_text("bias_panel", lang)),
        Panel(w.scores, qt, kt, f"= {scores}", marks=box),
    ]], _walk_text("bias_title", lang, scores=scores, scaled=scaled, size=size)


def _mask_step(w: HeadWalkthrough, cell: tuple[int, int] | None, lang: str) -> _Step:
    """The masked scores: every blocked score replaced by the mask value."""
    qt, kt = w.query_tokens, w.key_tokens
    scores, masked, fill = _walk_text("scores", lang), _walk_text("masked_scores", lang), format_number(w.mask_value)
    fill_text = np.where(w.mask, "✓", fill)  # (q_len, k_len): what each cell becomes
    return [[
        Panel(w.scores, qt, kt, scores),
        Panel(w.mask.astype(float), qt, kt, _walk_text("mask_panel", lang, fill=fill), "mask", text=fill_text),
        Panel(w.masked_scores, qt, kt, f"= {masked}", blocked=~w.mask, marks=_cell_box(cell)),
    ]], _walk_text("mask_title", lang, masked=masked, scores=scores, fill=fill, size=_size(len(qt), len(kt)))


def _softmax_step(w: HeadWalkthrough, cell: tuple[int, int] | None, lang: str) -> _Step:
    """The weights A: a softmax over each row of the masked scores."""
    qt, kt = w.query_tokens, w.key_tokens
    masked = _walk_text("masked_scores", lang)
    return ([[Panel(w.weights, qt, kt, "", "weights", marks=_cell_box(cell))]],
            f"{_walk_text('softmax', lang, masked=masked)} {_size(len(qt), len(kt))}")


def _weighted_sum_step(w: HeadWalkthrough, lang: str) -> _Step:
    """The head's output: the weights times the values, A·V."""
    qt, kt, dh = w.query_tokens, w.key_tokens, dims(w.d_head)
    q_len, k_len, d_head = len(qt), len(kt), w.d_head
    head_name = _walk_text("head", lang, head=w.head + 1)
    return [[
        Panel(w.weights, qt, kt, f"A {_size(q_len, k_len)}", "weights"),
        Panel(w.v, kt, dh, f"V {_size(k_len, d_head)}"),
        Panel(w.head_output, qt, dh, f"= {head_name} {_size(q_len, d_head)}"),
    ]], f"{head_name} = A·V {_size(q_len, d_head)}"


def _concat_step(w: HeadWalkthrough, lang: str) -> _Step:
    """Every head's output side by side, this head outlined."""
    heads = (", ".join(_walk_text("head", lang, head=i + 1) for i in range(w.n_heads)) if w.n_heads <= 4
             else f"{_walk_text('head', lang, head=1)}, …, {_walk_text('head', lang, head=w.n_heads)}")
    return ([[Panel(w.all_heads, w.query_tokens, dims(w.d_model), "", marks=_head_marks(w))]],
            f"Concat({heads}) {_size(len(w.query_tokens), w.d_model)}")


def _output_step(w: HeadWalkthrough, lang: str, min_font: int = MIN_FONT_PX) -> _Step:
    """The attention's output: the concatenation times W_O, plus b_O."""
    qt, dm, q_len, d_model = w.query_tokens, dims(w.d_model), len(w.query_tokens), w.d_model
    output = _walk_text("output", lang)
    concat = Panel(w.all_heads, qt, dm, f"Concat {_size(q_len, d_model)}", marks=_head_marks(w))
    w_o = Panel(w.w_o, dm, dm, f"W_O {_size(d_model, d_model)}")
    b_o = Panel(w.b_o[None], ["b"], dm, "+ b_O")
    result = Panel(w.output, qt, dm, f"= {output} {_size(q_len, d_model)}")
    # Side by side while three d_model-wide matrices fit the page with values in their cells, else stacked.
    side_by_side = fits_with_values([d_model] * 3, min_font)
    layout = [[concat, w_o, result], [None, b_o, None]] if side_by_side else [[concat], [w_o], [b_o], [result]]
    return layout, f"{output} = Concat·W_O + b_O {_size(q_len, d_model)}"


def _walk_text(key: str, lang: str, **values) -> str:
    """The walkthrough's words (`walk.<key>` of the catalogs)."""
    return text(f"walk.{key}", lang, **values)


def _size(rows: int, cols: int) -> str:
    """A matrix's size as written in the titles: "(4 × 8)"."""
    return f"({rows} × {cols})"


def _cell_box(cell: tuple[int, int] | None) -> tuple[dict, ...]:
    """The outline of the chosen (query, key) cell, if any."""
    return () if cell is None else (_box(*cell),)


def dot_product_figure(w: HeadWalkthrough, query: int, key: int, *, min_font: int = MIN_FONT_PX,
                       lang: str = "en") -> go.Figure:
    """Where one score comes from: the products q_i·k_i as a running sum, then ÷ √d_head (and + the position bias
    where the model adds one). No text under `min_font`."""
    query, key = check_cell((query, key), len(w.query_tokens), len(w.key_tokens), ("query", "key"))
    q, k = w.q[query].astype(float), w.k[key].astype(float)  # (d_head,)
    products = q * k  # (d_head,)
    total = float(products.sum())
    labels = [f"q{i}·k{i}" for i in range(len(products))] + ["Σ = q·k"]
    if len(products) <= MAX_VALUE_COLS:  # the factors under each bar: a student can redo the sum by hand
        labels[:-1] = [f"{name}<br>{format_number(a)} × {format_number(b)}"
                       for name, a, b in zip(labels[:-1], q, k, strict=True)]
    hover = [f"{format_number(a)} × {format_number(b)} = {format_number(p)}"
             for a, b, p in zip(q, k, products, strict=True)]
    fig = go.Figure(go.Waterfall(
        x=labels, y=[*products, 0.0], measure=["relative"] * len(products) + ["total"],
        text=[format_number(p) for p in products] + [format_number(total)],
        textposition="outside" if len(products) <= MAX_VALUE_COLS else "none",
        hovertext=[*hover, text("dot.sum", lang, total=format_number(total))], hoverinfo="text",
        increasing=dict(marker_color="#d6604d"), decreasing=dict(marker_color="#4393c3"),
        totals=dict(marker_color="#3b3b3b"), connector=dict(line=dict(color="#9e9e9e", width=1)),
    ))
    q_token, k_token = escape_text(w.query_tokens[query]), escape_text(w.key_tokens[key])
    bias = 0.0 if w.position_bias is None else float(w.position_bias[query, key])
    title_key = "dot.title" + ("_bias" if w.position_bias is not None else "") + ("_folded" if w.unscaled else "")
    title = text(title_key, lang, query=q_token, key=k_token, total=format_number(total),
                  scale=f"{w.scale:.2f}", bias=format_number(bias), score=format_number(total / w.scale + bias))
    base_layout(fig, title, height=420, min_font=min_font)
    note = "" if w.mask[query, key] else text("dot.blocked", lang, fill=format_number(w.mask_value))
    fig.update_layout(showlegend=False, title_subtitle_text=text(
        "dot.subtitle", lang, query=query, query_text=q_token, key=key, key_text=k_token, head=w.head + 1) + note,
        title_subtitle_font_size=at_least(14, min_font), margin_t=90)
    fig.update_yaxes(zeroline=True, zerolinecolor="#666666", title_text=text("dot.axis", lang))
    return fig


def _grid(cells: list[list[Panel | None]], title: str, subtitle: str | None = None,
          show_values: bool | None = None, colorbar: bool = False, min_font: int = MIN_FONT_PX,
          lang: str = "en") -> go.Figure:
    """Panels laid out as a grid, each subplot sized by its matrix; values in cells where they fit at `min_font`.

    `colorbar` (a single panel only): a colour bar when the cells carry no numbers.

    The layout is written out as one dict: building a figure by many small updates is several times slower.
    """
    n_cols = len(cells[0])
    panels = [(r, c, p) for r, row in enumerate(cells) for c, p in enumerate(row) if p is not None]
    row_sizes = [max(p.matrix.shape[0] for p in row if p is not None) for row in cells]
    col_sizes = [max(row[c].matrix.shape[1] for row in cells if row[c] is not None) for c in range(n_cols)]
    token_rows = [any(p is not None and _is_tokens(p.row_labels) for p in row) for row in cells]
    if show_values is None:
        value_px = cell_heights(row_sizes, col_sizes, token_rows, VALUE_ASPECT, min_font)
        values = [p.matrix.shape[0] <= MAX_VALUE_ROWS and p.matrix.shape[1] <= MAX_VALUE_COLS and value_px[r] >= 24
                  for r, _, p in panels]
    else:
        values = [show_values] * len(panels)
    # Cells wider than tall only where they hold a number; colour-only cells are square and take less room.
    aspect = VALUE_ASPECT if any(values) else 1.0
    cell_px = cell_heights(row_sizes, col_sizes, token_rows, aspect, min_font)
    # Room above each matrix for its top tick labels (upright when wider than a cell) and its title.
    label_px = [max(top_label_px(p.col_labels, cell_px[r] / aspect, min_font) for p in row if p is not None)
                for r, row in enumerate(cells)]
    titled = len(panels) > 1
    title_font = at_least(14, min_font)
    titles, title_px = _panel_titles(panels, col_sizes, title_font)
    grid = panel_layout(row_sizes, col_sizes, cell_px, aspect, label_px, titled, lone=colorbar, title_px=title_px)

    traces, annotations, shapes, layout = [], [], [], {}
    for n, ((r, c, panel), show) in enumerate(zip(panels, values, strict=True), start=1):
        suffix = "" if n == 1 else str(n)
        x, y = f"x{suffix}", f"y{suffix}"
        rows, cols = panel.matrix.shape
        texts = _texts(panel)
        font = cell_font(cell_px[r] / aspect, cell_px[r], texts.ravel(), min_font=min_font)
        show = show and (font is not None or show_values is not None)
        # A colour bar as tall as the matrix, with no more numbers than fit beside it at the figure's font.
        bar = dict(thickness=12, x=grid.x_domains[0][1] + 0.01, xanchor="left",
                   nticks=max(3, int(rows * cell_px[r] // (2 * at_least(14, min_font))))) if colorbar and not show \
            else None
        traces += _panel_traces(panel, bar, font or at_least(MIN_FONT_PX, min_font), dict(xaxis=x, yaxis=y), show,
                                lang, texts)
        layout[f"xaxis{suffix}"] = dict(_axis(panel.col_labels, cols, cell_px[r] / aspect, min_font, axis="x"),
                                        anchor=y,
                                        side="top",
                                        domain=list(grid.x_domains[c]), constrain="domain",
                                        constraintoward="left")
        # scaleanchor keeps the matrix's shape however wide the page is; it then hugs the top left of its slot.
        layout[f"yaxis{suffix}"] = dict(_axis(panel.row_labels, rows, cell_px[r], min_font, reverse=True), anchor=x,
                                        domain=list(grid.y_domains[r]), scaleanchor=x,
                                        scaleratio=aspect, constrain="domain", constraintoward="top")
        shapes += [dict(mark, xref=x, yref=y) for mark in panel.marks]
        if titled:
            annotations.append(dict(text=titles[n - 1], x=grid.x_domains[c][0], y=grid.y_domains[r][1],
                                    xref="paper", yref="paper", align="left",
                                    xanchor="left", yanchor="bottom", yshift=label_px[r], showarrow=False,
                                    font=dict(size=title_font)))
    return styled_figure(traces, layout, title, height=grid.height, width=PAGE_PX, then=dict(
        annotations=annotations, shapes=shapes, margin=dict(t=grid.top_px),
        title=dict(yref="container", y=1.0, yanchor="top", pad=dict(t=12),
                   subtitle=dict(text=subtitle, font=dict(size=at_least(14, min_font))))), min_font=min_font)


def _panel_titles(panels: list[tuple[int, int, Panel]], col_sizes: Sequence[int], font: int) -> tuple[list[str], float]:
    """The panels' titles, broken into lines where one is wider than its column and the gap after it at `font`
    px (a projector's font), and the room they take above a row of matrices."""
    share = [(1 - SPACING * (len(col_sizes) - 1)) * size / sum(col_sizes) + SPACING for size in col_sizes]
    plot_px = PAGE_PX - 60  # the row labels of the first column take some of the page
    titles = [wrapped(panel.title, share[c] * plot_px - 2 * GAP_PX, font) for _, c, panel in panels]
    lines = max((title.count("<br>") + 1 for title in titles), default=1)
    return titles, SUBPLOT_TITLE_PX + (lines - 1) * round(LINE_SPACING * font)


def _panel_traces(panel: Panel, colorbar: dict | None, font_size: int, axes: dict,
                  show_values: bool, lang: str = "en", texts: np.ndarray | None = None) -> list[go.Heatmap]:
    """The heatmap of a panel (with `colorbar`, if given), plus a grey layer for blocked
    cells so they never set the colour range. `texts`: the panel's `_texts`, when already made."""
    matrix = panel.matrix.astype(float)  # (rows, cols)
    rows, cols = matrix.shape
    blocked = ~np.isfinite(matrix) if panel.blocked is None else panel.blocked | ~np.isfinite(matrix)
    shown = np.where(blocked, np.nan, matrix)  # (rows, cols)
    cell_texts = _texts(panel) if texts is None else texts
    row_texts, col_texts = token_texts(panel.row_labels, rows), token_texts(panel.col_labels, cols)
    cells = cell_texts.tolist()  # Python strings: indexing a numpy array cell by cell is slow
    hover = [[f"{row_texts[i]} · {col_texts[j]}: {cells[i][j]}" for j in range(cols)] for i in range(rows)]
    if panel.style == "weights":
        colours = dict(colorscale=SEQUENTIAL, zmin=0.0, zmax=1.0)
    elif panel.style == "mask":
        colours = dict(colorscale=MASK_COLOURS, zmin=0.0, zmax=1.0)
    else:
        finite = np.abs(shown[np.isfinite(shown)])
        limit = (float(finite.max()) if finite.size else 0.0) or 1.0
        colours = dict(colorscale=DIVERGING, zmin=-limit, zmax=limit, zmid=0.0)
    main = go.Heatmap(z=shown, **colours, **axes, hovertext=hover, hoverinfo="text", hoverongaps=False, xgap=1, ygap=1,
                      showscale=colorbar is not None and panel.style != "mask", colorbar=colorbar or {},
                      **(dict(text=cell_texts, texttemplate="%{text}", textfont_size=font_size) if show_values else {}))
    traces = [main]
    if blocked.any():
        traces.append(go.Heatmap(
            z=np.where(blocked, 1.0, np.nan), colorscale=[[0.0, BLOCKED_GREY], [1.0, BLOCKED_GREY]], zmin=0.0, zmax=1.0,
            **axes,
            showscale=False, hovertext=[[text("walk.blocked_hover", lang, hover=h) for h in row] for row in hover],
            hoverinfo="text", hoverongaps=False, xgap=1, ygap=1,
            text=np.where(blocked, cell_texts, ""), texttemplate="%{text}" if show_values else "",
            textfont=dict(size=font_size, color="#555555"),
        ))
    return traces


def _texts(panel: Panel) -> np.ndarray:
    """What the cells of a panel write: its own text, or its values as a student writes them."""
    return panel.text if panel.text is not None else format_numbers(panel.matrix)


def _axis(labels: Sequence[str], length: int, cell_px: float, min_font: int, reverse: bool = False,
          axis: str = "y") -> dict:
    """Integer positions with labels as tick text, `cell_px` apart: the font fitted to the cells, labels
    turned or thinned to every k-th where even the smallest readable font (`min_font`) would collide (`tick_plan`)."""
    settings = token_axis(labels, length, reverse=reverse)
    plan = tick_plan(settings["ticktext"], cell_px, axis, min_font=min_font)
    return settings | tick_labels(settings["tickvals"], settings["ticktext"], plan)


def _is_tokens(labels: Sequence[str]) -> bool:
    """Token labels cannot be thinned out; numbered dimensions (and positions) can."""
    return not all(str(label).isdigit() for label in labels)


def _box(i0: int, j0: int, i1: int | None = None, j1: int | None = None) -> dict:
    """An outline around cells (i0..i1, j0..j1), rows i and columns j; one cell when i1, j1 are not given."""
    i1, j1 = i0 if i1 is None else i1, j0 if j1 is None else j1
    return dict(type="rect", x0=j0 - 0.5, x1=j1 + 0.5, y0=i0 - 0.5, y1=i1 + 0.5, line=dict(color=OUTLINE, width=3))


def _head_marks(w: HeadWalkthrough) -> tuple[dict, ...]:
    """Dashed lines between the heads' columns of the concatenation, and an outline around the chosen head."""
    last_row = len(w.query_tokens) - 1
    lines = tuple(dict(type="line", x0=i * w.d_head - 0.5, x1=i * w.d_head - 0.5, y0=-0.5, y1=last_row + 0.5,
                       line=dict(color="#555555", width=2, dash="dash")) for i in range(1, w.n_heads))
    return (*lines, _box(0, w.head * w.d_head, last_row, (w.head + 1) * w.d_head - 1))
