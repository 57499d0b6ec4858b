"""Are Sixteen Heads Really Better than One? (Michel, Levy & Neubig 2019) on a trained model.

Three experiments, each scored by `evaluate` (exact match of the greedy answers, teacher-forced token accuracy)
on fresh held-out inputs, and compared with the whole model by a paired bootstrap over those inputs:
- every single head ablated (their Table 1): which heads change a score beyond noise, and which way;
- all heads of a layer but one ablated (their Table 2): the head kept is the best on other inputs;
- pruning by importance (their section 4): I_h = E_x |∂L(x)/∂ξ_h|, where the gate ξ_h multiplies head h's
  output (`model/hooks.py::gating`) and L(x) is x's teacher-forced cross-entropy, normalised by its layer's
  ℓ2 norm; the least important heads are pruned first, the scores computed once on other inputs. Beside it,
  `loss_changes`: the loss's actual change when a head alone is ablated, which I_h estimates to first order.
An ablated head's output is replaced by zeros before W_O (`Intervention(ablate_heads=...)`): their ξ_h = 0.
Theirs and not ours: BLEU and beam search (we judge greedy answers right or wrong as a whole).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer_viz.data.tasks import Task
from transformer_viz.data.vocab import Vocab
from transformer_viz.model.hooks import gating, intervening
from transformer_viz.trace.form import form_of
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import ATTENTION_KINDS
from transformer_viz.train.evaluation import Evaluation, evaluate
from transformer_viz.train.loop import Model, training_batch

Head = tuple[str, int, int]  # (attention kind, layer, head), counting from 0 as Intervention does
Site = tuple[str, int]  # (attention kind, layer)
# Their numbers: WMT En-Fr (Transformer-large, 6 + 6 layers of 16 heads, BLEU) and BERT-base on MNLI (accuracy).
PUBLISHED = {
    "single": {"heads": 96, "significant": 8, "better": 4},  # WMT encoder self-attention heads, p < 0.01
    "last_cross_one_head": -13.56,  # ΔBLEU, one head kept in WMT's last encoder-decoder layer; most layers ~0
    "prunable": {"WMT": 0.20, "BERT": 0.40},  # share of heads pruned by I_h without noticeable loss
}


def sites_of(config) -> list[Site]:
    """Every attention layer of a model of `config`, by kind then layer."""
    return [(kind, layer) for kind in form_of(config).kinds
            for layer in range(config.n_encoder_layers if ATTENTION_KINDS[kind].stack == "encoder"
                               else config.n_decoder_layers)]


def heads_of(config) -> list[Head]:
    """Every head of a model of `config`, by kind, layer, head."""
    return [(kind, layer, head) for kind, layer in sites_of(config) for head in range(config.n_heads)]


@dataclass(frozen=True)
class Change:
    """A score's change from the whole model (after - before) and its bootstrap interval [low, high]."""

    delta: float
    low: float
    high: float

    @property
    def direction(self) -> int:
        """+1 (better) or -1 (worse) when the interval excludes 0; 0 when the change is within noise."""
        return 1 if self.low > 0 else -1 if self.high < 0 else 0


def paired_bootstrap(before: np.ndarray, after: np.ndarray, counted: np.ndarray, rng: np.random.Generator,
                     resamples: int = 1000, level: float = 0.95) -> Change:
    """The change of the score sum(x) / sum(counted) from `before` to `after`, with its percentile interval.

    before, after, counted (inputs,): per input, on the same inputs; each resample draws inputs with replacement
    and scores both runs on that one draw (paired), so what the inputs share cancels out.
    """
    before, after, counted = (np.asarray(x, dtype=float) for x in (before, after, counted))
    draws = rng.integers(0, len(counted), size=(resamples, len(counted)))  # (resamples, inputs)
    total = np.maximum(counted[draws].sum(axis=1), 1)  # (resamples,)
    deltas = (after[draws].sum(axis=1) - before[draws].sum(axis=1)) / total  # (resamples,)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(deltas, [tail, 100 - tail])
    return Change(float((after.sum() - before.sum()) / max(counted.sum(), 1)), float(low), float(high))


@dataclass(frozen=True)
class Ablated:
    """Scores with `heads` ablated, and their changes from the whole model."""

    heads: frozenset[Head]
    exact_match: float
    token_accuracy: float
    exact: Change  # of exact match
    token: Change  # of teacher-forced token accuracy

    def to_dict(self) -> dict:
        """Plain JSON values: heads as sorted [kind, layer, head] lists, changes as [delta, low, high]."""
        return {"heads": [list(head) for head in sorted(self.heads)], "exact_match": self.exact_match,
                "token_accuracy": self.token_accuracy,
                "exact": [self.exact.delta, self.exact.low, self.exact.high],
                "token": [self.token.delta, self.token.low, self.token.high]}


def measure(model: Model, task: Task, heads: Iterable[Head], base: Evaluation, rng: np.random.Generator) -> Ablated:
    """Evaluate with `heads` ablated on the inputs of `base` (the whole model's evaluation) and compare."""
    heads = frozenset(heads)
    after = evaluate(model, task, n=base.samples, seed=base.seed,
                     intervention=Intervention(ablate_heads=heads)) if heads else base
    ones = np.ones(len(base.exact_by_input))
    exact = paired_bootstrap(np.array(base.exact_by_input), np.array(after.exact_by_input), ones, rng)
    token = paired_bootstrap(np.array(base.right_by_input), np.array(after.right_by_input),
                             np.array(base.counted_by_input), rng)
    return Ablated(heads, after.exact_match, after.teacher_forced_accuracy, exact, token)


def single_heads(model: Model, task: Task, base: Evaluation, rng: np.random.Generator) -> list[Ablated]:
    """Every head ablated alone (their Table 1), in the order of `heads_of`."""
    return [measure(model, task, [head], base, rng) for head in heads_of(model.config)]


def one_head_per_layer(model: Model, task: Task, base: Evaluation, rng: np.random.Generator,
                       select_seed: int) -> list[tuple[Head, Ablated]]:
    """Per layer (their Table 2): the head kept, and the scores with every other head of its layer ablated.

    The head kept is the one whose layer does best alone (exact match, then token accuracy) on `base.samples`
    other inputs, drawn with `select_seed`, as they chose it on newstest2013 and reported newstest2014.
    """
    rows = []
    for kind, layer in sites_of(model.config):
        layer_heads = {(kind, layer, head) for head in range(model.config.n_heads)}
        scores = {}
        for kept in sorted(layer_heads):
            selection = evaluate(model, task, n=base.samples, seed=select_seed,
                                 intervention=Intervention(ablate_heads=layer_heads - {kept}))
            scores[kept] = (selection.exact_match, selection.teacher_forced_accuracy)
        kept = max(scores, key=scores.get)  # the first of equals
        rows.append((kept, measure(model, task, layer_heads - {kept}, base, rng)))
    return rows


def _batches(model: Model, task: Task, n: int, seed: int,
             batch_size: int) -> Iterator[tuple[list[torch.Tensor], torch.Tensor]]:
    """n fresh held-out inputs drawn with `seed` (as `evaluate` draws them), as (model inputs, labels) batches."""
    rng = random.Random(seed)
    texts = [task.heldout_input(rng) for _ in range(n)]
    for start in range(0, n, batch_size):
        *inputs, labels = training_batch(model, task, texts[start: start + batch_size])
        yield inputs, labels


def input_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """L(x) per input: teacher-forced cross-entropy summed over its answer tokens.
    logits (batch, tgt_len, vocab), labels (batch, tgt_len) with <pad> not counted -> (batch,)."""
    return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=Vocab.pad_id, reduction="none").sum(dim=1)


def importance(model: Model, task: Task, n: int = 500, seed: int = 1, batch_size: int = 250,
               intervention: Intervention | None = None) -> dict[Head, float]:
    """Michel et al.'s I_h = mean over n fresh inputs of |∂L(x)/∂ξ_h| at ξ = 1, not normalised.

    Each input has its own gates ((batch, heads) per layer), so the absolute value is taken per input, as in
    their formula (their code takes it per batch). Under `intervention`, an ablated head's output is 0 whatever
    its gate: its importance is 0.
    """
    sites = sites_of(model.config)
    dtype = next(model.parameters()).dtype
    total = np.zeros((len(sites), model.config.n_heads))  # (layers of every kind, heads)
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad(), intervening(model.checked(intervention)):
            for inputs, labels in _batches(model, task, n, seed, batch_size):
                gates = {site: torch.ones(len(labels), model.config.n_heads, dtype=dtype, requires_grad=True)
                         for site in sites}  # (batch, heads) each: one gate per input
                with gating(gates):
                    loss = input_losses(model(*inputs), labels).sum()
                grads = torch.autograd.grad(loss, list(gates.values()))  # each (batch, heads)
                total += np.stack([grad.abs().sum(dim=0).numpy() for grad in grads])
    finally:
        model.train(was_training)
    return {(kind, layer, head): float(total[i, head] / n)
            for i, (kind, layer) in enumerate(sites) for head in range(model.config.n_heads)}


def mean_loss(model: Model, task: Task, n: int = 500, seed: int = 1, batch_size: int = 250,
              intervention: Intervention | None = None) -> float:
    """The mean of L(x) over n fresh inputs drawn with `seed`, under `intervention`."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), intervening(model.checked(intervention)):
            total = sum(input_losses(model(*inputs), labels).sum().item()
                        for inputs, labels in _batches(model, task, n, seed, batch_size))
    finally:
        model.train(was_training)
    return total / n


def loss_changes(model: Model, task: Task, n: int = 500, seed: int = 1) -> dict[Head, float]:
    """Per head: the mean loss with that head alone ablated minus the whole model's, on the inputs `importance`
    reads with the same n and seed: the change I_h estimates to first order (ξ_h from 1 to 0)."""
    whole = mean_loss(model, task, n, seed)
    return {head: mean_loss(model, task, n, seed, intervention=Intervention(ablate_heads={head})) - whole
            for head in heads_of(model.config)}


def normalised_by_layer(scores: dict[Head, float]) -> dict[Head, float]:
    """Each score divided by the ℓ2 norm of its layer's scores (their --normalize-by-layer)."""
    norms: dict[Site, float] = {}
    for (kind, layer, _), score in scores.items():
        norms[kind, layer] = norms.get((kind, layer), 0.0) + score ** 2
    return {(kind, layer, head): score / (math.sqrt(norms[kind, layer]) + 1e-20)
            for (kind, layer, head), score in scores.items()}


def pruning_order(scores: dict[Head, float]) -> list[Head]:
    """The heads, least important first (equal scores in the order of their names)."""
    return sorted(scores, key=lambda head: (scores[head], head))


def pruned_count(fraction: float, heads: int) -> int:
    """How many of `heads` heads make `fraction` of them, to the nearest whole head."""
    return math.floor(fraction * heads + 0.5)


def pruning_curve(model: Model, task: Task, order: Sequence[Head], fractions: Iterable[float], base: Evaluation,
                  rng: np.random.Generator) -> list[tuple[float, Ablated]]:
    """(fraction, scores with the first `pruned_count(fraction)` heads of `order` ablated) for each fraction."""
    return [(fraction, measure(model, task, order[: pruned_count(fraction, len(order))], base, rng))
            for fraction in fractions]
