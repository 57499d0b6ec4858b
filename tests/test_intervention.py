"""Interventions on a trained model, each against an independent computation."""

import copy

import pytest
import torch

from transformer_viz import Intervention, Transformer
from transformer_viz.analysis.inference import run_text
from transformer_viz.data.tasks import TASKS, encode_source, encode_target, model_config_for
from transformer_viz.trace.names import attention_name
from transformer_viz.train.evaluation import evaluate
from transformer_viz.train.loop import train
from transformer_viz.weights.pretrained import load_pretrained


@pytest.fixture(scope="module")
def reverse():
    return load_pretrained("reverse").model


def ids(text: str, answer: str):
    task = TASKS["reverse"]
    return encode_source(task, text).ids, encode_target(task, answer).ids


def test_the_default_intervention_changes_no_bit(reverse):
    src, tgt = ids("hello", "olleh")
    logits, plain = reverse.run_with_trace(src, tgt)
    same_logits, same = reverse.run_with_trace(src, tgt, intervention=Intervention())
    assert torch.equal(logits, same_logits) and set(plain) == set(same)
    assert all(torch.equal(plain[n], same[n]) for n in plain)
    assert same.intervention == Intervention() and same.intervention.changes_nothing


@pytest.mark.parametrize("kind,layer,head", [("cross", 1, 0), ("encoder_self", 0, 3), ("decoder_self", 1, 2)])
def test_ablating_a_head_equals_zeroing_its_columns_of_w_o(reverse, kind, layer, head):
    src, tgt = ids("hello", "olleh")
    ablated, trace = reverse.run_with_trace(src, tgt, intervention=Intervention(ablate_heads={(kind, layer, head)}))
    by_hand = copy.deepcopy(reverse)
    stack = by_hand.encoder if kind == "encoder_self" else by_hand.decoder
    attention = getattr(stack.layers[layer], "cross_attn" if kind == "cross" else "self_attn")
    d_head = reverse.config.d_head
    with torch.no_grad():
        attention.out_proj.weight[:, head * d_head:(head + 1) * d_head] = 0.0
    expected, _ = by_hand.run_with_trace(src, tgt)
    torch.testing.assert_close(ablated, expected, rtol=0, atol=1e-6)
    assert not torch.allclose(ablated, reverse(src, tgt))
    assert trace.intervention.ablate_heads == frozenset({(kind, layer, head)})


def test_mean_ablation_replaces_the_head_output_by_its_mean_over_positions(reverse):
    src, tgt = ids("hello", "olleh")
    _, clean = reverse.run_with_trace(src, tgt)
    _, mean = reverse.run_with_trace(src, tgt, Intervention(ablate_heads={("encoder_self", 0, 1)}, ablation="mean"))
    weights = clean[attention_name("encoder_self", 0, "weights")][0, 1]  # (q, k)
    values = clean[attention_name("encoder_self", 0, "v")][0, 1]  # (k, d_head)
    context = weights @ values  # (q, d_head): the head's output before W_O
    w_o = reverse.encoder.layers[0].self_attn.out_proj.weight[:, 64 // 4:2 * 64 // 4]  # (d_model, d_head)
    change = (context.mean(0, keepdim=True) - context) @ w_o.T  # (q, d_model)
    expected = clean[attention_name("encoder_self", 0, "out")][0] + change
    torch.testing.assert_close(mean[attention_name("encoder_self", 0, "out")][0], expected, rtol=0, atol=1e-5)


def test_no_positions_adds_none_and_equals_a_model_built_without_them(reverse):
    src, tgt = ids("hello", "olleh")
    logits, trace = reverse.run_with_trace(src, tgt, Intervention(positions=False))
    assert trace["src_embed.position"].abs().max() == 0 and trace["tgt_embed.position"].abs().max() == 0
    blind = Transformer(model_config_for(TASKS["reverse"], positional="none")).eval()
    blind.load_state_dict(reverse.state_dict())
    torch.testing.assert_close(logits, blind(src, tgt), rtol=0, atol=1e-6)


def test_no_scaling_leaves_the_scores_undivided(reverse):
    src, tgt = ids("hello", "olleh")
    _, trace = reverse.run_with_trace(src, tgt, Intervention(scale=False))
    q, k = trace[attention_name("cross", 0, "q")], trace[attention_name("cross", 0, "k")]
    torch.testing.assert_close(trace[attention_name("cross", 0, "scores")], q @ k.transpose(-2, -1))


def test_no_look_ahead_lets_a_query_see_the_future_but_keeps_padding(reverse):
    src, tgt = ids("hello", "olleh")
    _, trace = reverse.run_with_trace(src, tgt, Intervention(look_ahead=False))
    mask = trace[attention_name("decoder_self", 0, "mask")][0, 0]
    assert mask.all()
    weights = trace[attention_name("decoder_self", 0, "weights")][0]
    assert weights[:, 0, 1:].sum() > 0  # <bos> now reads later tokens
    padded = torch.nn.functional.pad(tgt, (0, 2), value=0)
    _, trace = reverse.run_with_trace(src, padded, Intervention(look_ahead=False))
    assert not trace[attention_name("decoder_self", 0, "mask")][0, 0, :, -2:].any()


def test_generate_and_run_text_carry_the_intervention(reverse):
    intervention = Intervention(positions=False)
    run = run_text(reverse, TASKS["reverse"], "hello", intervention=intervention)
    assert run.trace.intervention == intervention
    assert run.output_text != "olleh"  # without positions the mirror is lost


def test_a_head_the_model_lacks_is_refused(reverse):
    src, tgt = ids("hello", "olleh")
    with pytest.raises(ValueError, match="does not exist"):
        reverse.run_with_trace(src, tgt, Intervention(ablate_heads={("cross", 2, 0)}))
    with pytest.raises(ValueError, match="kind"):
        Intervention(ablate_heads={("sideways", 0, 0)})
    with pytest.raises(ValueError, match="ablation"):
        Intervention(ablation="half")


def test_a_decoder_trained_without_look_ahead_cheats():
    task = TASKS["reverse"]
    torch.manual_seed(0)
    model = Transformer(model_config_for(task))
    train(model, task, steps=150, intervention=Intervention(look_ahead=False))
    model.eval()
    cheating = evaluate(model, task, n=100, intervention=Intervention(look_ahead=False))
    honest = evaluate(model, task, n=100)
    assert cheating.teacher_forced_accuracy > 0.95  # it copies the next token from the future
    assert honest.exact_match < 0.2  # greedy decoding has no future to copy
