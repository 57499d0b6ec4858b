"""Figures to take home: one standalone HTML file that works offline (plotly.js inlined, no CDN)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go
import plotly.io as pio

# In the file, the camera button of each figure saves an SVG (vector: sharp on paper and slides).
SVG_BUTTON = {"toImageButtonOptions": {"format": "svg"}, "displaylogo": False}


def standalone_html(figures: Sequence[go.Figure], title: str, caption: str = "") -> str:
    """One HTML page holding every figure, readable without a network: plotly.js is inlined once."""
    parts = [pio.to_html(fig, full_html=False, include_plotlyjs=i == 0, config=SVG_BUTTON)
             for i, fig in enumerate(figures)]
    body = "\n".join(f'<div class="figure">{part}</div>' for part in parts)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2rem;max-width:1200px} .figure{margin:2rem 0}</style>"
            f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(caption)}</p>\n{body}\n</body></html>")
