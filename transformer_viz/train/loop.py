"""One training loop for every task and both architectures, used by the CLI (train.py), the app and the benchmark.

Teacher forcing (paper section 5): the decoder reads <bos> + the correct target and
learns to write target + <eos>, all positions at once thanks to the look-ahead mask.
A decoder-only model reads the prompt and its answer as one sequence (data/tasks/lm.py)
and is scored on the answer only. The loss is cross-entropy over the counted tokens (padding
ignored); the optimiser is AdamW with the paper's betas, a linear warm-up and then a cosine
decay of the learning rate.
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

from transformer_viz.analysis.architecture import architecture_of
from transformer_viz.config import is_real, is_whole
from transformer_viz.data.tasks import Task
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import DecoderOnlyTransformer, Transformer
from transformer_viz.model.hooks import dropout_from, intervening
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import attention_name

Model = Transformer | DecoderOnlyTransformer


@dataclass(frozen=True)
class AttentionSnapshot:
    """Cross-attention of the probe example at one step, for an animation of attention taking shape.

    `weights` (layers, heads, tgt_len, src_len) holds every decoder layer; rows are the
    decoder inputs `tgt_tokens` (<bos> + target), columns the source `src_tokens` (+ <eos>).
    A decoder-only model has no cross-attention: its snapshot is its masked self-attention over
    the probe's prompt and answer, rows and columns the same tokens.
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


def training_batch(model: Model, task: Task, texts: Sequence[str]) -> tuple[torch.Tensor, ...]:
    """The model's inputs and then its labels: (src, decoder input, labels), or for a decoder-only model
    (ids, labels) (its Architecture's `training_batch`)."""
    return architecture_of(model).training_batch(task, texts)


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


def attention_stack(model: Model, *inputs: torch.Tensor,
                    intervention: Intervention | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Every decoder layer's attention that aligns output with input (cross-attention; a decoder-only model: its
    self-attention), stacked, and the logits (teacher-forced): -> (layers, batch, heads, queries, keys),
    (batch, queries, vocab)."""
    kind = architecture_of(model).form.aligning_kind
    logits, trace = model.run_with_trace(*inputs, intervention=intervention)
    return torch.stack([trace[attention_name(kind, i, "weights")]
                        for i in range(model.config.n_decoder_layers)]), logits


def probe_snapshot(model: Model, task: Task, step: int) -> AttentionSnapshot:
    """The attention of the task's first example (see `attention_stack`), teacher-forced on its correct answer."""
    inputs, src_tokens, tgt_tokens = architecture_of(model).probe(task, task.examples[0])
    was_training = model.training
    model.eval()
    try:
        weights = attention_stack(model, *inputs)[0][:, 0]  # (layers, heads, queries, keys)
    finally:
        model.train(was_training)
    return AttentionSnapshot(step, weights.numpy().copy(), src_tokens, tgt_tokens)


def train(
    model: Model, task: Task, *, steps: int | None = None, batch_size: int | None = None,
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
                batch = training_batch(model, task, next(batches))
                loss, accuracy = _training_step(model, batch, loss_fn, optimizer, schedule)
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


def _optimizer(model: Model, lr: float, steps: int,
               warmup: int) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW with the paper's betas and a little weight decay, its learning rate scheduled by `lr_factor`."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.01)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, steps, warmup))


def _training_step(model: Model, batch: tuple[torch.Tensor, ...], loss_fn: nn.Module,
                   optimizer: torch.optim.Optimizer,
                   schedule: torch.optim.lr_scheduler.LRScheduler) -> tuple[float, float]:
    """One optimiser step on a `training_batch`, teacher-forced; returns its loss and its token accuracy
    (over the counted tokens, as predicted before the step)."""
    *inputs, labels = batch  # (src, tgt_in) or, decoder-only, (ids,); labels (batch, tgt_len)
    logits = model(*inputs)  # (batch, tgt_len, vocab)
    loss = loss_fn(logits.flatten(0, 1), labels.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    real = labels != Vocab.pad_id  # (batch, tgt_len)
    accuracy = ((logits.argmax(-1) == labels) & real).sum().item() / real.sum().item()
    return loss.item(), accuracy
