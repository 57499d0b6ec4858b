"""Step 4, scaling: without the division by √d_k, wide heads' scores saturate the softmax towards one key."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from transformer_viz.figures.colours import HIGHLIGHT, LINE_COLOURS, MUTED
from transformer_viz.figures.fit import MIN_FONT_PX, at_least, text_em
from transformer_viz.figures.look import FONT, base_layout
from transformer_viz.i18n import text
from transformer_viz.lessons.question import NUMBER, Question
from transformer_viz.lessons.step import Host, Step
from transformer_viz.model.attention import scaled_dot_product_attention

D_KS = (2, 4, 8, 16, 32, 64, 128, 256, 512)
ASKED_D_K, N_KEYS = 256, 8


def softmax_entropy(d_ks, n_keys: int, scaled: bool, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """Mean entropy (bits) of softmax(q·k / √d_k) rows over `n_keys` keys, for q and k with unit-variance
    entries (as after a LayerNorm and an initialised projection). -> (len(d_ks),)

    Without the scaling the scores' spread grows like √d_k and the softmax saturates towards one key.
    """
    generator = torch.Generator().manual_seed(seed)
    entropies = []
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(samples, n_keys, d_k, generator=generator, dtype=torch.float64)
        scores = (q @ k.transpose(1, 2)).squeeze(1)  # (samples, n_keys)
        if scaled:
            scores = scores / math.sqrt(d_k)
        p = scores.softmax(-1)
        entropies.append(float(-(p * torch.log2(p.clamp_min(1e-300))).sum(-1).mean()))
    return np.array(entropies)


def entropies() -> tuple[np.ndarray, np.ndarray]:
    return softmax_entropy(D_KS, N_KEYS, scaled=True), softmax_entropy(D_KS, N_KEYS, scaled=False)


def softmax_entropy_figure(d_ks: Sequence[int], scaled: Sequence[float], unscaled: Sequence[float] | None,
                           n_keys: int, min_font: int = MIN_FONT_PX, lang: str = "en") -> go.Figure:
    """Mean entropy (bits) of softmax rows over `n_keys` keys against d_k (log axis), with ÷√d_k and (unless
    `unscaled` is None) without; a dotted line at log₂(n_keys), the entropy of uniform attention. No text under
    `min_font`."""
    fig = go.Figure()
    lines = ((scaled, "saturation.scaled", LINE_COLOURS[0]), (unscaled, "saturation.unscaled", HIGHLIGHT))
    for values, key, colour in lines[:1 if unscaled is None else 2]:
        fig.add_scatter(x=list(d_ks), y=list(values), mode="lines+markers", name=text(key, lang),
                        line=dict(color=colour, width=3), marker=dict(size=8),
                        hovertemplate=text("saturation.hover", lang) + "<extra></extra>")
    uniform = float(np.log2(n_keys))
    fig.add_hline(y=uniform, line=dict(color=MUTED, dash="dot"),
                  annotation_text=text("saturation.uniform", lang, bits=f"{uniform:.0f}"),
                  annotation_position="top right")
    # Tall enough for the upright y title: longer than the plot, it reaches into the title.
    y_title_px = text_em(text("saturation.bits", lang)) * at_least(FONT["size"], min_font)
    base_layout(fig, text("saturation.title", lang, n_keys=n_keys), height=round(max(360, 160 + y_title_px)),
                min_font=min_font)
    fig.update_xaxes(type="log", title=text("saturation.d_k", lang), tickvals=list(d_ks),
                     ticktext=[str(d) for d in d_ks])
    fig.update_yaxes(title=text("saturation.bits", lang), range=[0, uniform * 1.15])
    # Inside the plot's bottom left, where both lines are still high: under the axis it met the axis title.
    fig.update_layout(legend=dict(x=0.01, y=0.02, xanchor="left", yanchor="bottom", bgcolor="rgba(255,255,255,0.8)"))
    return fig


def entropy_chart(*, unscaled: bool = True, min_font: int = MIN_FONT_PX, lang: str) -> go.Figure:
    """The entropies of the scaled (and unscaled) softmax by d_k (the same for every view)."""
    scaled, without = entropies()
    return softmax_entropy_figure(D_KS, scaled, without if unscaled else None, N_KEYS, min_font=min_font, lang=lang)


def show(host: Host) -> Question:
    scaled, unscaled = host.cached(entropies)
    figure = host.slot()  # the curve without the division is the answer: drawn with it
    figure.chart(host.shared_figure(entropy_chart, unscaled=False, min_font=host.min_font), key="lesson_entropy")
    at = D_KS.index(ASKED_D_K)
    keys, bits = 2 ** unscaled[at], unscaled[at]

    def reveal(host: Host) -> str:
        figure.again().chart(host.shared_figure(entropy_chart, min_font=host.min_font), key="lesson_entropy_both")
        return host.text("lesson.scaling.answer", unscaled=keys, bits_unscaled=bits, scaled=2 ** scaled[at],
                         bits_scaled=scaled[at], n_keys=N_KEYS, uniform=np.log2(N_KEYS))

    return Question(host.text("lesson.scaling.question", d_k=ASKED_D_K, n_keys=N_KEYS), NUMBER, reveal,
                    truth=float(keys), tolerance=0.5, low=1.0, high=float(N_KEYS), tells=(keys, bits, unscaled))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((scaled_dot_product_attention, ("scores = q @ k.transpose(-2, -1)", "scores = scores / math.sqrt(")),)

STEP = Step(
    "scaling", "head", r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right)V",
    show, setup={"src_text": "hello", "kind": "encoder_self", "layer": 0},
    code=CODE,
)
