"""Step 9, training: a few hundred steps turn random cross-attention into the mirror that reversing needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from transformer_viz.lessons.step import Host, Step, not_here
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

TRAIN_STEPS = 400


def mirror_mass(trace: Trace, layer: int, head: int) -> float:
    """How much of the cross-attention follows the anti-diagonal of reversing: the mean weight that decoder
    row i puts on source position n-1-i, over the n source tokens before <eos>. 1 = a perfect mirror."""
    weights = trace[attention_name("cross", layer, "weights")][0, head].double()  # (tgt_len, src_len)
    n = min(trace.src_tokens.index("<eos>") if "<eos>" in trace.src_tokens else weights.shape[1], weights.shape[0])
    return float(torch.stack([weights[i, n - 1 - i] for i in range(n)]).mean())


def reverse_mirror(host: Host, view, weights: str) -> float | None:
    """The mirror mass of the last cross-attention layer (mean of heads) with these weights, teacher-forced
    on the right answer; None when they cannot be had."""
    run = host.run_of(replace(view, weights=weights, tgt_text=view.src_text[::-1]))
    if run is None:
        return None
    layer = run.trace.n_layers("cross") - 1
    return float(np.mean([mirror_mass(run.trace, layer, h) for h in range(run.trace.config.n_heads)]))


def show(host: Host) -> tuple[str, str]:
    view = host.view()
    question = host.text("lesson.training.question")
    if view.task != "reverse":
        return question, not_here(host, host.text("task.reverse"))
    trained_steps = host.train(view)
    before, after, shipped = (reverse_mirror(host, view, w) for w in ("random", "trained", "pretrained"))
    after_text = host.text("lesson.training.not_yet") if after is None else f"{after:.0%}"
    return question, host.text("lesson.training.answer", before=before or 0.0, after=after_text,
                               shipped=shipped or 0.0, steps=trained_steps or view.train_steps)


STEP = Step("training", "training", r"\mathcal{L}=-\frac{1}{T}\sum_{t=1}^{T}\log P(y_t\mid y_{<t},\,x)", show,
            setup={"src_text": "hello", "weights": "random", "train_steps": TRAIN_STEPS})
