"""Inside the layers: the residual stream's size, the feed-forward's hidden units, the logit lens.

The residual stream (paper section 3.1: every sublayer's output is added to its input) is
drawn per layer as the norm of each token's vector, with bars for how much each sublayer
changed it. The feed-forward network (section 3.3) is drawn as its hidden activations.
The logit lens reads every decoder layer with the final readout (an approximation, said
in its title). The numbers come from `transformer_viz.analysis.measures`; this module only draws.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from transformer_viz.analysis.measures import LogitLens, residual_norms, sublayers_of
from transformer_viz.figures.attention_arrays import as_numpy
from transformer_viz.figures.colours import LINE_COLOURS, SEQUENTIAL
from transformer_viz.figures.fit import MIN_FONT_PX, at_least
from transformer_viz.figures.look import merge_into, styled_figure
from transformer_viz.figures.subplots import axis_key, subplot_axes, subplot_column
from transformer_viz.figures.token_axes import token_axis, token_texts
from transformer_viz.i18n import text
from transformer_viz.trace.names import check_index, check_stack, name
from transformer_viz.trace.record import check_trace

LENS_MIN_PX = 9  # on a screen the logit lens writes its (short) tokens down to this size


def _stack_tokens(trace, stack: str):
    return trace.src_tokens if stack == "encoder" else trace.tgt_tokens


def residual_figure(trace, stack: str, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """One panel per layer of `stack`: bars of how much each sublayer changed each token's residual stream,
    lines of the stream's L2 norm entering the layer (dotted) and after it.

    In pre-LN a bar is exactly what the sublayer added; in post-LN it is how far the stream moved,
    the LayerNorm included (the subtitle says which, when the trace knows its config). No text under `min_font`.
    """
    check_trace(trace)
    norms = residual_norms(trace, stack)
    layers, seq_len = norms["resid_post"].shape
    texts = token_texts(_stack_tokens(trace, stack), seq_len)
    positions = np.arange(seq_len)
    layout = subplot_column(layers, 0.12 / layers, [text("layer", lang, layer=layer + 1) for layer in range(layers)])

    def hover(what: str) -> str:
        return text("residual.hover", lang, token="%{customdata}", position="%{x}", what=what,
                     value="%{y:.2f}") + "<extra></extra>"

    traces = []
    for layer in range(layers):
        axes = subplot_axes(layer + 1)
        for colour, (sublayer, _) in zip(LINE_COLOURS, sublayers_of(trace, stack), strict=False):
            what = text(f"residual.{sublayer}", lang)
            traces.append(go.Bar(x=positions, y=norms[sublayer][layer], name=what, marker_color=colour,
                                 legendgroup=sublayer, showlegend=layer == 0, customdata=texts,
                                 hovertemplate=hover(what), **axes))
        for key, dash, colour in (("input", "dot", "#444444"), ("resid_post", "solid", "#000000")):
            what = text("residual.input" if key == "input" else "residual.stream", lang)
            traces.append(go.Scatter(x=positions, y=norms[key][layer], name=what, mode="lines+markers",
                                     line=dict(dash=dash, color=colour, width=2), marker=dict(size=6, color=colour),
                                     legendgroup=key, showlegend=layer == 0, customdata=texts,
                                     hovertemplate=hover(what), **axes))
        merge_into(layout[axis_key(axes["yaxis"])], dict(title=dict(text=text("residual.axis", lang)),
                                                          rangemode="tozero"))
    title = text("residual.title", lang, stack=text(f"stack.{stack}", lang))
    config = getattr(trace, "config", None)
    if config is not None:
        note = text("residual.pre_ln" if config.norm_first else "residual.post_ln", lang)
        title += f"<br><span style='font-size:{at_least(13, min_font)}px'>{note}</span>"
    # The layers' titles (make_subplots' annotations) are 16 px already: min_font leaves them
    return styled_figure(traces, layout, title, height=140 + 200 * layers, min_font=min_font, then={
        "barmode": "group", "bargap": 0.2, "margin": dict(t=104),  # the two-line title clears "Layer 1"
        "legend": dict(orientation="h", yanchor="top", y=-0.08 / layers - 0.04),
        axis_key(subplot_axes(layers)["xaxis"]): token_axis(_stack_tokens(trace, stack), seq_len)})


def ffn_figure(trace, stack: str, layer: int, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """The feed-forward's hidden activations of one layer: tokens (rows) × hidden units (columns).

    ReLU(x·W_1 + b_1) (batch, seq_len, d_ff), recorded as `ffn.hidden`; no text in the cells (d_ff may be
    512 wide). The title gives the share of (token, unit) cells that are active (ReLU > 0). No text under
    `min_font`.
    """
    check_trace(trace)
    check_stack(stack)
    layer = check_index(layer, trace.stack_layers(stack), f"{stack} layer")
    recorded = name(stack, layer, "ffn", "hidden")
    if recorded not in trace:
        raise ValueError(f"This trace did not record {recorded}: record one with model.run_with_trace.")
    hidden = as_numpy(trace[recorded])[0].astype(np.float32)  # (seq_len, d_ff)
    seq_len, d_ff = hidden.shape
    active = float((hidden > 0).mean()) if hidden.size else 0.0
    heatmap = go.Heatmap(
        z=hidden, x=np.arange(d_ff), y=np.arange(seq_len), zmin=0.0, zmax=max(float(hidden.max(initial=0.0)), 1e-6),
        colorscale=SEQUENTIAL, colorbar=dict(title=text("ffn.activation", lang), thickness=14),
        hovertemplate=text("ffn.hover", lang) + "<extra></extra>",
    )
    title = text("ffn.title", lang, stack=text(f"stack.{stack}", lang), layer=layer + 1, active=f"{active:.0%}")
    return styled_figure([heatmap], {}, title, height=max(300, 150 + 22 * seq_len), min_font=min_font, then=dict(
        xaxis=dict(title=dict(text=text("ffn.unit", lang)), showgrid=False, zeroline=False),
        yaxis=dict(token_axis(_stack_tokens(trace, stack), seq_len, reverse=True),
                   title=dict(text=text("ffn.tokens", lang)))))


def logit_lens_figure(lens: LogitLens, *, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """A table-like heatmap of `analysis.logit_lens`: rows the embeddings and each decoder layer, columns the
    decoder positions; a cell's text is its top token, its colour that token's probability (0 to 1).

    Titled as an approximation: the readout was trained on the last layer only. Cells too narrow for their
    tokens at `min_font` show colours only (the hover names the token).
    """
    if not isinstance(lens, LogitLens):
        raise ValueError(f"lens must be what analysis.logit_lens returns, got {type(lens).__name__}.")
    probabilities = np.asarray(lens.probabilities, np.float64)  # (layers + 1, tgt_len)
    rows, tgt_len = probabilities.shape
    if lens.top_tokens is None:
        top = [[text("token_id", lang, id=int(i)) for i in row] for row in lens.token_ids]
    else:
        top = [token_texts(row, tgt_len) for row in lens.top_tokens]
    row_names = [text("lens.embedding", lang), *(text("lens.layer", lang, layer=r) for r in range(1, rows))]
    inputs = token_texts(lens.input_tokens, tgt_len)
    cells = np.array([[text("lens.hover", lang, row=row_names[r], position=j, token=inputs[j], top=top[r][j],
                             p=f"{probabilities[r, j]:.1%}") for j in range(tgt_len)] for r in range(rows)],
                     dtype=object)  # (layers + 1, tgt_len)
    fitting = 560 / max(tgt_len, 1) / 3.2  # the font at which a cell holds about three characters
    smallest = LENS_MIN_PX if min_font <= MIN_FONT_PX else min_font
    font, shown = int(np.clip(fitting, smallest, at_least(16, min_font))), fitting >= smallest
    heatmap = go.Heatmap(
        z=probabilities, x=np.arange(tgt_len), y=np.arange(rows), zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL,
        text=np.array(top, dtype=object), texttemplate="%{text}" if shown else "", textfont_size=font,
        customdata=cells,
        hovertemplate="%{customdata}<extra></extra>",
        colorbar=dict(title=dict(text=text("probability", lang), side="right"),  # beside the bar: above it, it
                      thickness=14),  # meets the top tick label
    )
    return styled_figure([heatmap], {}, text("lens.title", lang), height=160 + 44 * rows, min_font=min_font,
                         then=dict(xaxis=dict(token_axis(lens.input_tokens, tgt_len),
                                              title=dict(text=text("lens.x", lang))),
                                   yaxis=token_axis(row_names, rows, reverse=True)))
