"""Michel et al. 2019's head ablation and pruning (train/pruning.py) and the head gate it differentiates
(model/hooks.py::gating), each on a case worked out by hand or against an independent computation."""

import json
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_viz import Intervention
from transformer_viz.data.tasks import get_task, model_config_for
from transformer_viz.data.tasks.base import make_batch
from transformer_viz.data.vocab import Vocab
from transformer_viz.model import Transformer
from transformer_viz.model.hooks import gating
from transformer_viz.train import pruning
from transformer_viz.train.evaluation import evaluate
from transformer_viz.weights.pretrained import load_pretrained

N = 60  # inputs per evaluation: enough to tell the shipped model's heads apart, quick


@pytest.fixture(scope="module")
def reverse():
    return load_pretrained("reverse")


@pytest.fixture(scope="module")
def untrained():
    """A random reverse model in float64 (its loss is large, so gradients are too; finite differences are exact
    enough)."""
    task = get_task("reverse")
    return Transformer(model_config_for(task), generator=torch.Generator().manual_seed(0)).double().eval(), task


def rng():
    return np.random.default_rng(0)


# --- the paired bootstrap -------------------------------------------------------------------------------------

def test_identical_runs_change_nothing_within_a_zero_interval():
    scores = np.array([1, 0, 1, 1, 0])
    change = pruning.paired_bootstrap(scores, scores, np.ones(5), rng())
    assert (change.delta, change.low, change.high, change.direction) == (0.0, 0.0, 0.0, 0)


def test_a_loss_on_every_input_is_a_change_of_minus_one_without_noise():
    change = pruning.paired_bootstrap(np.ones(50), np.zeros(50), np.ones(50), rng())
    assert (change.delta, change.low, change.high, change.direction) == (-1.0, -1.0, -1.0, -1)


def test_the_interval_matches_the_normal_approximation():
    """40 of 400 inputs lost: delta -0.1, standard error sqrt(0.1 * 0.9 / 400) = 0.015, 95 %: ±0.0294."""
    before, after = np.ones(400), np.r_[np.zeros(40), np.ones(360)]
    change = pruning.paired_bootstrap(before, after, np.ones(400), rng(), resamples=4000)
    assert change.delta == pytest.approx(-0.1)
    assert change.low == pytest.approx(-0.1294, abs=0.006) and change.high == pytest.approx(-0.0706, abs=0.006)
    assert change.direction == -1


def test_pairing_finds_a_small_gain_that_the_inputs_own_noise_would_hide():
    """Half the inputs right at random, then 5 more right: every resample scores both runs on the same inputs,
    so the gain shows (it is 0 only when a resample misses all 5: e^-5 = 0.7 %, below the 2.5 % tail)."""
    before = np.random.default_rng(1).integers(0, 2, 400)
    after = before.copy()
    after[np.flatnonzero(before == 0)[:5]] = 1
    change = pruning.paired_bootstrap(before, after, np.ones(400), rng())
    assert change.delta == pytest.approx(5 / 400) and change.low > 0 and change.direction == 1


def test_a_ratio_score_divides_by_the_counted_tokens():
    """Token accuracy: right 2 of 2 and 0 of 2 before, 2 of 2 twice after: from 2/4 to 4/4."""
    change = pruning.paired_bootstrap(np.array([2, 0]), np.array([2, 2]), np.array([2, 2]), rng())
    assert change.delta == pytest.approx(0.5)


def test_the_same_generator_seed_gives_the_same_interval():
    before, after = np.ones(100), np.r_[np.zeros(7), np.ones(93)]
    first = pruning.paired_bootstrap(before, after, np.ones(100), np.random.default_rng(3))
    assert first == pruning.paired_bootstrap(before, after, np.ones(100), np.random.default_rng(3))


# --- the head gate --------------------------------------------------------------------------------------------

def batch(task, n=3, seed=1):
    generator = random.Random(seed)
    return make_batch(task, [task.heldout_input(generator) for _ in range(n)])  # src, decoder input, labels


def all_gates(model, value=1.0):
    return {site: torch.full((model.config.n_heads,), value, dtype=torch.float64)
            for site in pruning.sites_of(model.config)}


def test_a_gate_of_one_changes_no_bit(untrained):
    model, task = untrained
    src, tgt, _ = batch(task)
    with gating(all_gates(model)):
        gated = model(src, tgt)
    assert torch.equal(gated, model(src, tgt))


@pytest.mark.parametrize("head", [("encoder_self", 1, 2), ("decoder_self", 0, 0), ("cross", 1, 3)])
def test_a_gate_of_zero_is_the_interventions_ablation(untrained, head):
    model, task = untrained
    src, tgt, _ = batch(task)
    gates = all_gates(model)
    gates[head[:2]] = gates[head[:2]].clone()
    gates[head[:2]][head[2]] = 0.0
    with gating(gates):
        gated = model(src, tgt)
    ablated, _ = model.run_with_trace(src, tgt, intervention=Intervention(ablate_heads={head}))
    torch.testing.assert_close(gated, ablated, rtol=0, atol=1e-12)
    assert not torch.allclose(gated, model(src, tgt))


def loss_at(model, task, head, value, seed):
    """The teacher-forced loss of the one input `importance(n=1, seed)` reads, with `head`'s gate at `value`."""
    src, tgt, labels = batch(task, n=1, seed=seed)
    gates = all_gates(model)
    gates[head[:2]] = gates[head[:2]].clone()
    gates[head[:2]][head[2]] = value
    with gating(gates):
        logits = model(src, tgt)  # (1, tgt_len, vocab)
    return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=Vocab.pad_id, reduction="sum").item()


@pytest.mark.parametrize("head", [("encoder_self", 0, 1), ("decoder_self", 1, 3), ("cross", 0, 2)])
def test_importance_is_the_gradient_of_the_loss_by_the_gate(untrained, head):
    model, task = untrained
    eps = 1e-5
    slope = (loss_at(model, task, head, 1 + eps, seed=4) - loss_at(model, task, head, 1 - eps, seed=4)) / (2 * eps)
    scores = pruning.importance(model, task, n=1, seed=4)
    assert abs(slope) > 1e-3  # a head the loss depends on
    assert scores[head] == pytest.approx(abs(slope), rel=1e-6)


def test_importance_takes_the_absolute_value_per_input_not_per_batch(untrained):
    """Gradients of opposite signs on two inputs would cancel in a batch's sum; per input they add up."""
    model, task = untrained
    one_by_one = pruning.importance(model, task, n=8, seed=2, batch_size=1)
    together = pruning.importance(model, task, n=8, seed=2, batch_size=8)
    assert together == pytest.approx(one_by_one, rel=1e-9)


def test_a_zeroed_head_has_no_importance(untrained):
    model, task = untrained
    head = ("cross", 1, 1)
    scores = pruning.importance(model, task, n=4, seed=3, intervention=Intervention(ablate_heads={head}))
    assert scores[head] == 0.0
    assert all(score > 0 for other, score in scores.items() if other != head)


def test_the_mean_loss_is_the_cross_entropy_summed_per_input_and_averaged(untrained):
    model, task = untrained
    src, tgt, labels = batch(task, n=5, seed=6)
    by_hand = torch.nn.CrossEntropyLoss(ignore_index=Vocab.pad_id, reduction="sum")(
        model(src, tgt).flatten(0, 1), labels.flatten()).item() / 5
    assert pruning.mean_loss(model, task, n=5, seed=6, batch_size=2) == pytest.approx(by_hand, rel=1e-12)


def test_a_heads_loss_change_is_the_loss_with_its_gate_at_zero_minus_the_whole_models(untrained):
    model, task = untrained
    changes = pruning.loss_changes(model, task, n=1, seed=4)
    for head in [("encoder_self", 0, 1), ("cross", 1, 2)]:
        expected = loss_at(model, task, head, 0.0, seed=4) - loss_at(model, task, head, 1.0, seed=4)
        assert changes[head] == pytest.approx(expected, rel=1e-9) and expected != 0


def test_importance_leaves_the_models_gradients_and_mode_alone(untrained):
    model, task = untrained
    model.train()
    try:
        pruning.importance(model, task, n=2, seed=1)
        assert model.training and all(p.grad is None for p in model.parameters())
    finally:
        model.eval()


# --- normalising, ordering, counting --------------------------------------------------------------------------

def test_normalising_divides_by_the_layers_l2_norm():
    scores = {("cross", 0, 0): 3.0, ("cross", 0, 1): 4.0, ("cross", 1, 0): 0.0, ("cross", 1, 1): 0.0}
    assert pruning.normalised_by_layer(scores) == pytest.approx(
        {("cross", 0, 0): 0.6, ("cross", 0, 1): 0.8, ("cross", 1, 0): 0.0, ("cross", 1, 1): 0.0})


def test_the_least_important_head_is_pruned_first_and_equals_go_by_name():
    scores = {("cross", 0, 1): 0.5, ("cross", 0, 0): 0.5, ("encoder_self", 1, 0): 0.1, ("cross", 1, 0): 0.9}
    assert pruning.pruning_order(scores) == [("encoder_self", 1, 0), ("cross", 0, 0), ("cross", 0, 1),
                                             ("cross", 1, 0)]


@pytest.mark.parametrize("fraction,count", [(0.0, 0), (0.1, 2), (0.2, 5), (0.3, 7), (0.5, 12), (1.0, 24)])
def test_a_fraction_of_24_heads_rounds_to_the_nearest_head(fraction, count):
    assert pruning.pruned_count(fraction, 24) == count


def test_every_head_of_the_model_is_listed_once(reverse):
    heads = pruning.heads_of(reverse.model.config)
    assert len(heads) == len(set(heads)) == 3 * 2 * 4
    assert ("encoder_self", 1, 3) in heads and ("cross", 0, 0) in heads


# --- the three experiments on the shipped reverse model -------------------------------------------------------

@pytest.fixture(scope="module")
def base(reverse):
    return evaluate(reverse.model, reverse.task, n=N, seed=7)


def test_evaluation_keeps_each_inputs_scores(reverse, base):
    assert len(base.exact_by_input) == len(base.right_by_input) == len(base.counted_by_input) == N
    assert np.mean(base.exact_by_input) == base.exact_match
    assert sum(base.right_by_input) / sum(base.counted_by_input) == base.teacher_forced_accuracy
    assert evaluate(reverse.model, reverse.task, n=N, seed=7) == base  # the same inputs in the same order


def test_a_decoder_only_evaluation_keeps_each_inputs_scores_too():
    gpt = load_pretrained("reverse-gpt")
    measured = evaluate(gpt.model, gpt.task, n=30, seed=5)
    assert len(measured.exact_by_input) == len(measured.counted_by_input) == 30
    assert np.mean(measured.exact_by_input) == measured.exact_match
    assert sum(measured.right_by_input) / sum(measured.counted_by_input) == measured.teacher_forced_accuracy


def test_each_single_head_is_measured_with_that_head_ablated(reverse, base):
    rows = pruning.single_heads(reverse.model, reverse.task, base, rng())
    assert [sorted(row.heads) for row in rows] == [[head] for head in pruning.heads_of(reverse.model.config)]
    for row in rows[::5]:
        after = evaluate(reverse.model, reverse.task, n=N, seed=7, intervention=Intervention(ablate_heads=row.heads))
        assert row.exact_match == after.exact_match and row.token_accuracy == after.teacher_forced_accuracy
        assert row.exact.delta == pytest.approx(after.exact_match - base.exact_match)
    assert any(row.exact.direction == -1 for row in rows)  # some head of the shipped model matters


def test_keeping_one_head_per_layer_ablates_exactly_the_others(reverse, base):
    model, task = reverse.model, reverse.task
    rows = pruning.one_head_per_layer(model, task, base, rng(), select_seed=8)
    assert [kept[:2] for kept, _ in rows] == pruning.sites_of(model.config)
    for kept, row in rows:
        layer = {(*kept[:2], head) for head in range(model.config.n_heads)}
        assert row.heads == layer - {kept}
        after = evaluate(model, task, n=N, seed=7, intervention=Intervention(ablate_heads=layer - {kept}))
        assert (row.exact_match, row.token_accuracy) == (after.exact_match, after.teacher_forced_accuracy)
    kept, _ = rows[0]
    layer = [(*kept[:2], head) for head in range(model.config.n_heads)]

    def selection(heads):
        measured = evaluate(model, task, n=N, seed=8, intervention=Intervention(ablate_heads=heads))
        return measured.exact_match, measured.teacher_forced_accuracy

    assert all(selection(set(layer) - {kept}) >= selection(set(layer) - {other}) for other in layer)


def test_the_pruning_curve_ablates_the_first_heads_of_the_order(reverse, base):
    order = pruning.heads_of(reverse.model.config)[::-1]
    curve = pruning.pruning_curve(reverse.model, reverse.task, order, (0.0, 0.25, 1.0), base, rng())
    assert [(fraction, row.heads) for fraction, row in curve] == [
        (0.0, frozenset()), (0.25, frozenset(order[:6])), (1.0, frozenset(order))]
    assert curve[0][1].exact_match == base.exact_match and curve[0][1].exact.delta == 0.0
    row = curve[1][1]
    assert json.loads(json.dumps(row.to_dict())) == {
        "heads": [list(head) for head in sorted(order[:6])], "exact_match": row.exact_match,
        "token_accuracy": row.token_accuracy, "exact": [row.exact.delta, row.exact.low, row.exact.high],
        "token": [row.token.delta, row.token.low, row.token.high]}
