"""Step 6, heads: several heads in one layer learn different patterns (the same word, the previous one...)."""

from __future__ import annotations

import numpy as np
import torch

from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.grid import attention_grid
from transformer_viz.lessons.step import Host, Step, layer_head
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

HEAD_PATTERNS = ("same", "previous", "first")


def head_patterns(trace: Trace, kind: str, layer: int) -> dict[str, np.ndarray]:
    """Per head, the mean weight a query puts on its own position, the one before it, and position 0.

    "previous" and "first" average over the queries that have such a key (query 0 has no previous key
    and is its own first). -> {pattern: (heads,)}
    """
    weights = trace[attention_name(kind, layer, "weights")][0].double()  # (heads, q_len, k_len)
    q_len = weights.shape[1]
    return {"same": torch.diagonal(weights, dim1=1, dim2=2).mean(-1).numpy(),
            "previous": torch.diagonal(weights, offset=-1, dim1=1, dim2=2).mean(-1).numpy(),
            "first": weights[:, 1:q_len, 0].mean(-1).numpy()}


def show(host: Host) -> tuple[str, str]:
    ctx = host.page()
    if ctx is None:
        return host.text("lesson.heads.question", layer="?"), ""
    layer, head = layer_head(ctx, "decoder_self")
    question = host.text("lesson.heads.question", layer=layer + 1)
    grid = ctx.figure(attention_grid, "decoder_self", "weights", width=host.width, highlight=(layer, head))
    host.chart(grid, key="lesson_grid")
    patterns = head_patterns(ctx.trace, "decoder_self", layer)
    host.table({host.text("lesson.heads.table_head"): [str(h + 1) for h in range(ctx.trace.config.n_heads)]}
               | {host.text(f"lesson.heads.{p}"): [f"{v:.0%}" for v in patterns[p]] for p in patterns})
    best = int(patterns["previous"].argmax())
    others = ", ".join(f"{h + 1}: {v:.0%}" for h, v in enumerate(patterns["previous"]) if h != best)
    return question, host.text("lesson.heads.answer", head=best + 1, previous=patterns["previous"][best],
                               others=others)


STEP = Step(
    "heads", "attention",
    r"\begin{aligned}\mathrm{MultiHead}(Q,K,V)&=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)"
    r"\,W^{O}\\ \mathrm{head}_j&=\mathrm{Attention}(QW_j^{Q},KW_j^{K},VW_j^{V})\end{aligned}",
    show, setup={"task": "en-fr", "src_text": TASKS["en-fr"].examples[0], "kind": "decoder_self", "head": 1},
)
