"""Step 5, masks: padding hides the <pad> keys, look-ahead hides the future; the decoder needs both."""

from __future__ import annotations

import torch

from transformer_viz.figures.masks import MASK_PX, mask_figures, masking_steps
from transformer_viz.lessons.question import NUMBER, Question, unasked
from transformer_viz.lessons.step import Host, Step, layer_head, not_here
from transformer_viz.model.attention import masked_softmax
from transformer_viz.model.masks import decoder_self_mask, padding_mask
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace


def blocked_by_padding_only(trace: Trace) -> list[tuple[int, int]]:
    """The (query, key) cells of the decoder's combined mask that are blocked although look-ahead alone would
    allow them: the queries' looks at target <pad> keys, on the diagonal (a <pad> query's own key) or under it."""
    combined = trace[attention_name("decoder_self", 0, "mask")][0, 0].bool()  # (tgt_len, tgt_len)
    look_ahead = torch.tril(torch.ones_like(combined))
    return [(int(q), int(k)) for q, k in (look_ahead & ~combined).nonzero()]


COMBINED = "decoder_self"  # mask_figures' key of the decoder's combined mask: what the question asks about


def show(host: Host) -> Question:
    view = host.view()
    ctx = host.page(pad_to=view.pad)
    if ctx is None:
        return unasked(host.text("lesson.masks.question", length=view.pad), "")
    # The length asked, or the model's longest where that is shorter (a longer input is not padded: not_here below)
    length = min(view.pad, len(ctx.trace.tgt_tokens))
    question = host.text("lesson.masks.question", length=length)
    figures = ctx.figure(mask_figures, width=MASK_PX)
    given = {title: fig for title, fig in figures.items() if title != COMBINED}  # the parts the class combines
    for column, (title, fig) in zip(host.columns(len(given)), given.items(), strict=True):
        column.chart(fig, key=f"lesson_mask_{title}")
    pads = ctx.trace.tgt_tokens.count("<pad>")
    if ctx.run.teacher_forced is False or not pads:
        return not_here(host, question, host.text("lesson.masks.why"))
    cells = blocked_by_padding_only(ctx.trace)
    combined = ctx.trace[attention_name("decoder_self", 0, "mask")][0, 0].float().numpy()  # (tgt_len, tgt_len)

    def reveal(host: Host) -> str:
        column, _ = host.columns(len(given))[:2] if len(given) > 1 else (host, None)
        column.chart(figures[COMBINED], key=f"lesson_mask_{COMBINED}")
        layer, head = layer_head(ctx, "decoder_self")
        host.chart(ctx.figure(masking_steps, "decoder_self", layer, head, width=host.width, max_width=host.max_width),
                   key="lesson_masking_steps")
        return host.text("lesson.masks.answer", n=len(cells), pads=pads,
                         cells=", ".join(f"({q}, {k})" for q, k in cells),
                         on=sum(q == k for q, k in cells), under=sum(q > k for q, k in cells))

    return Question(question, NUMBER, reveal, truth=float(len(cells)), low=0.0, high=float(length ** 2),
                    tells=(combined,))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((padding_mask, ("return (ids != pad_id)",)),
        (decoder_self_mask, ("causal = look_ahead_mask(", "return padding_mask(tgt_ids, pad_id) & causal")),
        (masked_softmax, ("masked_scores = scores.masked_fill(~mask", "weights = masked_scores.softmax(")))

STEP = Step(
    "masks", "masks",
    r"\begin{gathered}S=\frac{QK^{\top}}{\sqrt{d_k}},\qquad \mathrm{softmax}(\tilde S)\\ "
    r"\tilde S_{ij}=\begin{cases}S_{ij} & \text{%s}\\ -10^{9} & \text{%s}\end{cases}\end{gathered}",
    show, setup={"src_text": "hello", "tgt_text": "olleh", "pad": 8, "kind": "decoder_self", "layer": 0},
    formula_words=("lesson.masks.allowed", "lesson.masks.blocked"),
    code=CODE,
)
