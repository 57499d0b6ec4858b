"""Rotary position embeddings (RoPE): a hand computation, the distance property, and the model's use of them."""

import math

import pytest
import torch

from transformer_viz import ModelConfig, Transformer
from transformer_viz.analysis.walkthrough import cell_numbers, head_walkthrough
from transformer_viz.figures.head import walkthrough_figures
from transformer_viz.model import DecoderOnlyTransformer
from transformer_viz.model.rotary import rotary_angles, rotate
from transformer_viz.trace.names import attention_name


def test_two_pairs_turn_as_computed_by_hand():
    angles = rotary_angles(3, 4)  # θ_0 = 1, θ_1 = 10000^(-1/2) = 0.01
    assert torch.allclose(angles[2], torch.tensor([2.0, 0.02]))
    x = torch.tensor([1.0, 0.0, 0.0, 2.0])  # pair 0 = (1, 0), pair 1 = (0, 2)
    turned = rotate(x[None], angles[2:3])[0]  # position 2
    want = [math.cos(2), math.sin(2), -2 * math.sin(0.02), 2 * math.cos(0.02)]
    assert torch.allclose(turned, torch.tensor(want), atol=1e-6)
    assert torch.allclose(turned.norm(), x.norm())  # a turn keeps the length


def test_neighbouring_dimensions_are_paired_and_turned_counterclockwise():
    """Dh = 4 turns (x0, x1) by p·1 and (x2, x3) by p·0.01, counterclockwise: not Hugging Face's rotate_half
    pairs (x0, x2), (x1, x3), and not the opposite direction."""
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]] * 2)  # positions 1 and 2
    turned = rotate(x, rotary_angles(3, 4)[1:3])  # (2, 4)
    for row, position in enumerate((1, 2)):
        a, b = position * 1.0, position * 10_000 ** (-2 / 4)  # θ_0 = 1, θ_1 = 0.01
        # (u, v) turned by t counterclockwise = (u·cos t − v·sin t, u·sin t + v·cos t).
        # Position 1: [cos 1 − 2 sin 1, sin 1 + 2 cos 1, 3 cos .01 − 4 sin .01, 3 sin .01 + 4 cos .01]
        #           ≈ [−1.1426, 1.9221, 2.9598, 4.0298]. Pairing (x0, x2), (x1, x3) would give
        #   [cos 1 − 3 sin 1, 2 cos .01 − 4 sin .01, sin 1 + 3 cos 1, 2 sin .01 + 4 cos .01]
        #   ≈ [−1.98, 1.96, 2.46, 4.02];
        #   turning clockwise [cos 1 + 2 sin 1, −sin 1 + 2 cos 1, ...] ≈ [2.2232, 0.2391, 3.0398, 3.9698].
        want = [math.cos(a) - 2 * math.sin(a), math.sin(a) + 2 * math.cos(a),
                3 * math.cos(b) - 4 * math.sin(b), 3 * math.sin(b) + 4 * math.cos(b)]
        assert turned[row].tolist() == pytest.approx(want, abs=1e-6), f"position {position}"


def test_a_score_depends_only_on_the_distance_between_query_and_key():
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=generator), torch.randn(8, generator=generator)  # (d_head,)
    angles = rotary_angles(40, 8)  # (40, 4)

    def score(query_position: int, key_position: int) -> float:
        turned_q = rotate(q[None], angles[query_position:query_position + 1])[0]
        turned_k = rotate(k[None], angles[key_position:key_position + 1])[0]
        return float(turned_q @ turned_k)

    for shift in (1, 7, 25):
        assert score(5 + shift, 2 + shift) == pytest.approx(score(5, 2), abs=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 4), abs=1e-3)


def config(**settings) -> ModelConfig:
    return ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=2, positional="rotary", **settings)


def test_self_attention_scores_are_the_turned_q_and_k_and_cross_attention_is_not_turned():
    model = Transformer(config(), generator=torch.Generator().manual_seed(1)).eval()
    src, tgt = torch.tensor([[1, 5, 6, 7, 3]]), torch.tensor([[1, 4, 9]])
    _, trace = model.run_with_trace(src, tgt)
    q, k = trace[attention_name("encoder_self", 0, "q")], trace[attention_name("encoder_self", 0, "k")]
    angles = rotary_angles(5, 8)
    assert torch.allclose(trace[attention_name("encoder_self", 0, "q_rot")], rotate(q, angles))
    scores = rotate(q, angles) @ rotate(k, angles).transpose(-2, -1) / math.sqrt(8)
    assert torch.allclose(trace[attention_name("encoder_self", 0, "scores")], scores, atol=1e-5)
    assert attention_name("cross", 0, "q_rot") not in trace.tensors
    assert not trace["src_embed.position"].any()  # nothing is added to the embeddings
    numbers = cell_numbers(trace, "encoder_self", 0, 1, 3, 1)  # the cell's numbers use the turned q and k
    assert numbers.dot / numbers.scale == pytest.approx(numbers.recorded_score, abs=1e-5)


def test_a_decoder_only_model_turns_too_and_positions_off_turns_nothing():
    from transformer_viz import Intervention

    model = DecoderOnlyTransformer(config(architecture="decoder_only")).eval()
    ids = torch.tensor([[1, 5, 6, 7]])
    _, trace = model.run_with_trace(ids)
    assert attention_name("decoder_self", 1, "k_rot") in trace.tensors
    _, unturned = model.run_with_trace(ids, intervention=Intervention(positions=False))
    assert attention_name("decoder_self", 1, "k_rot") not in unturned.tensors


def test_an_odd_head_width_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="d_model / n_heads must be even"):
        ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=6, n_heads=2, positional="rotary")


@pytest.mark.parametrize("architecture", ["encoder_decoder", "decoder_only"])
def test_the_walkthrough_turns_q_and_k_as_the_model_did_and_draws_the_turn(architecture):
    model = (DecoderOnlyTransformer if architecture == "decoder_only" else Transformer)(
        config(architecture=architecture), generator=torch.Generator().manual_seed(3)).eval()
    ids = torch.tensor([[1, 5, 6, 7, 8]])
    _, trace = model.run_with_trace(ids) if architecture == "decoder_only" else model.run_with_trace(ids, ids[:, :3])
    kind = "decoder_self" if architecture == "decoder_only" else "encoder_self"
    walk = head_walkthrough(model, trace, kind, 1, 1)  # checked against the trace step by step, turned q and k too
    recorded = trace[attention_name(kind, 1, "q_rot")][0, 1]  # (length, d_head)
    assert torch.allclose(torch.from_numpy(walk.q_rot.copy()), recorded, atol=1e-5)
    assert not torch.allclose(torch.from_numpy(walk.q.copy()), recorded, atol=1e-3)  # turned: not q itself
    assert walk.angles[3, 0] == pytest.approx(3.0)  # position 3, pair 0: 3 radians
    steps = [step for step, _ in walkthrough_figures(walk)]
    assert steps[:4] == ["x", "projections", "rotate", "qk"]
    if architecture == "encoder_decoder":  # cross-attention is not turned: no such step
        cross = head_walkthrough(model, trace, "cross", 0, 0)
        assert cross.q_rot is None and "rotate" not in [step for step, _ in walkthrough_figures(cross)]
