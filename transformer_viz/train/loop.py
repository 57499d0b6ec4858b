"""One training loop for every task, used by the CLI (train.py), the app and the benchmark.

Teacher forcing (paper section 5): the decoder reads <bos> + the correct target and
learns to write target + <eos>, all positions at once thanks to the look-ahead mask.
The loss is cross-entropy over real tokens (padding ignored); the optimiser is AdamW
with the paper's betas, a linear warm-up and then a cosine decay of the learning rate.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from transformer_viz.config import is_real, is_whole
from transformer_viz.data.tasks import Task, encode_source, encode_target
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import Transformer
from transformer_viz.model.hooks import dropout_from, intervening
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import attention_name


@dataclass(frozen=True)
class AttentionSnapshot:
    """Cross-attention of the probe example at one step, for an animation of attention taking shape.

    `weights` (layers, heads, tgt_len, src_len) holds every decoder layer; rows are the
    decoder inputs `tgt_tokens` (<bos> + target), columns the source `src_tokens` (+ <eos>).
    """

    step: int
    weights: np.ndarray
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]


@dataclass(frozen=True)
class StepInfo:
    """What `on_step` receives after each optimiser step: the batch's loss and token accuracy."""

    step: int
    loss: float
    accuracy: float
    lr: float
    snapshot: AttentionSnapshot | None = None


@dataclass
class TrainResult:
    """history: (step, loss, accuracy) per step; snapshots: the probe's attention over time."""

    history: list[tuple[int, float, float]] = field(default_factory=list)
    snapshots: list[AttentionSnapshot] = field(default_factory=list)
    steps: int = 0
    stopped_early: bool = False
    seconds: float = 0.0


def recommended_threads(max_threads: int = 2) -> int:
    """CPU threads for training: up to `max_threads` (the project's budget is two cores), counting
    only the cores the 1-minute load average leaves free.

    Every op of this small model is split across the threads, and each op waits for its
    slowest thread: on an idle machine a second thread speeds training up about 1.4x, but
    when another process keeps that core busy it slows training down many times.
    """
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not available on Windows
        load = 0.0
    free = (os.cpu_count() or 1) - load
    return max(1, min(max_threads, int(free + 0.5)))


def pad(rows: Sequence[Sequence[int]], pad_id: int = Vocab.pad_id) -> torch.Tensor:
    """Ragged id lists -> (batch, longest) int64, padded on the right."""
    ids = torch.full((len(rows), max(len(row) for row in rows)), pad_id, dtype=torch.int64)  # (batch, len)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.int64)
    return ids


def make_batch(task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Input texts -> (src (batch, src_len), decoder input (batch, tgt_len), labels (batch, tgt_len))."""
    src, tgt_in, labels = [], [], []
    for text in texts:
        pieces = task.split(text)
        target = task.target_tokens(pieces)
        src.append([*task.src_vocab.encode(pieces), Vocab.eos_id])
        body = task.tgt_vocab.encode(target)
        tgt_in.append([Vocab.bos_id, *body])
        labels.append([*body, Vocab.eos_id])
    return pad(src), pad(tgt_in), pad(labels)


def batch_stream(task: Task, batch_size: int, rng: random.Random) -> Iterator[list[str]]:
    """Endless batches of input texts: drawn from `task.training_inputs()` when the task has a
    fixed training set, otherwise fresh from `task.sample_input` at every step."""
    pool = task.training_inputs()
    while True:
        yield rng.choices(pool, k=batch_size) if pool else [task.sample_input(rng) for _ in range(batch_size)]


def lr_factor(step: int, steps: int, warmup: int) -> float:
    """Linear warm-up from 0 over `warmup` steps, then cosine decay to a tenth of the peak at `steps`."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def cross_attention(model: Transformer, src_ids: torch.Tensor, tgt_ids: torch.Tensor,
                    intervention: Intervention | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Every decoder layer's cross-attention, stacked, and the logits (teacher-forced):
    -> (layers, batch, heads, tgt_len, src_len), (batch, tgt_len, vocab)."""
    logits, trace = model.run_with_trace(src_ids, tgt_ids, intervention)
    return torch.stack([trace[attention_name("cross", i, "weights")]
                        for i in range(model.config.n_decoder_layers)]), logits


def probe_snapshot(model: Transformer, task: Task, step: int) -> AttentionSnapshot:
    """The cross-attention of the task's first example, teacher-forced on its correct answer."""
    probe = task.examples[0]
    src = encode_source(task, probe)
    tgt = encode_target(task, task.target(probe))
    was_training = model.training
    model.eval()
    try:
        weights = cross_attention(model, src.ids, tgt.ids)[0][:, 0]  # (layers, heads, tgt_len, src_len)
    finally:
        model.train(was_training)
    return AttentionSnapshot(step, weights.numpy().copy(), src.tokens, tgt.tokens)


def train(
    model: Transformer, task: Task, *, steps: int | None = None, batch_size: int | None = None,
    lr: float | None = None, warmup: int | None = None, seed: int = 0, label_smoothing: float | None = None,
    on_step: Callable[[StepInfo], None] | None = None, snapshot_every: int = 0,
    should_stop: Callable[[], bool] | None = None, intervention: Intervention | None = None,
) -> TrainResult:
    """Train `model` in place on `task` and return its history.

    Settings left as None come from `task.train_defaults`. Deterministic for a given seed (at the
    process's thread count): the batches (see `batch_stream`) come from `random.Random(seed)`, dropout's
    masks from `torch.Generator().manual_seed(seed)` (see `dropout_from`). Torch's process-wide state is
    left alone, so trainings in threads of one process never disturb each other: the global RNG is neither
    seeded nor drawn from (give a fresh model its own: `Transformer(config, generator=...)`), and the thread
    count is set by whoever owns the process (the CLI, train/pool.py's workers, the server), never here.
    With `snapshot_every` > 0 the probe's attention is captured before training, every `snapshot_every`
    steps and after the last step. `should_stop()` is asked before every step; returning True ends training
    early. The whole run (snapshots too) is under `intervention`: e.g. `Intervention(look_ahead=False)`
    trains a decoder that may read the future.
    """
    defaults = task.train_defaults
    steps = defaults.steps if steps is None else steps
    batch_size = defaults.batch_size if batch_size is None else batch_size
    lr = defaults.lr if lr is None else lr
    warmup = defaults.warmup if warmup is None else warmup
    label_smoothing = defaults.label_smoothing if label_smoothing is None else label_smoothing
    _check_settings(steps=steps, batch_size=batch_size, warmup=warmup, snapshot_every=snapshot_every, seed=seed,
                    lr=lr, label_smoothing=label_smoothing)

    batches = batch_stream(task, batch_size, random.Random(seed))
    loss_fn = nn.CrossEntropyLoss(ignore_index=Vocab.pad_id, label_smoothing=label_smoothing)
    optimizer, schedule = _optimizer(model, lr, steps, warmup)
    result = TrainResult()
    start = time.perf_counter()
    was_training = model.training
    with dropout_from(torch.Generator().manual_seed(seed)), intervening(model.checked(intervention)):
        if snapshot_every > 0:
            result.snapshots.append(probe_snapshot(model, task, 0))
        model.train()
        try:
            for step in range(1, steps + 1):
                if should_stop is not None and should_stop():
                    result.stopped_early = True
                    break
                loss, accuracy = _training_step(model, make_batch(task, next(batches)), loss_fn, optimizer, schedule)
                result.history.append((step, loss, accuracy))
                result.steps = step
                snapshot = None
                if snapshot_every > 0 and (step % snapshot_every == 0 or step == steps):
                    snapshot = probe_snapshot(model, task, step)
                    result.snapshots.append(snapshot)
                if on_step is not None:
                    on_step(StepInfo(step, loss, accuracy, schedule.get_last_lr()[0], snapshot))
        finally:
            model.train(was_training)
            result.seconds = time.perf_counter() - start
    return result


def _check_settings(*, steps, batch_size, warmup, snapshot_every, seed, lr, label_smoothing) -> None:
    """Raise ValueError, naming the setting, for a training setting of the wrong kind or out of its range."""
    for label, value, least in (("steps", steps, 1), ("batch_size", batch_size, 1), ("warmup", warmup, 0),
                                ("snapshot_every", snapshot_every, 0)):
        if not is_whole(value) or value < least:
            raise ValueError(f"{label} must be a whole number of at least {least}, got {value!r}.")
    if not is_whole(seed):
        raise ValueError(f"seed must be a whole number, got {seed!r}.")
    if not (is_real(lr) and 0 < lr < math.inf):
        raise ValueError(f"lr must be a positive number, got {lr!r}.")
    if not (is_real(label_smoothing) and 0 <= label_smoothing <= 1):
        raise ValueError(f"label_smoothing must be a number from 0 to 1, got {label_smoothing!r}.")


def _optimizer(model: Transformer, lr: float, steps: int,
               warmup: int) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW with the paper's betas and a little weight decay, its learning rate scheduled by `lr_factor`."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, steps, warmup))


def _training_step(model: Transformer, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor], loss_fn: nn.Module,
                   optimizer: torch.optim.Optimizer,
                   schedule: torch.optim.lr_scheduler.LRScheduler) -> tuple[float, float]:
    """One optimiser step on a `make_batch` batch, teacher-forced; returns its loss and its token accuracy
    (over real tokens, as predicted before the step)."""
    src, tgt_in, labels = batch
    logits = model(src, tgt_in)  # (batch, tgt_len, vocab)
    loss = loss_fn(logits.flatten(0, 1), labels.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    real = labels != Vocab.pad_id  # (batch, tgt_len)
    accuracy = ((logits.argmax(-1) == labels) & real).sum().item() / real.sum().item()
    return loss.item(), accuracy


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
    # (teacher-forced on the correct answer) put its largest weight on one of them?
    alignment_by_layer: tuple[float, ...]

    @property
    def alignment_layer(self) -> int:
        """The decoder layer (from 0) whose cross-attention follows the gold alignment best."""
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


def evaluate(model: Transformer, task: Task, n: int = 500, seed: int = 1, batch_size: int = 250,
             intervention: Intervention | None = None) -> Evaluation:
    """Exact match and attention alignment on `n` fresh held-out inputs (never the fixed training set),
    under `intervention` (None: none)."""
    rng = random.Random(seed)
    texts = [task.heldout_input(rng) for _ in range(n)]
    was_training = model.training
    model.eval()
    exact, by_length, right, counted = [], {}, 0, 0
    hits = np.zeros(model.config.n_decoder_layers)
    aligned = 0
    try:
        for start in range(0, n, batch_size):
            chunk = texts[start: start + batch_size]
            src, tgt_in, labels = make_batch(task, chunk)
            out, _ = model.generate(src, max_new_tokens=task.max_target_len + 1,
                                    bos_id=Vocab.bos_id, eos_id=Vocab.eos_id, intervention=intervention)
            weights, logits = cross_attention(model, src, tgt_in, intervention)
            weights = weights.mean(dim=2)  # (layers, batch, tgt_len, src_len)
            real = labels != Vocab.pad_id  # (batch, tgt_len)
            right += ((logits.argmax(-1) == labels) & real).sum().item()
            counted += real.sum().item()
            looks_at = weights.argmax(dim=-1)  # (layers, batch, tgt_len)
            for row, (text, output) in enumerate(zip(chunk, decode_rows(task, out), strict=True)):
                pieces = task.split(text)
                target, pairs = task.gold(pieces)
                exact.append(output == target)
                by_length.setdefault(len(pieces), []).append(output == target)
                sources: dict[int, set[int]] = {}
                for i, j in pairs:
                    sources.setdefault(j, set()).add(i)
                for j, allowed in sources.items():
                    aligned += 1
                    hits += np.array([looks_at[layer, row, j].item() in allowed for layer in range(len(hits))])
    finally:
        model.train(was_training)
    return Evaluation(samples=n, seed=seed, exact_match=float(np.mean(exact)),
                      teacher_forced_accuracy=right / max(counted, 1),
                      exact_match_by_length={k: float(np.mean(v)) for k, v in sorted(by_length.items())},
                      alignment_by_layer=tuple((hits / max(aligned, 1)).tolist()))
