"""Attention against hand-computed cases and against torch.nn.MultiheadAttention."""

import math

import pytest
import torch
from helpers import random_ids
from torch import nn

from transformer_viz import ModelConfig
from transformer_viz.model import MultiHeadAttention, padding_mask, scaled_dot_product_attention
from transformer_viz.model.attention import masked_softmax
from transformer_viz.model.hooks import name_hook_points, recording


def test_two_token_case_worked_out_by_hand():
    # d_head = 2; query 0 = [1, 0], query 1 = [0, 1]; keys [1, 0] and [0, 1]; values [1, 2] and [3, 4].
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    out, weights, scores, masked_scores = scaled_dot_product_attention(q, k, v, None, -1e9)
    s = 1 / math.sqrt(2)
    assert torch.allclose(scores, torch.tensor([[s, 0.0], [0.0, s]])) and torch.equal(masked_scores, scores)
    w_high = math.exp(s) / (math.exp(s) + 1)
    assert torch.allclose(weights, torch.tensor([[w_high, 1 - w_high], [1 - w_high, w_high]]))
    assert torch.allclose(out[0], w_high * v[0] + (1 - w_high) * v[1])


def test_masked_key_gets_exactly_zero_and_rest_renormalises():
    q = torch.ones(1, 3, 2)
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    v = torch.eye(3)[None]
    mask = torch.tensor([True, True, False])[None, None, :]
    _, weights, _, _ = scaled_dot_product_attention(q, k, v, mask, -1e9)
    assert torch.all(weights[..., 2] == 0)
    assert torch.allclose(weights[..., :2], torch.full((1, 3, 2), 0.5))


@pytest.mark.parametrize("mask_value", [-1e9, -1e4, float("-inf")])
def test_fully_blocked_row_is_zeros_not_nan(mask_value):
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])[None, None]
    out, weights, _, _ = scaled_dot_product_attention(q, k, v, mask, mask_value)
    assert not torch.isnan(weights).any() and not torch.isnan(out).any()
    assert torch.all(weights[:, :, 1] == 0)
    assert torch.allclose(weights[:, :, [0, 2]].sum(-1), torch.ones(1, 2, 2))


def test_a_fully_blocked_row_spreads_evenly_where_the_model_adds_its_mask():
    """Hugging Face's additive mask: a row with no allowed key is softmax(equal fills), 1/k_len each; the other
    rows are as without the option (blocked keys exactly 0)."""
    scores = torch.tensor([[2.0, -1.0, 0.5], [3.0, 1.0, -2.0]])
    mask = torch.tensor([[True, False, True], [False, False, False]])
    _, zeros = masked_softmax(scores, mask, -1e9)
    _, even = masked_softmax(scores, mask, torch.finfo(torch.float32).min, empty_rows_even=True)
    assert torch.equal(even[1], torch.full((3,), 1 / 3)) and torch.equal(zeros[1], torch.zeros(3))
    assert torch.equal(even[0], zeros[0]) and even[0, 1] == 0


def copy_into_torch_mha(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_multi_head_attention_matches_torch(n_heads):
    config = ModelConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=16, n_heads=n_heads)
    ours = MultiHeadAttention(config).eval()
    for linear in (ours.q_proj, ours.k_proj, ours.v_proj, ours.out_proj):
        nn.init.normal_(linear.bias)
    ref = nn.MultiheadAttention(16, n_heads, dropout=0.0, batch_first=True).eval()
    copy_into_torch_mha(ours, ref)

    query, memory = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    key_ids = random_ids(3, 7, 10, pad_tail=[0, 2, 6])
    mask = padding_mask(key_ids, pad_id=0)  # True = may attend
    name_hook_points(ours)
    with torch.no_grad(), recording() as recorded:
        out = ours(query, memory, mask)
    with torch.no_grad():
        ref_out, ref_weights = ref(query, memory, memory, key_padding_mask=key_ids == 0,  # True = blocked
                                   need_weights=True, average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert recorded["weights"].shape == (3, n_heads, 5, 7)
    assert torch.allclose(recorded["weights"], ref_weights, atol=1e-6)
