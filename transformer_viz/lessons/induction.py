"""Step 11, induction heads: a model trained on random letters repeated once learns, suddenly, to copy from
context; two heads in two layers do it (a previous-token head, then an induction head)."""

from __future__ import annotations

import numpy as np

from transformer_viz.analysis.induction import measure, phase_change
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.induction import phase_change_figure
from transformer_viz.lessons.question import CHOICE, Question, head_choices, unasked
from transformer_viz.lessons.step import Host, Step, held_back, not_here
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace
from transformer_viz.weights.pretrained import load_pretrained

CHECKPOINT = "induction-gpt"
EXAMPLE = "qwhzkvmcatj"


def training_record(name: str = CHECKPOINT) -> tuple[dict, ...]:
    """The shipped model's training curve (analysis/induction.py's training_probe), as its metadata keeps it."""
    return tuple(load_pretrained(name).meta["training"]["induction_curve"])


def curve_figure(name: str, *, min_font: int, lang: str):
    curve = training_record(name)
    return phase_change_figure(curve, phase_change(list(curve))["induction_rise_step"], min_font=min_font, lang=lang)


def scores_here(trace: Trace, prompt_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(layers, heads) induction and previous-token scores on this run: from each token of the repeat (the cue
    and what was written, positions prompt_len - 1 on) to the token after its first occurrence, and from each
    position to the one before."""
    letters = prompt_len - 2  # <bos>, the letters, the cue
    length = len(trace.tgt_tokens)
    queries = np.arange(prompt_len - 1, length)  # the repeat's tokens, position letters + k holds letter k
    keys = queries - letters + 1
    induction, previous = [], []
    for layer in range(trace.n_layers("decoder_self")):
        weights = trace[attention_name("decoder_self", layer, "weights")][0].numpy()  # (heads, length, length)
        induction.append(weights[:, queries, keys].mean(axis=1))
        previous.append(weights[:, np.arange(2, length), np.arange(1, length - 1)].mean(axis=1))
    return np.array(induction), np.array(previous)


def show(host: Host) -> Question:
    ctx = host.page()
    question = host.text("lesson.induction.question")
    if ctx is None:
        return unasked(question, "")
    if ctx.view.task != "induction" or ctx.run.teacher_forced or ctx.run.n_steps < 2:
        return not_here(host, question, host.text("lesson.induction.why"))
    induction, previous = scores_here(ctx.trace, ctx.run.prompt_len)
    layer, head = (int(i) for i in np.unravel_index(induction.argmax(), induction.shape))
    grid = host.slot()
    grid.chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width), key="lesson_induction_grid")
    held = held_back(host, host.text("lesson.induction.held_back"))

    def reveal(host: Host) -> str:
        grid.again().chart(ctx.figure(attention_grid, "decoder_self", "weights", width=host.width,
                                      highlight=(layer, head)), key="lesson_induction_grid_marked")
        here = held.again()
        here.chart(host.shared_figure(curve_figure, CHECKPOINT, min_font=host.min_font), key="lesson_induction_curve")
        here.chart(ctx.figure(attention_heatmap, "decoder_self", layer, head, width=host.width),
                   key="lesson_induction_head")
        previous_layer = 1 - layer if ctx.trace.n_layers("decoder_self") == 2 else layer
        return host.text(
            "lesson.induction.answer", layer=layer + 1, head=head + 1, score=induction[layer, head],
            previous_layer=previous_layer + 1, previous_head=int(previous[previous_layer].argmax()) + 1,
            previous=previous[previous_layer].max(), output=host.literal(ctx.run.output_text or "")) + "\n\n" + \
            curve_words(host, list(host.cached(training_record, CHECKPOINT)))

    return Question(question, CHOICE, reveal, truth=f"{layer + 1}.{head + 1}",
                    choices=head_choices(*induction.shape, host.text), tells=(induction.ravel(),))


def curve_words(host: Host, curve: list[dict]) -> str:
    """What the training curve shows, read from it: the repeat's loss at the start, where its fall began and
    ended (the steps where it had fallen 10 % and 90 % of the way), and where the induction score rose fastest."""
    losses = np.array([point["loss_repeat"] for point in curve])
    start, end = losses[0], losses[-1]
    began = next(p for p, loss in zip(curve, losses, strict=True) if loss <= start - 0.1 * (start - end))
    ended = next(p for p, loss in zip(curve, losses, strict=True) if loss <= start - 0.9 * (start - end))
    return host.text("lesson.induction.curve", start=start, began=began["step"], began_loss=began["loss_repeat"],
                     ended=ended["step"], ended_loss=ended["loss_repeat"], end=end,
                     first_half=curve[-1]["loss_first_half"], rise=phase_change(curve)["induction_rise_step"])


# The lines of the code this step's numbers come from (shown beside it; analysis/source.py).
CODE = ((measure, ("induction.append(", "previous_token.append(")),)

STEP = Step(
    "induction", "attention",
    r"\text{%s}=\frac{1}{n-1}\sum_{k=1}^{n-1} A_{\,n+k,\;k+1}",
    show, setup={"architecture": "decoder_only", "task": "induction", "positional": "rotary", "src_text": EXAMPLE,
                 "kind": "decoder_self", "layer": 1},
    formula_words=("lesson.induction.score",), code=CODE,
)
