"""Step 6, heads: the heads of one layer each attend in their own way; the answer measures how, in this model
(the word itself, the previous one, the first position), rather than promising a pattern the weights may lack."""

from __future__ import annotations

import numpy as np
import torch

from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.grid import attention_grid
from transformer_viz.lessons.question import CHOICE, Choice, Question, unasked
from transformer_viz.lessons.step import Host, Step, held_back, layer_head
from transformer_viz.model.attention import MultiHeadAttention
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

HEAD_PATTERNS = ("same", "previous", "first")
MOSTLY = 0.5  # a head "looks mostly at" a pattern that takes at least half of a query's weight on average


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


def strongest_pattern(patterns: dict[str, np.ndarray]) -> tuple[int, str, float]:
    """The clearest pattern of the layer: (head, pattern, weight) with the largest mean weight of all."""
    weight, pattern, head = max((float(patterns[p][h]), p, h) for p in HEAD_PATTERNS for h in range(len(patterns[p])))
    return head, pattern, weight


def heads_answer(host: Host, patterns: dict[str, np.ndarray]) -> str:
    """The answer, one fact a paragraph: the previous-word head, the layer's strongest pattern, and each pattern
    that no head gives most of its weight to."""
    previous = patterns["previous"]
    best = int(previous.argmax())
    others = ", ".join(f"{h + 1}: {v:.0%}" for h, v in enumerate(previous) if h != best)
    head, pattern, weight = strongest_pattern(patterns)
    clearest = (host.text("lesson.heads.strongest_is_it") if (head, pattern) == (best, "previous") else
                host.text("lesson.heads.strongest", head=head + 1, pattern=host.text(f"lesson.heads.{pattern}"),
                          weight=weight))
    paragraphs = [host.text("lesson.heads.answer", head=best + 1, previous=previous[best], others=others), clearest]
    for pattern in HEAD_PATTERNS:
        head = int(patterns[pattern].argmax())
        if patterns[pattern][head] < MOSTLY:
            paragraphs.append(host.text("lesson.heads.none_mostly", pattern=host.text(f"lesson.heads.{pattern}"),
                                        weight=patterns[pattern][head], head=head + 1))
    return "\n\n".join(paragraphs)


def show(host: Host) -> Question:
    ctx = host.page()
    if ctx is None:
        return unasked(host.text("lesson.heads.question", layer="?"), "")
    layer, _ = layer_head(ctx, "decoder_self")
    question = host.text("lesson.heads.question", layer=layer + 1)
    patterns = head_patterns(ctx.trace, "decoder_self", layer)
    answer_head = int(patterns["previous"].argmax())
    grid = host.slot()
    grid.chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width), key="lesson_grid")
    table = held_back(host, host.text("lesson.heads.held_back"))

    def reveal(host: Host) -> str:
        grid.again().chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width,
                                      highlight=(layer, answer_head)), key="lesson_grid_marked")
        heads = [str(h + 1) for h in range(ctx.trace.config.n_heads)]
        table.again().table({host.text("lesson.heads.table_head"): heads}
                            | {host.text(f"lesson.heads.{p}"): [f"{v:.0%}" for v in patterns[p]] for p in patterns})
        return heads_answer(host, patterns)

    heads = ctx.trace.config.n_heads
    return Question(question, CHOICE, reveal, truth=str(answer_head + 1),
                    choices=tuple(Choice(str(h + 1), host.text("head", head=h + 1)) for h in range(heads)),
                    tells=tuple(patterns.values()))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((MultiHeadAttention.split_heads, ("return x.view(batch, length, self.n_heads, self.d_head)",)),
        (MultiHeadAttention.forward, ("merged = context.transpose(1, 2)",
                                      "return self.hook_out(self.out_proj(merged))")))

STEP = Step(
    "heads", "attention",
    r"\begin{aligned}\mathrm{MultiHead}(Q,K,V)&=\mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)"
    r"\,W^{O}\\ \mathrm{head}_j&=\mathrm{Attention}(QW_j^{Q},KW_j^{K},VW_j^{V})\end{aligned}",
    show, setup={"task": "en-fr", "src_text": TASKS["en-fr"].examples[0], "kind": "decoder_self", "head": 1},
    code=CODE,
)
