"""Attribution beside attention: flow and rollout on hand-worked graphs, value norms, leave-one-out and the
gradient methods against direct computations on the shipped models; leave one out's noise floor and the choice of
an output token worth explaining."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from transformer_viz import Trace
from transformer_viz.analysis.attribution import (
    Attribution,
    _inputs,
    attention_and_leave_one_out,
    explain,
    gradient_scores,
    leave_one_out,
    rank_correlation,
    telling_output,
    value_norms,
    weighted_values,
)
from transformer_viz.analysis.flow import LayerGraph, attention_flow, rollout
from transformer_viz.analysis.inference import run_text
from transformer_viz.analysis.measures import attention_rollout
from transformer_viz.data.tasks import TASKS
from transformer_viz.data.tasks.lm import lm_vocab
from transformer_viz.data.vocab import Vocab
from transformer_viz.trace.names import attention_name
from transformer_viz.weights.pretrained import load_pretrained

# Two layers over three tokens, each row the mixing weights of one position (the residual already in).
LOWER = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
UPPER = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.6, 0.2, 0.2]])
HAND_GRAPH = LayerGraph(encoder=(), decoder=(LOWER, UPPER), cross=())


def test_flow_on_a_two_layer_three_token_graph_equals_the_hand_computed_maximum_flow():
    # From position 2 on top: to token 0 every path is limited by its top edge (0.6 + 0.2 + 0.2); to token 1
    # through position 1 (min(0.2, 0.5)) and position 2 (min(0.2, 0.3)); to token 2 only through position 2.
    assert attention_flow(HAND_GRAPH, 2) == pytest.approx([1.0, 0.4, 0.2])
    assert attention_flow(HAND_GRAPH, 2, layers=1) == pytest.approx(LOWER[2])  # one layer: the edges themselves


def test_rollout_on_the_same_graph_sums_the_products_of_every_path():
    assert rollout(HAND_GRAPH, 2) == pytest.approx([0.6 + 0.1 + 0.04, 0.1 + 0.06, 0.1])
    assert rollout(HAND_GRAPH, 1) == pytest.approx([0.75, 0.25, 0.0])


# An encoder-decoder by hand: one head, one encoder and one decoder layer, 2 source and 2 target tokens.
#   encoder self A = [[.2 .8] [.6 .4]] -> Â_enc = 0.5·A + 0.5·I = [[.6 .4] [.3 .7]]
#   decoder self A = [[1 0] [.4 .6]]   -> Â_dec = [[1 0] [.2 .8]]
#   cross C = [[.5 .5] [.9 .1]] (target row, source column): kept as it is, halved where the layer uses it
ENCODER_DECODER = Trace({
    attention_name("encoder_self", 0, "weights"): torch.tensor([[[[0.2, 0.8], [0.6, 0.4]]]]),
    attention_name("decoder_self", 0, "weights"): torch.tensor([[[[1.0, 0.0], [0.4, 0.6]]]]),
    attention_name("cross", 0, "weights"): torch.tensor([[[[0.5, 0.5], [0.9, 0.1]]]]),
})


def test_encoder_decoder_rollout_takes_half_from_the_memory_as_computed_by_hand():
    """Target position 1 keeps half of its self-attention's mix and takes half of C[1] · Â_enc (the memory)."""
    # Self-attention: row 1 of Â_dec over the target tokens = [.2 .8].
    # Memory: C[1] · Â_enc = .9·[.6 .4] + .1·[.3 .7] = [.57 .43] over the source tokens.
    # Cross-attention: 0.5·[0 0 .2 .8] + 0.5·[.57 .43 0 0] = [.285 .215 .1 .4] (source tokens first); sums to 1.
    # (Taking all of the memory instead of half would give [.57 .43 .1 .4].)
    assert rollout(LayerGraph.of(ENCODER_DECODER), 1) == pytest.approx([0.285, 0.215, 0.1, 0.4])


def test_encoder_decoder_flow_is_capped_by_half_the_cross_attention_as_computed_by_hand():
    """Max flow from target position 1: the cross-attention's edges carry 0.5·C, its residual edge 0.5."""
    # Edges (capacity), from the output t1 = ("tgt", 1, 1) downwards:
    #   t1 -> m1 (mid, position 1): 0.5;  m1 -> tgt0 token 0: .2, m1 -> tgt0 token 1: .8    (Â_dec row 1)
    #   t1 -> e0 (encoder top, position 0): .5·.9 = .45;  t1 -> e1: .5·.1 = .05            (0.5·C[1])
    #   e0 -> src token 0: .6, e0 -> src token 1: .4;  e1 -> src token 0: .3, e1 -> src token 1: .7 (Â_enc)
    # Source token 0: paths via e0 (min .45, .6) and e1 (min .05, .3); min cut {t1->e0, t1->e1} = .5.
    # Source token 1: via e0 (min .45, .4) and e1 (min .05, .7); min cut {e0->src 1, t1->e1} = .4 + .05 = .45.
    # Target token 0: min cut {m1->tgt0 token 0} = .2.  Target token 1: min cut {t1->m1} = .5.
    # (With capacity C[1] instead of 0.5·C[1] the source tokens would get .6 + .1 = .7 and .4 + .1 = .5.)
    assert attention_flow(LayerGraph.of(ENCODER_DECODER), 1) == pytest.approx([0.5, 0.45, 0.2, 0.5])


def test_flow_refuses_a_position_or_layer_count_the_graph_does_not_have():
    with pytest.raises(ValueError, match="position 3"):
        attention_flow(HAND_GRAPH, 3)
    with pytest.raises(ValueError, match="layers must be from 1 to 2"):
        rollout(HAND_GRAPH, 0, layers=3)


@functools.cache
def shipped(name: str, text: str):
    pretrained = load_pretrained(name)
    return pretrained.model, pretrained.task, run_text(pretrained.model, pretrained.task, text).trace


def test_a_decoder_only_rollout_is_the_self_attention_rollout_of_measures():
    _, _, trace = shipped("reverse-gpt", "stressed")
    expected = attention_rollout(trace, "decoder_self")  # (len, len)
    for position in (3, 12):
        assert rollout(LayerGraph.of(trace), position) == pytest.approx(expected[position])


def test_an_encoder_decoder_rollout_spreads_over_source_and_target_tokens_and_sums_to_one():
    _, _, trace = shipped("en-fr", "the girl sees a big house")
    graph = LayerGraph.of(trace)
    shares = rollout(graph, 3)  # (src_len + tgt_len,)
    assert shares.sum() == pytest.approx(1.0)
    assert shares[graph.src_len + 4:] == pytest.approx(0.0)  # later decoder positions are masked out
    assert attention_flow(graph, 3)[graph.src_len + 4:] == pytest.approx(0.0)


@pytest.mark.parametrize(("name", "kind", "text"), [("en-fr", "cross", "the girl sees a big house"),
                                                    ("reverse-gpt", "decoder_self", "stressed")])
def test_weighted_values_add_up_to_the_attention_sublayers_output(name, kind, text):
    model, _, trace = shipped(name, text)
    stack, sublayer = ("decoder", "cross_attn" if kind == "cross" else "self_attn")
    bias = getattr(getattr(model, stack).layers[1], sublayer).out_proj.bias.detach().double()
    for position in (1, 4):
        moved = weighted_values(model, trace, kind, 1, position)  # (heads, k_len, d_model)
        out = trace[attention_name(kind, 1, "out")][0, position].double()
        assert (moved.sum((0, 1)) + bias).numpy() == pytest.approx(out.numpy(), abs=1e-4)


def test_value_norms_equal_the_weight_times_the_norm_of_the_value_through_its_slice_of_w_out():
    model, _, trace = shipped("en-fr", "the girl sees a big house")
    per_head, summed = value_norms(model, trace, "cross", 0, 2)
    layer = model.decoder.layers[0].cross_attn
    weights = trace[attention_name("cross", 0, "weights")][0, :, 2].double()  # (heads, src_len)
    values = trace[attention_name("cross", 0, "v")][0].double()  # (heads, src_len, d_head)
    d_head = values.shape[-1]
    for head in range(values.shape[0]):
        w_head = layer.out_proj.weight.detach().double()[:, head * d_head:(head + 1) * d_head]  # (d_model, d_head)
        expected = weights[head] * (values[head] @ w_head.T).norm(dim=-1)
        assert per_head[head] == pytest.approx(expected.numpy(), rel=1e-6, abs=1e-9)
    assert summed.max() <= per_head.sum(0).max() + 1e-9  # the triangle inequality


def test_leave_one_out_equals_two_forward_passes_per_token():
    model, task, trace = shipped("en-fr", "the girl sees a big house")
    inputs, position = _inputs(model, task, trace, 1), 1
    token_id = int(trace["logits"][0, position].argmax())
    drops = leave_one_out(model, inputs, position, token_id)
    src = torch.tensor([task.src_vocab.encode(trace.src_tokens)])
    tgt = torch.tensor([task.tgt_vocab.encode(trace.tgt_tokens)])

    def log_probability(source):
        with torch.inference_mode():
            return model(source, tgt)[0, position].log_softmax(-1)[token_id].item()

    for i in range(len(drops)):
        blanked = src.clone()
        blanked[0, i] = task.src_vocab.index("<unk>")
        assert drops[i] == pytest.approx(log_probability(src) - log_probability(blanked), abs=1e-5)


@pytest.mark.parametrize(("name", "text"), [("en-fr", "the girl sees a big house"), ("reverse-gpt", "stressed")])
def test_integrated_gradients_are_complete_within_captums_delta(name, text):
    """Σ attributions = f(x) − f(zero embedding), up to the delta Captum reports (and which is small)."""
    model, task, trace = shipped(name, text)
    position = 10 if trace.form.one_stream else 2
    inputs = _inputs(model, task, trace, position)
    token_id = int(trace["logits"][0, position].argmax())
    gradients, delta = gradient_scores(model, inputs, position, token_id)
    integrated = gradients["integrated_gradients"]
    embedded = inputs.embedded_ids
    with torch.inference_mode():
        full = inputs.logits(model)[0, position].log_softmax(-1)[token_id].item()
        zero = inputs.logits(model, torch.zeros(1, embedded.shape[1], model.config.d_model))
        baseline = zero[0, position].log_softmax(-1)[token_id].item()
    assert abs(delta) < 0.05 * abs(full - baseline)
    assert integrated.sum() == pytest.approx(full - baseline + delta, abs=1e-4)


def test_gradient_times_input_and_the_gradients_norm_come_from_the_gradient_of_the_log_probability():
    model, task, trace = shipped("en-fr", "the girl sees a big house")
    inputs, position = _inputs(model, task, trace, 3), 3
    token_id = int(trace["logits"][0, position].argmax())
    gradients, _ = gradient_scores(model, inputs, position, token_id)
    embedded = model.src_embed.token_table(inputs.embedded_ids).detach().requires_grad_()
    log_p = inputs.logits(model, embedded)[0, position].log_softmax(-1)[token_id]
    (gradient,) = torch.autograd.grad(log_p, embedded)
    assert gradients["grad_input"] == pytest.approx((gradient * embedded)[0].sum(-1).detach().double().numpy(),
                                                    abs=1e-9)
    assert gradients["gradient"] == pytest.approx(gradient[0].norm(dim=-1).double().numpy(), rel=1e-5)


def test_explain_scores_every_source_token_by_every_method_for_the_models_own_prediction():
    model, task, trace = shipped("en-fr", "the girl sees a big house")
    result = explain(trace, 2, task.tgt_vocab.tokens, model, task)
    assert result.tokens == ("the", "girl", "sees", "a", "big", "house", "<eos>")
    assert result.output == "voit" and result.probability > 0.9
    assert set(result.scores) == {"attention.1", "attention.2", "rollout.1", "rollout.2", "flow.1", "flow.2",
                                  "value_norm.1", "value_norm.2", "gradient", "grad_input", "integrated_gradients",
                                  "leave_one_out"}
    assert all(len(scores) == 7 for scores in result.scores.values())
    assert int(np.argmax(result.scores["leave_one_out"])) == 2  # "voit" needs "sees"
    assert result.heads["attention.2"].shape == (4, 7)


def test_a_trace_without_its_model_gets_the_attention_only_methods():
    _, task, trace = shipped("reverse-gpt", "stressed")
    result = explain(trace, 11, lm_vocab(task).tokens)
    assert set(result.scores) == {"attention.1", "attention.2", "rollout.1", "rollout.2", "flow.1", "flow.2"}
    assert len(result.tokens) == 12 and np.isnan(result.ig_delta)


def test_rank_correlation_is_spearmans_and_undefined_without_spread():
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([10.0, 30.0, 20.0])) == pytest.approx(0.5)
    assert np.isnan(rank_correlation(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))


def test_the_lesson_explains_the_first_word_whose_brightest_attention_is_not_the_word_it_needs():
    from types import SimpleNamespace

    from transformer_viz.analysis.attribution import telling_output
    from transformer_viz.lessons.explanation import EXAMPLE, explained

    model, _task, trace = shipped("en-fr", EXAMPLE)
    from transformer_viz.analysis.architecture import architecture_of

    page = SimpleNamespace(view=SimpleNamespace(task="en-fr"), trace=trace, model=model,
                           architecture=architecture_of(model))
    result = telling_output(explained(page))
    assert result.output == "une"  # "a" -> un or une; "house" (la maison) makes it feminine
    assert result.tokens[int(np.argmax(result.scores["attention.2"]))] == "a"
    assert result.tokens[int(np.argmax(result.scores["leave_one_out"]))] == "house"


def quick_results(name: str, text: str) -> list:
    """attention_and_leave_one_out at every decoder position of the shipped model's answer to `text`."""
    model, task, trace = shipped(name, text)
    return [attention_and_leave_one_out(trace, p, task.tgt_vocab.tokens, model, task)
            for p in range(len(trace.tgt_tokens))]


def test_the_final_eos_of_en_fr_is_below_noise_and_the_output_worth_explaining_is_a_word():
    """The page's default sentence on en-fr: its last output, <eos> at p = 1.00, changes by ~1e-7 when any word is
    left out; telling_output takes a word whose leave one out is measured, and attention disagrees with it there."""
    results = quick_results("en-fr", TASKS["en-fr"].examples[0])
    assert results[-1].output == "<eos>" and results[-1].below_noise("leave_one_out")
    chosen = telling_output(results)
    assert chosen.output not in Vocab.SPECIALS and not chosen.below_noise("leave_one_out")
    assert np.argmax(chosen.scores["attention.2"]) != np.argmax(chosen.scores["leave_one_out"])


def test_telling_output_chooses_the_lessons_une_from_every_method_too():
    """The lesson step's own choice ("une" looks at "a", needs "house"), from explain's full results."""
    from transformer_viz.lessons.explanation import EXAMPLE

    model, task, trace = shipped("en-fr", EXAMPLE)
    results = [explain(trace, p, task.tgt_vocab.tokens, model, task) for p in range(len(trace.tgt_tokens))]
    assert telling_output(results).output == "une"


def hand(output: str, attention: list[float], left_out: list[float] | None) -> Attribution:
    """One output token's result with a last attention layer and, unless None, leave one out."""
    scores = {"attention.1": np.array([1 / 3] * 3), "attention.2": np.array(attention)}
    if left_out is not None:
        scores["leave_one_out"] = np.array(left_out)
    return Attribution(("a", "b", "c"), 0, output, 0.9, scores)


AGREES, DISAGREES = ([0.6, 0.3, 0.1], [2.0, 0.5, 0.1]), ([0.6, 0.3, 0.1], [0.1, 0.5, 2.0])


def test_telling_output_skips_special_tokens_and_noise_and_prefers_a_disagreement():
    eos = hand("<eos>", *DISAGREES)
    noise = hand("le", DISAGREES[0], [1e-7, 3e-6, -2e-7])
    agrees, disagrees = hand("chat", *AGREES), hand("noir", *DISAGREES)
    assert telling_output([eos, noise, agrees, disagrees]) is disagrees
    assert telling_output([eos, noise, agrees]) is agrees  # no disagreement: the first word measured
    assert telling_output([eos, noise]) is noise  # nothing measured: the first word
    trace_only = [hand("<eos>", AGREES[0], None), hand("la", AGREES[0], None)]
    assert telling_output(trace_only) is trace_only[1]
    assert telling_output([eos]) is eos  # no word at all: the first result
    with pytest.raises(ValueError, match="no output token"):
        telling_output([])


@pytest.mark.parametrize(("largest", "noise"), [(9e-6, True), (2e-5, False)])
def test_leave_one_out_under_the_noise_floor_is_noise_and_correlates_with_nothing(largest, noise):
    result = hand("la", DISAGREES[0], [largest, largest / 3, -largest / 2])
    assert result.below_noise("leave_one_out") is noise
    assert not result.below_noise("attention.2")  # only leave one out has a floor (NOISE)
    assert bool(np.isnan(result.correlations()["attention.2"])) is noise


def test_the_quick_methods_are_explains_own_scores():
    model, task, trace = shipped("en-fr", "the girl sees a big house")
    quick = attention_and_leave_one_out(trace, 3, task.tgt_vocab.tokens, model, task)
    full = explain(trace, 3, task.tgt_vocab.tokens, model, task)
    assert set(quick.scores) == {"attention.1", "attention.2", "leave_one_out"}
    assert (quick.output, quick.probability, quick.tokens) == (full.output, full.probability, full.tokens)
    for method, scores in quick.scores.items():
        assert scores == pytest.approx(full.scores[method])
