"""Is attention an explanation? Every method's scores of the input tokens, aligned, beside their agreement.

The numbers come from `analysis.attribution.explain`; this module only draws. Each row is one method, scaled
by its own largest absolute value (so rows of very different units share one colour scale: the hover gives
the raw value), and the bars beside say how well the row's ranking of the tokens agrees with leave-one-out
(Spearman's ρ). Rows that are approximations say so with "≈". A row below numerical noise
(`Attribution.below_noise`: the <eos> after a finished sentence) is drawn blank; when leave-one-out is, a sentence
under the rows says so in place of the bars.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.analysis.attribution import NOISE, Attribution
from transformer_viz.figures.colours import DIVERGING, HIGHLIGHT, MUTED, SEQUENTIAL
from transformer_viz.figures.fit import (
    MIN_FONT_PX,
    TEXT_MIN_WIDTH,
    at_least,
    cell_text,
    tick_labels,
    tick_plan,
    widest_em,
    wrapped,
)
from transformer_viz.figures.look import merge_into, styled_figure
from transformer_viz.figures.numbers import format_number, format_numbers
from transformer_viz.figures.panel_layout import PAGE_PX
from transformer_viz.figures.subplots import subplot_axes, subplot_row
from transformer_viz.figures.token_axes import escape_text
from transformer_viz.i18n import text

REFERENCE = "leave_one_out"  # what every row is compared with
ROW_PX = 34
NARROW_PX = 540  # the narrowest the main column draws it (150 % zoom beside the sidebar): labels fit there
BARS_SHARE = 0.22  # of the width: the agreement bars


def method_rows(result: Attribution) -> list[str]:
    """The methods drawn, in reading order: attention of each layer, rollout and flow through all layers, the
    value norms of each layer, then the gradient methods and leave-one-out (those the result has)."""
    layers = sum(method.startswith("attention.") for method in result.scores)
    order = [f"attention.{i}" for i in range(1, layers + 1)] + [f"rollout.{layers}", f"flow.{layers}"]
    order += [f"value_norm.{i}" for i in range(1, layers + 1)]
    order += ["gradient", "grad_input", "integrated_gradients", REFERENCE]
    return [method for method in order if method in result.scores]


def method_label(method: str, lang: str) -> str:
    """"flow.2" -> "≈ Flow, layers 1–2" (escaped for Plotly)."""
    name, _, layer = method.partition(".")
    label = text(f"attribution.method.{name}", lang, layer=layer)
    return escape_text(label if name == REFERENCE else f"≈ {label}")


def scaled_rows(result: Attribution, rows: list[str]) -> np.ndarray:
    """(methods, tokens): each row divided by its largest absolute value; a row of zeros, or below numerical noise
    (its colours would rank rounding), is zeros."""
    raw = np.stack([result.scores[method] for method in rows])  # (methods, tokens)
    largest = np.abs(raw).max(-1, keepdims=True)
    measured = np.array([[not result.below_noise(method)] for method in rows])
    return np.divide(raw, largest, out=np.zeros_like(raw), where=(largest > 0) & measured)


def row_exponents(raw: np.ndarray) -> np.ndarray:
    """(methods,) powers of ten the cells of each row are written in: 0, or for a row whose largest absolute value
    is under 0.01 (a saturated gradient), the power that brings it to 1–10, so its cells do not all read 0.00."""
    largest = np.abs(raw).max(-1)
    tiny = (largest > 0) & (largest < 0.01)
    return np.where(tiny, np.floor(np.log10(np.where(tiny, largest, 1.0))), 0).astype(int)


def superscript(exponent: int) -> str:
    """-5 -> "⁻⁵"."""
    return str(exponent).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def power_of_ten(value: float) -> str:
    """1.23e-7 -> "1.2×10⁻⁷" (0 -> "0")."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}×10{superscript(int(exponent))}"


def noise_note(result: Attribution, labels_px: float, font: int, lang: str) -> dict:
    """The sentence that stands in for the bars when leave one out is below numerical noise: under the rows, from
    the left edge of their labels (`labels_px` wide), wrapped to the narrowest column."""
    largest = float(np.abs(result.scores[REFERENCE]).max(initial=0.0))
    sentence = text("attribution.noise", lang, largest=power_of_ten(largest), floor=power_of_ten(NOISE[REFERENCE]))
    return dict(text=wrapped(escape_text(sentence), NARROW_PX - 40, font), xref="paper", yref="paper", x=0, y=0,
                xanchor="left", yanchor="top", xshift=-labels_px, yshift=-12, align="left", showarrow=False,
                font=dict(size=font))


def attribution_figure(result: Attribution, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """One heatmap row per method over the scored tokens (scaled per row, −1 to 1), and beside it each row's
    Spearman ρ with leave-one-out (when the result has it, above numerical noise; below, a sentence under the
    rows says so). Laid out for the main column (PAGE_PX)."""
    rows = method_rows(result)
    scaled = scaled_rows(result, rows)
    n_rows, n_tokens = scaled.shape
    tokens = [escape_text(token) for token in result.tokens]
    labels = [method_label(method, lang) for method in rows]
    label_font = at_least(13, min_font)
    noise = REFERENCE in result.scores and result.below_noise(REFERENCE)
    with_bars = REFERENCE in result.scores and not noise
    notes = [noise_note(result, widest_em(labels) * label_font, label_font, lang)] if noise else []
    # Its lines, 1.4 fonts high each, and the gap of 16 px above them.
    notes_px = round(1.4 * label_font) * (notes[0]["text"].count("<br>") + 1) + 16 if noise else 0
    layout = subplot_row(2, 0.1, shared_yaxes=True, column_widths=(1 - BARS_SHARE, BARS_SHARE)) if with_bars else {}
    share = (layout["xaxis"]["domain"][1] if with_bars else 1.0) / n_tokens  # of the plot width, one cell
    fixed_px = widest_em(labels) * label_font + 60
    raw = np.stack([result.scores[m] for m in rows])  # (methods, tokens)
    exponents = row_exponents(raw)
    labels = [label if e == 0 else f"{label} (×10{superscript(e)})" for label, e in zip(labels, exponents, strict=True)]
    numbers = format_numbers(raw / 10.0 ** exponents[:, None])
    cells = cell_text(numbers.ravel(), ROW_PX, NARROW_PX, PAGE_PX, fixed_px, share, min_font)
    font = cells.font
    hover = np.array([[text("attribution.hover", lang, method=labels[r], token=tokens[t],
                            value=format_number(result.scores[rows[r]][t], 3)) for t in range(n_tokens)]
                      for r in range(n_rows)], dtype=object)
    heatmap = go.Heatmap(
        z=scaled.astype(np.float32), x=np.arange(n_tokens), y=np.arange(n_rows), zmin=-1.0, zmax=1.0, zmid=0.0,
        colorscale=DIVERGING, customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        text=numbers if font else None, texttemplate="%{text}" if font else None, textfont_size=font,
        showscale=False, **subplot_axes(1))
    data = [heatmap]
    if with_bars:
        agreement = result.correlations(REFERENCE)
        values = [agreement.get(method, np.nan) for method in rows]
        data.append(go.Bar(
            x=[0.0 if np.isnan(v) else v for v in values], y=np.arange(n_rows), orientation="h",
            marker_color=[MUTED if np.isnan(v) else HIGHLIGHT for v in values],
            text=["" if method == REFERENCE else ("–" if np.isnan(v) else format_number(v, 2))
                  for method, v in zip(rows, values, strict=True)], textposition="outside", cliponaxis=False,
            hovertemplate="ρ %{x:.2f}<extra></extra>", **subplot_axes(2)))
        merge_into(layout["xaxis2"], dict(range=[-1.15, 1.15], title=dict(text=text("attribution.rho", lang)),
                                          zeroline=True, zerolinecolor=MUTED, tickvals=[-1, 0, 1]))
    ticks = tick_plan(tokens, (NARROW_PX - fixed_px) * share, "x", largest=label_font, min_font=min_font)
    then = {} if cells.min_width is None else {"meta": {TEXT_MIN_WIDTH: cells.min_width}}
    return styled_figure(data, layout, text("attribution.title", lang, output=escape_text(result.output),
                                                 position=result.position, p=format_number(result.probability, 2)),
                         height=ROW_PX * n_rows + 170 + notes_px, width=PAGE_PX, then=dict(
        **then, showlegend=False, margin=dict(t=110, r=40, b=10 + notes_px), annotations=notes,
        xaxis=merge_into(dict(side="top", showgrid=False, zeroline=False, range=[-0.5, n_tokens - 0.5]),
                         tick_labels(range(n_tokens), tokens, ticks)),
        yaxis=dict(tickmode="array", tickvals=list(range(n_rows)), ticktext=labels, range=[n_rows - 0.5, -0.5],
                   tickfont=dict(size=label_font), showgrid=False, zeroline=False)), min_font=min_font)


def weights_and_norms_figure(result: Attribution, layer: int, *, min_font: int = MIN_FONT_PX,
                             lang: str = "en") -> go.Figure:
    """Kobayashi et al.'s point, per head of `layer` (from 1): the attention weights (left) beside the
    value-weighted norms ‖α·f(x)‖ (right, scaled by their largest), heads × scored tokens."""
    weights, norms = result.heads[f"attention.{layer}"], result.heads[f"value_norm.{layer}"]  # (heads, tokens)
    heads, n_tokens = weights.shape
    tokens = [escape_text(token) for token in result.tokens]
    largest = norms.max() or 1.0
    head_labels = [text("head", lang, head=h + 1) for h in range(heads)]
    label_font = at_least(13, min_font)
    ticks = tick_plan(tokens, (NARROW_PX - 160) / 2 / n_tokens, "x", largest=label_font, min_font=min_font)
    layout = subplot_row(2, 0.08, shared_yaxes=True, titles=(text("attribution.weights", lang),
                                                             text("attribution.norms", lang)))
    data = []
    for col, (values, shown, key) in enumerate(((weights, weights, "weight"), (norms, norms / largest, "norm")),
                                               start=1):
        hover = np.array([[text(f"attribution.hover_{key}", lang, head=h + 1, token=tokens[t],
                                value=format_number(values[h, t], 3)) for t in range(n_tokens)]
                          for h in range(heads)], dtype=object)
        data.append(go.Heatmap(z=shown.astype(np.float32), x=np.arange(n_tokens), y=np.arange(heads), zmin=0.0,
                               zmax=1.0, colorscale=SEQUENTIAL, showscale=col == 2, customdata=hover,
                               hovertemplate="%{customdata}<extra></extra>",
                               colorbar=dict(thickness=12, title=dict(text=text("attribution.scaled", lang),
                                                                      side="right")), **subplot_axes(col)))
        merge_into(layout[f"xaxis{'' if col == 1 else col}"], merge_into(
            dict(showgrid=False, zeroline=False, range=[-0.5, n_tokens - 0.5]),
            tick_labels(range(n_tokens), tokens, ticks)))
    merge_into(layout["yaxis"], dict(tickmode="array", tickvals=list(range(heads)), ticktext=head_labels,
                                     range=[heads - 0.5, -0.5], showgrid=False))
    return styled_figure(data, layout, text("attribution.heads_title", lang, layer=layer),
                         height=44 * heads + 190, width=PAGE_PX, then=dict(margin=dict(t=100)), min_font=min_font)
