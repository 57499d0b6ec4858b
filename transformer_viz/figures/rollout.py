"""Across the layers: attention rollout as a heatmap, and a table of what every head does.

Attention rollout (Abnar & Zuidema 2020) chains the self-attention maps of several layers;
it ignores the values and the feed-forward, so its title calls it an approximation. The head
table scores every (layer, head) for the patterns a class looks for: the same position, the
previous one, the first one (a "sink"), how spread out it is, and, given gold pairs, how
often cross-attention's largest weight lands on the right source token. The numbers come
from `transformer_viz.analysis.measures`; this module only draws.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.analysis.measures import HEAD_SCORES, alignment_scores, attention_rollout, head_scores
from transformer_viz.figures.colours import SEQUENTIAL
from transformer_viz.figures.fit import MIN_FONT_PX, at_least, cell_font, tick_labels, tick_plan, widest_em
from transformer_viz.figures.look import merge_into, styled_figure
from transformer_viz.figures.numbers import format_number, format_numbers
from transformer_viz.figures.panel_layout import PAGE_PX
from transformer_viz.figures.token_axes import cell_label, token_axis, token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import ATTENTION_KINDS
from transformer_viz.trace.record import check_trace

MAX_TEXT_TOKENS = 14  # write the values in the cells up to this many tokens
BESIDE_PX = 150  # beside the cells: the axis title, the colour bar and its title (and the query labels, measured)


def rollout_figure(trace, kind: str, layer: int | None = None, *, min_font: int = MIN_FONT_PX,
                   lang: str = "en") -> go.Figure:
    """Heatmap of `analysis.attention_rollout` (q_len, q_len) through layers 1..`layer` + 1 (default: all).

    Rows are the tokens after the last layer chained, columns the input tokens, colours 0 to 1.
    The title says "an approximation". Only encoder_self and decoder_self (ValueError for cross).
    Laid out for the main column (PAGE_PX); no text under `min_font`.
    """
    check_trace(trace)
    rollout = attention_rollout(trace, kind, layer)  # (q_len, q_len)
    q_len = len(rollout)
    last = trace.n_layers(kind) - 1 if layer is None else int(layer)
    tokens, _ = trace.attention_tokens(kind)
    texts = token_texts(tokens, q_len)
    cells = np.array([[text("rollout.hover", lang, cell=cell_label(i, texts[i], j, texts[j], lang),
                             value=format_number(rollout[i, j], 3)) for j in range(q_len)] for i in range(q_len)],
                     dtype=object)
    cell_height = float(np.clip(560 / q_len, 14, 64))
    label_font = at_least(14, min_font)
    cell_width = (PAGE_PX - BESIDE_PX - widest_em(texts) * label_font) / q_len
    numbers = format_numbers(rollout)
    font = cell_font(cell_width, cell_height, numbers.ravel(), largest=label_font, smallest=label_font,
                     min_font=min_font) if q_len <= MAX_TEXT_TOKENS else None
    heatmap = go.Heatmap(
        z=rollout.astype(np.float32), x=np.arange(q_len), y=np.arange(q_len), zmin=0.0, zmax=1.0,
        colorscale=SEQUENTIAL, customdata=cells, hovertemplate="%{customdata}<extra></extra>",
        text=numbers if font else None, texttemplate="%{text}" if font else None, textfont_size=font,
        colorbar=dict(title=dict(text=text("rollout.value", lang), side="right"), thickness=14),
    )
    keys = tick_plan(texts, cell_width, "x", largest=label_font, min_font=min_font)
    queries = tick_plan(texts, cell_height, "y", largest=label_font, min_font=min_font)
    layers = text("rollout.one_layer", lang) if last == 0 else text("rollout.layers", lang, last=last + 1)
    side = text(f"side.{ATTENTION_KINDS[kind].query_side}", lang)
    return styled_figure(
        [heatmap], {}, text("rollout.title", lang, kind=text(f"kind.{kind}", lang), layers=layers),
        height=round(cell_height * q_len) + 150, then=dict(
            margin=dict(t=120),
            xaxis=merge_into(dict(**token_axis(tokens, q_len), side="top", range=[-0.5, q_len - 0.5],
                                  title=dict(text=text("rollout.x", lang, side=side), standoff=6)),
                             tick_labels(range(q_len), texts, keys)),
            yaxis=merge_into(dict(**token_axis(tokens, q_len), range=[q_len - 0.5, -0.5],
                                  title=text("rollout.y", lang, last=last + 1, side=side)),
                             tick_labels(range(q_len), texts, queries))), min_font=min_font)


def head_score_table(trace, kind: str, pairs=None, *, lang: str = "en"):
    """A pandas DataFrame, one row per (layer, head) (both counting from 1), for a sortable table.

    Columns: layer, head, the four `analysis.head_scores` (same position, previous position, first
    position, entropy in bits) and, when gold `pairs` (source i, target j) are given for cross-attention,
    `analysis.alignment_scores`. Column names are in `lang`; values are rounded to 3 decimals.
    """
    import pandas as pd

    scores = head_scores(trace, kind)
    if pairs is not None:
        if kind != "cross":
            raise ValueError("Gold pairs link target tokens to source tokens: they score cross-attention only.")
        scores["alignment"] = alignment_scores(trace, pairs)
    layers, heads = scores["entropy"].shape
    layer, head = np.indices((layers, heads))
    columns = {text("scores.layer", lang): layer.ravel() + 1, text("scores.head", lang): head.ravel() + 1}
    for score in (*HEAD_SCORES, "alignment"):
        if score in scores:
            columns[text(f"scores.{score}", lang)] = np.round(scores[score].ravel(), 3)
    return pd.DataFrame(columns)
