"""How well a trained model does a task: exact match of its greedy answers on fresh held-out inputs, its
teacher-forced token accuracy, and whether its attention follows the task's gold alignment, per layer.

An encoder-decoder's alignment is read from its cross-attention; a decoder-only model's from its masked
self-attention, from the position that writes an answer token to the prompt's tokens (data/tasks/lm.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_viz.data.tasks import Task
from transformer_viz.data.tasks.lm import answer_of, lm_batch, prompt_ids
from transformer_viz.data.vocab import Vocab
from transformer_viz.trace.intervention import Intervention
from transformer_viz.train.loop import Model, attention_stack, is_decoder_only, make_batch


def decode_rows(task: Task, ids: torch.Tensor) -> list[list[str]]:
    """Generated ids (batch, 1 + n) starting with <bos> -> each row's tokens up to its <eos>."""
    rows = []
    for row in ids[:, 1:].tolist():
        if Vocab.eos_id in row:
            row = row[: row.index(Vocab.eos_id)]
        rows.append([token for token in task.tgt_vocab.decode(row) if token != Vocab.PAD])
    return rows


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


def _measure_seq2seq(model: Model, chunk: Sequence[str], intervention: Intervention | None, tally: _Tally) -> None:
    task = tally.task
    src, tgt_in, labels = make_batch(task, chunk)
    out, _ = model.generate(src, max_new_tokens=task.max_target_len + 1, bos_id=Vocab.bos_id, eos_id=Vocab.eos_id,
                            keep_steps=False, intervention=intervention)
    weights, logits = attention_stack(model, src, tgt_in, intervention=intervention)
    tally.tokens(logits, labels)
    looks_at = weights.mean(dim=2).argmax(dim=-1)  # (layers, batch, tgt_len)
    for row, (text, output) in enumerate(zip(chunk, decode_rows(task, out), strict=True)):
        tally.answer(task.split(text), output, looks_at[:, row])


def _measure_lm(model: Model, chunk: Sequence[str], intervention: Intervention | None, tally: _Tally) -> None:
    """A batch of prompts of one length (no padding in generation): answers, token accuracy, alignment."""
    task = tally.task
    pieces = [task.split(text) for text in chunk]
    prompts = torch.tensor([prompt_ids(task, row) for row in pieces])  # (batch, prompt_len)
    # A stream with no <eos> ("continue") is continued by as many tokens as its answer has (a chunk shares them).
    limit = task.max_target_len + 1 if task.lm_form == "answer" else len(task.target_tokens(pieces[0]))
    out, _ = model.generate(prompts, limit, Vocab.eos_id, keep_steps=False, intervention=intervention)
    ids, labels = lm_batch(task, chunk)  # (batch, length) each
    weights, logits = attention_stack(model, ids, intervention=intervention)
    tally.tokens(logits, labels)
    looks_at = weights.mean(dim=2).argmax(dim=-1)  # (layers, batch, length)
    written_from = prompts.shape[1] - 1  # the position of "=" writes the answer's first token
    for row, row_pieces in enumerate(pieces):
        output = answer_of(task, out[row].tolist(), prompts.shape[1])
        tally.answer(row_pieces, output, looks_at[:, row], query_offset=written_from, key_offset=1)


def _chunks(texts: Sequence[str], batch_size: int, key=None) -> Iterator[list[str]]:
    """`texts` in batches of at most `batch_size`; with `key`, each batch's texts share key(text)."""
    groups: dict[object, list[str]] = {}
    for text in texts:
        groups.setdefault(None if key is None else key(text), []).append(text)
    for group in groups.values():
        for start in range(0, len(group), batch_size):
            yield group[start: start + batch_size]


def evaluate(model: Model, task: Task, n: int = 500, seed: int = 1, batch_size: int = 250,
             intervention: Intervention | None = None) -> Evaluation:
    """Exact match and attention alignment on `n` fresh held-out inputs (never the fixed training set),
    under `intervention` (None: none). A decoder-only model answers prompts batched by length."""
    rng = random.Random(seed)
    texts = [task.heldout_input(rng) for _ in range(n)]
    tally = _Tally(task, model.config.n_decoder_layers)
    decoder_only = is_decoder_only(model)
    measure = _measure_lm if decoder_only else _measure_seq2seq
    was_training = model.training
    model.eval()
    try:
        for chunk in _chunks(texts, batch_size, key=(lambda text: len(task.split(text))) if decoder_only else None):
            measure(model, chunk, intervention, tally)
    finally:
        model.train(was_training)
    return tally.evaluation(n, seed)
