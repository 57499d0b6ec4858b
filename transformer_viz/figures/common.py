"""What every figure shares: colour scales, token axes, the base layout.

Figures are pure Plotly: numpy arrays or Trace entries in, go.Figure out. Colour
scales are set explicitly on every trace, because importing Streamlit changes
Plotly's default template.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..recording import name

# The three uses of attention: (stack, sublayer, query side, key side).
ATTENTION_KINDS = {
    "encoder_self": ("encoder", "self_attn", "src", "src"),
    "decoder_self": ("decoder", "self_attn", "tgt", "tgt"),
    "cross": ("decoder", "cross_attn", "tgt", "src"),
}

# Colour-blind-safe scales that stay readable on a projector.
SEQUENTIAL = "Viridis"  # attention weights, masks: 0 dark -> 1 bright
DIVERGING = "RdBu_r"  # signed values (embeddings, scores): blue < 0 < red
MASK_COLOURS = [[0.0, "#3b3b3b"], [1.0, "#f2c14e"]]  # blocked (dark) / may attend (amber)
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=14)


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    """Apply the shared look: white template, readable font, tight margins."""
    fig.update_layout(
        template="plotly_white", font=FONT, title=dict(text=title, x=0.0, xanchor="left") if title else None,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10), height=height,
        hoverlabel=dict(font_size=14),
    )
    return fig


def token_labels(tokens: Sequence[str] | None, length: int) -> list[str]:
    """Tick text for positions 0..length-1; without tokens, the positions themselves."""
    if tokens is None:
        return [str(i) for i in range(length)]
    return [str(t) for t in tokens[:length]] + [str(i) for i in range(len(tokens), length)]


def token_axis(tokens: Sequence[str] | None, length: int, reverse: bool = False) -> dict:
    """An axis of integer positions with tokens as tick text, so a repeated token keeps its own column."""
    axis = dict(tickmode="array", tickvals=list(range(length)), ticktext=token_labels(tokens, length),
                showgrid=False, zeroline=False)
    if reverse:
        axis["autorange"] = "reversed"  # first query at the top
    return axis


def as_numpy(tensor) -> np.ndarray:
    """A trace entry (torch tensor) or array-like as a numpy array."""
    return tensor.numpy() if hasattr(tensor, "numpy") else np.asarray(tensor)


def attention_name(kind: str, layer: int, leaf: str) -> str:
    """attention_name("cross", 1, "weights") -> "decoder.layers.1.cross_attn.weights"."""
    stack, sublayer, _, _ = ATTENTION_KINDS[kind]
    return name(stack, layer, sublayer, leaf)


def attention_tokens(trace, kind: str) -> tuple[list[str] | None, list[str] | None]:
    """(query tokens, key tokens) of an attention kind, from the trace's display strings."""
    _, _, query_side, key_side = ATTENTION_KINDS[kind]
    tokens = {"src": trace.src_tokens, "tgt": trace.tgt_tokens}
    return tokens[query_side], tokens[key_side]


def n_layers(trace, kind: str) -> int:
    """How many layers of this kind the trace's config has."""
    stack = ATTENTION_KINDS[kind][0]
    return trace.config.n_encoder_layers if stack == "encoder" else trace.config.n_decoder_layers

# Lines and bars: the Okabe-Ito palette (colour-blind safe), set explicitly on every trace.
LINE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
HIGHLIGHT = "#D55E00"  # the chosen token, the current step
MUTED = "#9aa5b1"  # everything else


def symmetric_limit(*arrays) -> float:
    """The largest |value| over the arrays, for a colour range centred on 0 (1.0 if all are zero)."""
    limit = max((float(np.abs(a).max()) for a in arrays if np.size(a)), default=0.0)
    return limit if limit > 0 else 1.0
