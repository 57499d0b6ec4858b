"""Step 3, positions: attention alone cannot tell where a token stands; the sinusoidal encoding can."""

from __future__ import annotations

from dataclasses import replace

import torch

from transformer_viz.data.tasks import TASKS, Task, encode_source
from transformer_viz.figures.embeddings import trace_curves, trace_similarity
from transformer_viz.lessons.question import CHOICE, Choice, Question, unasked
from transformer_viz.lessons.step import Host, Step, held_back
from transformer_viz.model import Transformer
from transformer_viz.model.embeddings import _interleave, sinusoidal_encoding


@torch.no_grad()
def shuffle_difference(model: Transformer, task: Task, text: str, order: list[int]) -> float:
    """Read the tokens of `text` in `order`: the largest difference between the encoder outputs of the
    shuffled input and the original outputs put in the same order. 0 (up to rounding) without positions:
    self-attention alone cannot tell where a token stands."""
    src_ids = encode_source(task, text, model.config.max_len).ids  # (1, n + 1), ending with <eos>
    n = src_ids.shape[1] - 1
    if sorted(order) != list(range(n)):
        raise ValueError(f"order must reorder the {n} tokens of {text!r}, got {order}")
    keep = [*order, n]  # <eos> stays last
    original, _ = model.encode(src_ids)  # (1, n + 1, d_model)
    moved, _ = model.encode(src_ids[:, keep])
    return float((original[0, keep] - moved[0]).abs().max())


SAME = 1e-4  # the largest difference of two encoder outputs that are the same up to float32 rounding


def show(host: Host) -> Question:
    ctx = host.page()
    view = host.view()
    text, backwards = view.src_text, view.src_text[::-1]
    question = host.text("lesson.positions.question", text=host.literal(text), shuffled=host.literal(backwards))
    if ctx is None:
        return unasked(question, "")
    task = TASKS[view.task]
    order = list(range(len(task.split(text))))[::-1]
    # Measured on an encoder, whatever the shown model: its self-attention has no mask (sinusoidal needs an even width)
    even = replace(view, architecture="encoder_decoder", d_model=view.d_model + view.d_model % 2)
    differences = {p: shuffle_difference(host.random_model(replace(even, positional=p).model_config(), view.seed),
                                         task, text, order)
                   for p in ("none", "sinusoidal")}
    measured = held_back(host, host.text("lesson.positions.held_back"))
    if ctx.trace.form.one_stream:
        host.caption(host.text("lesson.positions.encoder"))
    side = ctx.trace.form.sides[0]  # the input's positions
    if f"{side}_embed.position" in ctx.trace:  # not in a model with no table of positions (a Hugging Face Llama, T5)
        curves, similarity = host.columns(2)
        d = ctx.trace.config.d_model
        curves.chart(ctx.figure(trace_curves, side, tuple(sorted({0, 1, d // 2, d - 1}))), key="lesson_curves")
        similarity.chart(ctx.figure(trace_similarity, side), key="lesson_similarity")

    def reveal(host: Host) -> str:
        none_column, sine_column = measured.again().columns(2)
        none_column.metric(host.text("lesson.positions.none"), f"{differences['none']:.1e}")
        sine_column.metric(host.text("lesson.positions.sinusoidal"), f"{differences['sinusoidal']:.2f}")
        return host.text("lesson.positions.answer", **differences)

    return Question(question, CHOICE, reveal, truth="yes" if differences["none"] < SAME else "no",
                    choices=(Choice("yes", host.text("lesson.yes")), Choice("no", host.text("lesson.no"))),
                    tells=tuple(differences.values()))


# The lines of the model's own code this step is about (shown beside it; analysis/source.py).
CODE = ((sinusoidal_encoding, ("return _interleave(position / 10000.0",)),
        (_interleave, ("encoding[:, 0::2] = torch.sin(angle)", "encoding[:, 1::2] = torch.cos(angle)")))

STEP = Step(
    "positions", "embeddings",
    # Two lines where two formulas would be wider than the text column on a projector.
    r"\begin{aligned}PE_{(pos,\,2i)}&=\sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)\\ "
    r"PE_{(pos,\,2i+1)}&=\cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)\end{aligned}",
    show, setup={"src_text": "hello"},
    code=CODE,
)
