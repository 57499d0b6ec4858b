"""Decoding figures: the next-token distribution (greedy, or before and after sampling's reshaping) and where
each new token looked in the source."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from transformer_viz.config import is_whole
from transformer_viz.figures.attention_arrays import as_numpy, attention_arrays
from transformer_viz.figures.colours import HIGHLIGHT, LINE_COLOURS, MUTED, SEQUENTIAL
from transformer_viz.figures.fit import MIN_FONT_PX, at_least, text_em
from transformer_viz.figures.look import FONT, styled_figure
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import check_index, token_labels


def topk_bars(probabilities, vocab_tokens: Sequence[str], k: int = 5, chosen: int | None = None, *,
              min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Horizontal bars of the k most likely next tokens, most likely at the top, on a fixed 0-100 % axis.

    probabilities: (vocab,). The chosen token id (the argmax when None) is highlighted, and
    added as an extra bar when it is not among the top k. No text under `min_font`.
    """
    probabilities = as_numpy(probabilities).reshape(-1)  # (vocab,)
    if not is_whole(k) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1 (how many bars), got {k!r}.")
    order = [int(i) for i in np.argsort(-probabilities, kind="stable")[:k]]
    chosen = order[0] if chosen is None else check_index(chosen, len(probabilities), "chosen")
    if chosen not in order:
        order.append(chosen)
    names = [vocab_tokens[i] if i < len(vocab_tokens) else text("token_id", lang, id=i) for i in order]
    labels = token_texts(names, len(names))
    values = probabilities[order]  # (bars,)
    bars = go.Bar(
        x=values, y=np.arange(len(order)), orientation="h", customdata=np.array([labels, order], dtype=object).T,
        marker=dict(color=[HIGHLIGHT if i == chosen else MUTED for i in order]),
        text=[f"<b>{text('topk.chosen', lang, p=p)}</b>" if i == chosen else f"{p:.1%}"
              for i, p in zip(order, values, strict=True)],
        # The chosen bar's text inside it when the bar is long enough to hold it, else beside it: a 100 % bar's
        # text is never past the edge. The others are at most 50 %: beside them ("auto" would hide a 0.0 %).
        textposition=["auto" if i == chosen else "outside" for i in order], insidetextanchor="end",
        insidetextfont=dict(color="white"), cliponaxis=False,
        textfont=dict(size=at_least(15, min_font), color=[HIGHLIGHT if i == chosen else "#333333" for i in order]),
        hovertemplate=text("topk.hover", lang, token="%{customdata[0]}", id="%{customdata[1]}",
                            p="%{x:.2%}") + "<extra></extra>",
    )
    return styled_figure(
        [bars], {}, text("topk.title", lang, k=min(k, len(probabilities)), n=len(probabilities)),
        height=110 + 44 * len(order), min_font=min_font, then=dict(
            margin=dict(r=60), bargap=0.25, uniformtext=dict(minsize=at_least(12, min_font), mode="show"),
            xaxis=dict(range=[0, 1], tickformat=".0%", title=dict(text=text("probability", lang))),
            yaxis=dict(token_axis(names, len(order), reverse=True), tickfont=dict(size=at_least(16, min_font)))))


def sampling_bars(before, after, vocab_tokens: Sequence[str], chosen: int, k: int = 6, *,
                  min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """The k most likely next tokens, two bars each on a fixed 0-100 % axis: the model's distribution (`before`,
    softmax of the logits) and the one the token was drawn from (`after`: temperature, top-k, top-p).

    before, after: (vocab,). The drawn token id `chosen` has its "after" bar in the highlight colour, a series of
    its own (so the legend says it), and is added when it is not among the k most likely. No text under `min_font`.
    """
    before, after = as_numpy(before).reshape(-1), as_numpy(after).reshape(-1)  # (vocab,) each
    if before.shape != after.shape:
        raise ValueError(f"before and after must be distributions over the same tokens, got {len(before)} "
                         f"and {len(after)} probabilities.")
    if not is_whole(k) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1 (how many tokens), got {k!r}.")
    order = [int(i) for i in np.argsort(-before, kind="stable")[:k]]
    chosen = check_index(chosen, len(before), "chosen")
    if chosen not in order:
        order.append(chosen)
    names = [vocab_tokens[i] if i < len(vocab_tokens) else text("token_id", lang, id=i) for i in order]
    labels = token_texts(names, len(names))
    drawn = order.index(chosen)  # its row
    others = [row for row in range(len(order)) if row != drawn]

    def series(values: np.ndarray, rows: list[int], which: str, colour: str, name: str, shown: list[str]) -> go.Bar:
        return go.Bar(
            x=values[[order[row] for row in rows]], y=rows, orientation="h", name=name, marker=dict(color=colour),
            offsetgroup=which, customdata=[[labels[row], order[row]] for row in rows], text=shown,
            # Beside the bar, unless it is long enough to hold its text (a 100 % bar's text never past the edge).
            textposition=["inside" if values[order[row]] > 0.7 else "outside" for row in rows],
            insidetextanchor="end", insidetextfont=dict(color="white"), cliponaxis=False,
            textfont=dict(size=at_least(14, min_font), color=HIGHLIGHT if colour == HIGHLIGHT else "#333333"),
            hovertemplate=text("sampling.hover", lang, token="%{customdata[0]}", id="%{customdata[1]}",
                                which=text(f"sampling.{which}", lang), p="%{x:.2%}") + "<extra></extra>")

    rows = list(range(len(order)))
    bars = [series(before, rows, "before", MUTED, text("sampling.before", lang),
                   [f"{before[i]:.1%}" for i in order]),
            series(after, others, "after", LINE_COLOURS[0], text("sampling.after", lang),
                   [f"{after[order[row]]:.1%}" for row in others]),
            series(after, [drawn], "after", HIGHLIGHT, text("sampling.token_drawn", lang),
                   [text("sampling.drawn", lang, p=after[chosen])])]
    return styled_figure(
        bars, {}, text("sampling.title", lang, k=min(k, len(before)), n=len(before)), height=150 + 56 * len(order),
        min_font=min_font, then=dict(
            barmode="group", bargap=0.3, bargroupgap=0.05, margin=dict(r=80, t=110),
            uniformtext=dict(minsize=at_least(12, min_font), mode="show"),
            legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", traceorder="normal",
                        font=dict(size=at_least(14, min_font))),
            xaxis=dict(range=[0, 1], tickformat=".0%", title=dict(text=text("probability", lang))),
            yaxis=dict(token_axis(names, len(order), reverse=True), tickfont=dict(size=at_least(16, min_font)))))


def attention_by_step(step_traces: Sequence, layer: int, head: int | None = None,
                      produced: Sequence[str] | None = None, *, kind: str = "cross", min_font: int = MIN_FONT_PX,
                      lang: str = "en") -> go.Figure:
    """For greedy decoding: one row per step, where that step's last query looked in the source.

    step_traces: one Trace per step (Transformer.generate); layer and head are zero-based, head None
    averages the heads. Rows are labelled by the token produced (`produced`, else its id from the logits).
    A decoder-only model (`kind="decoder_self"`) looks back over its own stream instead: columns are the last
    step's tokens (the prompt and what was written), and a step's row is blank where its token did not exist yet.
    No text under `min_font`.
    """
    if not step_traces:
        raise ValueError("step_traces must hold at least one decoding step (the steps model.generate returns).")
    # (heads, keys) per step: where the step's last query, the one that chose its token, looked
    last_queries = [attention_arrays(trace, kind, layer).weights[:, -1] for trace in step_traces]
    n_heads = len(last_queries[0])
    if head is not None:
        head = check_index(head, n_heads, "head")
    rows = [w.mean(axis=0) if head is None else w[head] for w in last_queries]  # (keys,) per step
    src_len = max(len(row) for row in rows)
    matrix = np.full((len(rows), src_len), np.nan)  # (steps, keys): NaN where a key did not exist yet
    for k, row in enumerate(rows):
        matrix[k, : len(row)] = row
    n_steps = len(rows)
    keys = step_traces[-1].tgt_tokens if kind == "decoder_self" else step_traces[0].src_tokens
    if produced is None:
        produced = [text("token_id", lang, id=int(as_numpy(trace["logits"])[0, -1].argmax())) for trace in step_traces]
    row_labels = [f"{k + 1} → {token}" for k, token in enumerate(token_labels(produced, n_steps))]
    produced, sources = token_texts(produced, n_steps), token_texts(keys, src_len)
    cells = np.array([[text("by_step.cell", lang, step=k + 1, produced=produced[k], source=sources[j], position=j)
                       for j in range(src_len)] for k in range(n_steps)], dtype=object)
    weight = text("cell_value.weights", lang)
    heatmap = go.Heatmap(
        z=matrix, x=np.arange(src_len), y=np.arange(n_steps), customdata=cells, colorscale=SEQUENTIAL,
        # The title beside the bar: above it, it meets the top tick label.
        zmin=0.0, zmax=1.0, colorbar=dict(thickness=14, title=dict(text=weight, side="right")),
        hovertemplate=f"%{{customdata}}<br>{weight} %{{z:.3f}}<extra></extra>",
    )
    which = text("by_step.mean", lang, n=n_heads) if head is None else text("by_step.head", lang, head=head + 1)
    # Tall enough for the upright y title beside a few rows: longer than the plot, it reaches into the title.
    y_title_px = text_em(text("by_step.y", lang)) * at_least(FONT["size"], min_font)
    return styled_figure(
        [heatmap], {}, text("by_step.title" if kind == "cross" else "by_step.title_self", lang, layer=layer + 1,
                            which=which),
        height=round(max(300, 120 + 36 * n_steps, 150 + y_title_px)), min_font=min_font,
        then=dict(xaxis=dict(token_axis(keys, src_len), title=dict(text=text(
                  "by_step.x" if kind == "cross" else "by_step.x_self", lang))),
                  yaxis=dict(token_axis(row_labels, n_steps, reverse=True), title=dict(text=text("by_step.y", lang)))))
