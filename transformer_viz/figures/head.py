"""Inside one head: every step of scaled dot-product attention (paper section 3.2) as annotated matrices.

Builders take a `HeadWalkthrough` (numbers already checked against the trace) and
return Plotly figures: one per step, in the order of the paper's equation
softmax(QKᵀ/√d_k, blocked scores replaced by the mask value)·V, then the concatenation of all heads and W_O.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go

from transformer_viz.analysis.walkthrough import HeadWalkthrough, InputSource
from transformer_viz.figures.attention_arrays import check_cell
from transformer_viz.figures.fit import (
    MIN_FONT_PX,
    at_least,
)
from transformer_viz.figures.look import styled_figure
from transformer_viz.figures.numbers import format_number, format_numbers
from transformer_viz.figures.panel_layout import (
    fits_with_values,
)
from transformer_viz.figures.panels import MAX_VALUE_COLS, Panel, outline, panel_grid
from transformer_viz.figures.token_axes import escape_text
from transformer_viz.i18n import text

# The steps in the order of the computation (the app explains each: head.step.<key>).
STEP_KEYS = ("x", "projections", "rotate", "qk", "scale", "mask", "softmax", "weighted_sum", "concat", "output")


# One step of the walkthrough: its panels (rows of matrices, None where a slot stays empty) and its title.
_Step = tuple[list[list[Panel | None]], str]


def dims(n: int) -> list[str]:
    """Labels of vector dimensions. Positions and dimensions count from 0, as in PE(pos, 2i); layers, heads
    and steps count from 1 (the first layer)."""
    return [str(i) for i in range(n)]


def source_text(source: InputSource, lang: str = "en") -> str:
    """How the walkthrough's X or M was obtained: "norm1(src_embed.out)" in English (the trace's names),
    "LayerNorm(编码器的输入（嵌入之和）)" in Chinese. `source`: HeadWalkthrough.x_query_source or .x_key_source."""
    if source.norm:
        return text("source.norm", lang, norm=source.norm, inner=source_text(replace(source, norm=None), lang))
    if source.stack is not None:  # a layer's residual stream
        return text(f"source.{source.leaf}", lang, stack=text(f"stack.{source.stack}", lang),
                     index=source.layer, layer=source.layer + 1)
    return text(f"source.{source.recorded}", lang)  # src_embed.out, tgt_embed.out, encoder.out


def step_keys(w: HeadWalkthrough) -> tuple[str, ...]:
    """The walkthrough's steps in order (STEP_KEYS; "rotate" only where the model rotates queries and keys)."""
    return tuple(key for key in STEP_KEYS if key != "rotate" or w.q_rot is not None)


def walkthrough_figures(w: HeadWalkthrough, cell: tuple[int, int] | None = None, *,
                        steps: Collection[str] | None = None, min_font: int = MIN_FONT_PX,
                        lang: str = "en") -> list[tuple[str, go.Figure]]:
    """The steps of one head as (step key, figure), in the order of `step_keys`; `cell` (query, key) is outlined.

    `steps`: only these (None: all; one the walkthrough lacks is left out). No text under `min_font`; `lang` is
    the language of every word drawn (formulas stay formulas).
    """
    if cell is not None:
        cell = check_cell(cell, len(w.query_tokens), len(w.key_tokens), ("query", "key"), "cell")
    makers = {
        "x": lambda: _input_step(w, lang),
        "projections": lambda: _projections_step(w, lang),
        "rotate": lambda: _rotate_step(w, cell, lang),  # rotary positions only (step_keys)
        "qk": lambda: _qk_step(w, cell),
        "scale": lambda: _scale_step(w, cell, lang),
        "mask": lambda: _mask_step(w, cell, lang),
        "softmax": lambda: _softmax_step(w, cell, lang),
        "weighted_sum": lambda: _weighted_sum_step(w, lang),
        "concat": lambda: _concat_step(w, lang),
        "output": lambda: _output_step(w, lang, min_font),
    }
    context = _walk_text("context", lang, kind=text(f"kind.{w.kind}", lang), layer=w.layer + 1, head=w.head + 1,
                         heads=w.n_heads)
    figures = []
    for key in step_keys(w):
        if steps is None or key in steps:
            cells, title = makers[key]()
            figures.append((key, panel_grid(cells, title, subtitle=context, colorbar=len(cells) * len(cells[0]) == 1,
                                            min_font=min_font, lang=lang)))
    return figures


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


def _rotate_step(w: HeadWalkthrough, cell: tuple[int, int] | None, lang: str) -> _Step:
    """Rotary positions: each pair of dimensions of q and k turned by its position's angle (the chosen query's and
    key's rows outlined), and the angles themselves."""
    qt, kt, dh = w.query_tokens, w.key_tokens, dims(w.d_head)
    q_len, k_len, d_head = len(qt), len(kt), w.d_head
    q_row = () if cell is None else (outline(cell[0], 0, cell[0], d_head - 1),)
    k_row = () if cell is None else (outline(cell[1], 0, cell[1], d_head - 1),)
    pairs = [str(i) for i in range(d_head // 2)]
    angle = _walk_text("angle_panel", lang)
    return [
        [Panel(w.q, qt, dh, f"Q {_size(q_len, d_head)}", marks=q_row),
         Panel(w.q_rot, qt, dh, f"Q′ = RoPE(Q) {_size(q_len, d_head)}", marks=q_row)],
        [Panel(w.k, kt, dh, f"K {_size(k_len, d_head)}", marks=k_row),
         Panel(w.k_rot, kt, dh, f"K′ = RoPE(K) {_size(k_len, d_head)}", marks=k_row)],
        [Panel(w.angles[:q_len], qt, pairs, angle), None],
    ], _walk_text("rotate_halves" if w.rotary_halves else "rotate", lang)


def _qk_step(w: HeadWalkthrough, cell: tuple[int, int] | None) -> _Step:
    """QKᵀ: the chosen cell is row `query` of Q times column `key` of Kᵀ (with rotary positions: Q′ and K′)."""
    qt, kt, dh = w.query_tokens, w.key_tokens, dims(w.d_head)
    q_len, k_len, d_head = len(qt), len(kt), w.d_head
    q_row = () if cell is None else (outline(cell[0], 0, cell[0], d_head - 1),)
    kt_col = () if cell is None else (outline(0, cell[1], d_head - 1, cell[1]),)
    turned = w.q_rot is not None
    q, k, mark = (w.q_rot, w.k_rot, "′") if turned else (w.q, w.k, "")
    return [[
        Panel(q, qt, dh, f"Q{mark} {_size(q_len, d_head)}", marks=q_row),
        Panel(k.T, dh, kt, f"K{mark}ᵀ {_size(d_head, k_len)}", marks=kt_col),
        Panel(w.qk, qt, kt, f"Q{mark}K{mark}ᵀ {_size(q_len, k_len)}", marks=_cell_box(cell)),
    ]], f"Q{mark}K{mark}ᵀ = Q{mark}·K{mark}ᵀ {_size(q_len, k_len)}"


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
    return ([[_weights_panel(w, "", marks=_cell_box(cell))]],
            f"{_walk_text('softmax', lang, masked=masked)} {_size(len(qt), len(kt))}")


def _weights_panel(w: HeadWalkthrough, title: str, marks: tuple[dict, ...] = ()) -> Panel:
    """The weights A (q_len, k_len), blocked cells grey and written "0" as on the Attention page: a blocked
    weight is exactly 0, not a rounded 0.00."""
    blocked = ~w.mask  # (q_len, k_len)
    texts = np.where(blocked & (w.weights == 0), "0", format_numbers(w.weights))  # (q_len, k_len)
    return Panel(w.weights, w.query_tokens, w.key_tokens, title, "weights", blocked=blocked, text=texts, marks=marks)


def _weighted_sum_step(w: HeadWalkthrough, lang: str) -> _Step:
    """The head's output: the weights times the values, A·V."""
    qt, kt, dh = w.query_tokens, w.key_tokens, dims(w.d_head)
    q_len, k_len, d_head = len(qt), len(kt), w.d_head
    head_name = _walk_text("head", lang, head=w.head + 1)
    return [[
        _weights_panel(w, f"A {_size(q_len, k_len)}"),
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
    return () if cell is None else (outline(*cell),)


def dot_product_figure(w: HeadWalkthrough, query: int, key: int, *, min_font: int = MIN_FONT_PX,
                       lang: str = "en") -> go.Figure:
    """Where one score comes from: the products q_i·k_i as a running sum (of q and k turned by their positions, with
    rotary positions), then ÷ √d_head (and + the position bias where the model adds one). No text under `min_font`."""
    query, key = check_cell((query, key), len(w.query_tokens), len(w.key_tokens), ("query", "key"))
    turned = w.q_rot is not None
    q, k = (w.q_rot, w.k_rot) if turned else (w.q, w.k)  # (q_len, d_head), (k_len, d_head)
    q, k = q[query].astype(float), k[key].astype(float)  # (d_head,)
    mark = "′" if turned else ""
    products = q * k  # (d_head,)
    total = float(products.sum())
    labels = [f"q{mark}{i}·k{mark}{i}" for i in range(len(products))] + [f"Σ = q{mark}·k{mark}"]
    if len(products) <= MAX_VALUE_COLS:  # the factors under each bar: a student can redo the sum by hand
        labels[:-1] = [f"{name}<br>{format_number(a)} × {format_number(b)}"
                       for name, a, b in zip(labels[:-1], q, k, strict=True)]
    hover = [f"{format_number(a)} × {format_number(b)} = {format_number(p)}"
             for a, b, p in zip(q, k, products, strict=True)]
    waterfall = go.Waterfall(
        x=labels, y=[*products, 0.0], measure=["relative"] * len(products) + ["total"],
        text=[format_number(p) for p in products] + [format_number(total)],
        textposition="outside" if len(products) <= MAX_VALUE_COLS else "none",
        hovertext=[*hover, text("dot.sum", lang, total=format_number(total))], hoverinfo="text",
        increasing=dict(marker_color="#d6604d"), decreasing=dict(marker_color="#4393c3"),
        totals=dict(marker_color="#3b3b3b"), connector=dict(line=dict(color="#9e9e9e", width=1)),
    )
    q_token, k_token = escape_text(w.query_tokens[query]), escape_text(w.key_tokens[key])
    bias = 0.0 if w.position_bias is None else float(w.position_bias[query, key])
    title_key = ("dot.title" + ("_bias" if w.position_bias is not None else "") + ("_turned" if turned else "")
                 + ("_folded" if w.unscaled else ""))
    title = text(title_key, lang, query=q_token, key=k_token, total=format_number(total),
                  scale=f"{w.scale:.2f}", bias=format_number(bias), score=format_number(total / w.scale + bias))
    note = text("dot.turned", lang) if turned else ""
    note += "" if w.mask[query, key] else text("dot.blocked", lang, fill=format_number(w.mask_value))
    subtitle = text("dot.subtitle", lang, query=query, query_text=q_token, key=key, key_text=k_token,
                    head=w.head + 1) + note
    return styled_figure([waterfall], {}, title, height=420, min_font=min_font, then=dict(
        showlegend=False, margin=dict(t=90), title=dict(subtitle=dict(text=subtitle, font=dict(
            size=at_least(14, min_font)))),
        yaxis=dict(zeroline=True, zerolinecolor="#666666", title=dict(text=text("dot.axis", lang)))))


def _head_marks(w: HeadWalkthrough) -> tuple[dict, ...]:
    """Dashed lines between the heads' columns of the concatenation, and an outline around the chosen head."""
    last_row = len(w.query_tokens) - 1
    lines = tuple(dict(type="line", x0=i * w.d_head - 0.5, x1=i * w.d_head - 0.5, y0=-0.5, y1=last_row + 0.5,
                       line=dict(color="#555555", width=2, dash="dash")) for i in range(1, w.n_heads))
    return (*lines, outline(0, w.head * w.d_head, last_row, (w.head + 1) * w.d_head - 1))
