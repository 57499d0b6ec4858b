"""Induction heads, measured (Olsson et al. 2022): on sequences of n random distinct letters repeated once,

    induction score of a head      = the mean attention from each token of the repeat to the token right after its
                                     earlier occurrence (from position n + k to position k + 1);
    previous-token score of a head = the mean attention from each position to the one before it;
    in-context loss                = the loss on the repeat's tokens against the same tokens in the first half.

Positions count <bos> as 0: the first half is at 1..n, the repeat at n + 1..2n (the model reads it but its last
token). A curve of these during training shows the phase change: the repeat's loss drops at the step the
induction score rises.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.data.tasks import Task
from transformer_viz.data.tasks.lm import sequence
from transformer_viz.trace.names import attention_name

PROBE_LETTERS = 12  # n of the measured sequences (the task's inputs have 8 to 15)


def repeated_sequences(task: Task, count: int, seed: int, letters: int = PROBE_LETTERS) -> tuple[torch.Tensor, int]:
    """`count` fresh sequences of `letters` distinct letters, repeated: (ids (count, 2 * letters), letters)."""
    rng = random.Random(seed)
    rows = [sequence(task, rng.sample(task.alphabet, letters))[0] for _ in range(count)]
    return torch.tensor(rows), letters


@dataclass(frozen=True)
class InductionMeasures:
    """What `measure` found: per layer and head (lists of lists, JSON-ready), and the two losses (nats)."""

    induction: list[list[float]]
    previous_token: list[list[float]]
    loss_first_half: float
    loss_repeat: float

    @property
    def best_head(self) -> tuple[int, int]:
        """(layer, head) of the highest induction score."""
        scores = np.array(self.induction)
        return tuple(int(i) for i in np.unravel_index(scores.argmax(), scores.shape))

    def to_dict(self) -> dict:
        return asdict(self)


def measure(model, ids: torch.Tensor, letters: int) -> InductionMeasures:
    """The scores of every head and the in-context losses of a decoder-only `model` on `ids` from
    `repeated_sequences`. The same tokens are scored in both halves: x2..xn first, then again in the repeat."""
    logits, trace = model.run_with_trace(ids)  # (batch, 2n, vocab)
    n, length = letters, ids.shape[1]
    repeat = torch.arange(n + 1, length)  # queries of the repeat holding x1..x(n-1), each (k := query - n)
    after_earlier = repeat - n + 1  # the token after the earlier occurrence: position k + 1
    previous = torch.arange(2, length)
    induction, previous_token = [], []
    for layer in range(model.config.n_decoder_layers):
        weights = trace[attention_name("decoder_self", layer, "weights")]  # (batch, heads, 2n, 2n)
        induction.append(weights[:, :, repeat, after_earlier].mean(dim=(0, 2)).tolist())
        previous_token.append(weights[:, :, previous, previous - 1].mean(dim=(0, 2)).tolist())
    losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
    losses = losses.view(ids.shape[0], length - 1)  # (batch, 2n - 1): position t predicts token t + 1
    return InductionMeasures(induction, previous_token, float(losses[:, 1:n].mean()),
                             float(losses[:, n + 1:].mean()))


def fresh_measures(model, task: Task, seed: int, count: int = 256) -> dict:
    """The measures on `count` fresh repeated sequences and the best head: what a checkpoint's metrics keep."""
    ids, letters = repeated_sequences(task, count, seed)
    measures = measure(model, ids, letters)
    layer, head = measures.best_head
    return {**measures.to_dict(), "best_head": [layer, head], "best_score": measures.induction[layer][head],
            "sequences": count, "letters": letters}


def training_probe(task: Task, every: int, count: int = 64,
                   seed: int = 2022) -> tuple[Callable, list[dict]]:
    """(on_step(model, step, loss), curve): call on_step after training steps; every `every` steps (and at step 0)
    it appends {"step", "train_loss", **measures} to `curve`, measured on the same fresh sequences each time."""
    ids, letters = repeated_sequences(task, count, seed)
    curve: list[dict] = []

    def on_step(model, step: int, loss: float | None) -> None:
        if step % every:
            return
        was_training = model.training
        model.eval()
        try:
            curve.append({"step": step, "train_loss": loss, **measure(model, ids, letters).to_dict()})
        finally:
            model.train(was_training)

    return on_step, curve


def phase_change(curve: list[dict]) -> dict:
    """The steps where in-context learning grows fastest (the repeat's loss falling below the first half's: early
    on both fall together, as the model learns which letters are common) and where the best induction score
    rises fastest, between consecutive points of a training curve."""
    steps = np.array([point["step"] for point in curve])
    in_context = np.array([point["loss_first_half"] - point["loss_repeat"] for point in curve])
    best_score = np.array([np.max(point["induction"]) for point in curve])
    drop, rise = np.diff(in_context).argmax(), np.diff(best_score).argmax()
    return {"loss_drop_step": int(steps[drop + 1]), "induction_rise_step": int(steps[rise + 1])}
