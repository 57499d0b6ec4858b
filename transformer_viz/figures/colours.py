"""The colours every figure shares, set explicitly on every trace: importing Streamlit changes Plotly's default
template."""

from __future__ import annotations

# Colour-blind-safe scales that stay readable on a projector.
SEQUENTIAL = "Viridis"  # attention weights, masks: 0 dark -> 1 bright
DIVERGING = "RdBu_r"  # signed values (embeddings, scores): blue < 0 < red
MASK_COLOURS = [[0.0, "#3b3b3b"], [1.0, "#f2c14e"]]  # blocked (dark) / may attend (amber)
TEXT_COLOUR = "#2a3f5f"
GRID_COLOUR = "#EBF0F8"
# Lines and bars: the Okabe-Ito palette (colour-blind safe), set explicitly on every trace.
LINE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
HIGHLIGHT = "#D55E00"  # the chosen token, the current step
MUTED = "#9aa5b1"  # everything else
# Attention cells the mask blocks: a neutral grey that no colour scale above contains.
BLOCKED_GREY = "#c8c8c8"
