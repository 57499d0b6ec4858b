"""How well a trained model does a task: exact match of its greedy answers on fresh held-out inputs, its
teacher-forced token accuracy, and whether its attention follows the task's gold alignment, per layer.

An encoder-decoder's alignment is read from its cross-attention; a decoder-only model's from its masked
self-attention, from the position that writes an answer token to the prompt's tokens (data/tasks/lm.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_viz.analysis.architecture import architecture_of
from transformer_viz.data.tasks import Task
from transformer_viz.data.vocab import Vocab
from transformer_viz.trace.intervention import Intervention
from transformer_viz.train.loop import Model, attention_stack


@dataclass(frozen=True)
class Evaluation:
    """What `evaluate` measured on `samples` fresh held-out inputs, drawn with `seed`."""

    samples: int
    seed: int
    exact_match: float  # the share of greedy outputs equal to the correct output
    # The share of answer tokens (and <eos>) predicted right when the decoder reads the correct previous tokens.
    teacher_forced_accuracy: float
    exact_match_by_length: dict[int, float]  # input length in tokens -> exact match
    # Per decoder layer: for every target token with gold source positions, does the head-averaged cross-attention
    # (decoder-only: self-attention; teacher-forced on the correct answer) put its largest weight on one of them?
    alignment_by_layer: tuple[float, ...]
    # Per input, in the order measured (the order of the inputs; a decoder-only model's grouped by input length),
    # the same for every run of one n and seed, so two runs can be compared input by input (a paired bootstrap):
    # was the greedy output right; how many answer tokens were predicted right, and counted, teacher-forced.
    exact_by_input: tuple[bool, ...] = ()
    right_by_input: tuple[int, ...] = ()
    counted_by_input: tuple[int, ...] = ()

    @property
    def alignment_layer(self) -> int:
        """The decoder layer (from 0) whose attention follows the gold alignment best."""
        return int(np.argmax(self.alignment_by_layer))

    @property
    def alignment_accuracy(self) -> float:
        return self.alignment_by_layer[self.alignment_layer]

    def to_dict(self) -> dict:
        """The metrics a checkpoint's JSON keeps (`Pretrained.metrics`)."""
        return {"samples": self.samples, "seed": self.seed, "exact_match": self.exact_match,
                "teacher_forced_accuracy": self.teacher_forced_accuracy,
                "exact_match_by_length": dict(self.exact_match_by_length),
                "alignment_accuracy": self.alignment_accuracy, "alignment_layer": self.alignment_layer,
                "alignment_by_layer": list(self.alignment_by_layer)}


@dataclass
class _Tally:
    """The counts behind an Evaluation, summed over batches."""

    task: Task
    layers: int
    exact: list[bool] = field(default_factory=list)
    by_length: dict[int, list[bool]] = field(default_factory=dict)
    right: list[int] = field(default_factory=list)  # per input
    counted: list[int] = field(default_factory=list)  # per input
    aligned: int = 0
    hits: np.ndarray = field(init=False)  # (layers,) answer tokens whose strongest key is a gold source

    def __post_init__(self) -> None:
        self.hits = np.zeros(self.layers)

    def tokens(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """Teacher-forced predictions: logits (batch, length, vocab), labels (batch, length), <pad> not counted."""
        real = labels != Vocab.pad_id  # (batch, length)
        self.right += ((logits.argmax(-1) == labels) & real).sum(dim=1).tolist()
        self.counted += real.sum(dim=1).tolist()

    def answer(self, pieces: Sequence[str], output: list[str], looks_at: torch.Tensor, query_offset: int = 0,
               key_offset: int = 0) -> None:
        """One greedy answer, and where each layer's head-averaged attention looks most: looks_at (layers,
        queries) holds key positions; answer token j is written at query j + query_offset, input token i is
        key i + key_offset."""
        target, pairs = self.task.gold(pieces)
        self.exact.append(output == target)
        self.by_length.setdefault(len(pieces), []).append(output == target)
        sources: dict[int, set[int]] = {}
        for i, j in pairs:
            sources.setdefault(j, set()).add(i + key_offset)
        for j, allowed in sources.items():
            self.aligned += 1
            self.hits += np.array([looks_at[layer, j + query_offset].item() in allowed for layer in range(self.layers)])

    def evaluation(self, samples: int, seed: int) -> Evaluation:
        return Evaluation(samples=samples, seed=seed, exact_match=float(np.mean(self.exact)),
                          teacher_forced_accuracy=sum(self.right) / max(sum(self.counted), 1),
                          exact_match_by_length={k: float(np.mean(v)) for k, v in sorted(self.by_length.items())},
                          alignment_by_layer=tuple((self.hits / max(self.aligned, 1)).tolist()),
                          exact_by_input=tuple(self.exact), right_by_input=tuple(self.right),
                          counted_by_input=tuple(self.counted))


def _measure(model: Model, chunk: Sequence[str], intervention: Intervention | None, tally: _Tally) -> None:
    """A batch of inputs: their answers, token accuracy (teacher-forced) and alignment, as the model's
    Architecture generates, batches and aligns them."""
    task, architecture = tally.task, architecture_of(model)
    outputs = architecture.answers(model, task, chunk, intervention=intervention)
    *inputs, labels = architecture.training_batch(task, chunk)
    weights, logits = attention_stack(model, *inputs, intervention=intervention)
    tally.tokens(logits, labels)
    looks_at = weights.mean(dim=2).argmax(dim=-1)  # (layers, batch, queries)
    for row, (text, output) in enumerate(zip(chunk, outputs, strict=True)):
        pieces = task.split(text)
        query_offset, key_offset = architecture.alignment_offsets(task, pieces)
        tally.answer(pieces, output, looks_at[:, row], query_offset=query_offset, key_offset=key_offset)


def evaluate(model: Model, task: Task, n: int = 500, seed: int = 1, batch_size: int = 250,
             intervention: Intervention | None = None) -> Evaluation:
    """Exact match and attention alignment on `n` fresh held-out inputs (never the fixed training set),
    under `intervention` (None: none)."""
    rng = random.Random(seed)
    texts = [task.heldout_input(rng) for _ in range(n)]
    tally = _Tally(task, model.config.n_decoder_layers)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, n, batch_size):
            _measure(model, texts[start: start + batch_size], intervention, tally)
    finally:
        model.train(was_training)
    return tally.evaluation(n, seed)
