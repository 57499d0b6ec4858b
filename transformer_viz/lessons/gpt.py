"""Step 10, GPT is the decoder alone: no encoder and no cross-attention; the prompt and the answer are one stream,
and the masked self-attention finds in the prompt what cross-attention found in the source."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from transformer_viz.data.tasks import TASKS
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.grid import attention_grid
from transformer_viz.lessons.question import CHOICE, Question, head_choices, unasked
from transformer_viz.lessons.step import Host, Step, held_back, not_here
from transformer_viz.model.decoder_only import DecoderOnlyTransformer
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

EXAMPLE = "stressed"  # reversed: "desserts"


def gold_cells(trace: Trace, task, prompt_len: int) -> list[tuple[int, int]]:
    """(query, key) of every answer token and the prompt token it comes from: answer token j is written at the
    position before it (prompt_len - 1 + j), prompt token i sits at position 1 + i (after <bos>)."""
    pieces = list(trace.tgt_tokens[1:prompt_len - 1])
    _, pairs = task.gold(pieces)
    return [(prompt_len - 1 + j, 1 + i) for i, j in pairs if prompt_len - 1 + j < len(trace.tgt_tokens)]


def looks_at_gold(trace: Trace, kind: str, cells: list[tuple[int, int]]) -> np.ndarray:
    """(layers, heads): the share of `cells` whose query gives its largest weight to its key."""
    shares = []
    for layer in range(trace.n_layers(kind)):
        weights = trace[attention_name(kind, layer, "weights")][0]  # (heads, queries, keys)
        strongest = weights.argmax(dim=-1)  # (heads, queries)
        shares.append([np.mean([int(strongest[h, q]) == k for q, k in cells]) for h in range(weights.shape[0])])
    return np.array(shares)


def best_head(shares: np.ndarray) -> tuple[int, int]:
    return tuple(int(i) for i in np.unravel_index(shares.argmax(), shares.shape))


def show(host: Host) -> Question:
    ctx = host.page()
    question = host.text("lesson.gpt.question")
    if ctx is None:
        return unasked(question, "")
    if not ctx.trace.form.one_stream or ctx.run.teacher_forced or not ctx.architecture.toy:
        return not_here(host, question, host.text("lesson.gpt.why"))
    task, prompt_len = TASKS[ctx.view.task], ctx.run.prompt_len
    cells = gold_cells(ctx.trace, task, prompt_len)
    shares = looks_at_gold(ctx.trace, "decoder_self", cells)
    layer, head = best_head(shares)
    host.caption(host.text("lesson.gpt.left"))
    grid = host.slot()
    grid.chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width), key="lesson_gpt_grid")
    paper_run = host.run_of(replace(ctx.view, architecture="encoder_decoder", weights="pretrained", kind="cross"))
    if paper_run is not None:  # the two one under the other: side by side, a projector cuts their heads' names
        host.caption(host.text("lesson.gpt.right"))
        host.chart(attention_grid(paper_run.trace, "cross", width=host.width, min_font=host.min_font,
                                  lang=host.lang), key="lesson_gpt_cross")
    held = held_back(host, host.text("lesson.gpt.held_back"))

    def reveal(host: Host) -> str:
        grid.again().chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width,
                                      highlight=(layer, head)), key="lesson_gpt_grid_marked")
        held.again().chart(ctx.figure(attention_heatmap, "decoder_self", layer, head, width=host.width),
                           key="lesson_gpt_head")
        first_query, first_key = cells[0]
        weight = float(ctx.trace[attention_name("decoder_self", layer, "weights")][0, head, first_query, first_key])
        return host.text("lesson.gpt.answer", layer=layer + 1, head=head + 1, share=shares[layer, head],
                         weight=weight, letter=ctx.trace.tgt_tokens[first_key], position=first_key,
                         answer=host.literal(ctx.run.output_text or ""))

    return Question(question, CHOICE, reveal, truth=f"{layer + 1}.{head + 1}",
                    choices=head_choices(*shares.shape, host.text), tells=(shares.ravel(),))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((DecoderOnlyTransformer.forward, ("mask = decoder_self_mask(", "hidden = self.decoder(",
                                          "return self.hook_logits(")),)

STEP = Step(
    "gpt", "attention",
    r"\begin{gathered}P(x_{t+1}\mid x_{\le t})=\mathrm{softmax}\big(W_{\mathrm{out}}\,h_t\big)\\ "
    r"h=\mathrm{Decoder}_{\mathrm{masked}}(x_{\le t})\end{gathered}",
    show, setup={"architecture": "decoder_only", "src_text": EXAMPLE, "kind": "decoder_self"},
    code=CODE,
)
