"""Masks: no weight reaches a padded key, no decoder position sees the future, empty rows are zeros."""

import pytest
import torch
from helpers import make_model, random_ids

from transformer_viz.model import decoder_self_mask, look_ahead_mask, padding_mask


def test_look_ahead_mask_is_lower_triangular():
    assert torch.equal(look_ahead_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))


def test_padding_mask_marks_real_tokens():
    ids = torch.tensor([[5, 3, 0, 0]])
    assert torch.equal(padding_mask(ids, 0), torch.tensor([[[[True, True, False, False]]]]))


def test_decoder_mask_combines_look_ahead_and_target_padding():
    mask = decoder_self_mask(torch.tensor([[4, 7, 0]]), 0)[0, 0]
    assert torch.equal(mask, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 0]], dtype=torch.bool))


@pytest.mark.parametrize("mask_value", [-1e9, -1e4, float("-inf")])
def test_no_weight_reaches_a_padded_key_or_a_future_position(mask_value):
    model = make_model(mask_value=mask_value)
    src = random_ids(2, 6, 20, pad_tail=[0, 3])
    tgt = random_ids(2, 5, 22, pad_tail=[2, 0])
    _, trace = model.run_with_trace(src, tgt)
    for i in range(2):
        enc = trace[f"encoder.layers.{i}.self_attn.weights"]
        cross = trace[f"decoder.layers.{i}.cross_attn.weights"]
        assert torch.all(enc[1, :, :, 3:] == 0) and torch.all(cross[1, :, :, 3:] == 0)
        dec = trace[f"decoder.layers.{i}.self_attn.weights"]
        assert torch.all(dec.triu(diagonal=1) == 0)
        assert torch.all(dec[0, :, :, 3:] == 0)  # target padding is a blocked key too
        for weights in (enc, cross, dec):
            assert torch.allclose(weights.sum(-1), torch.ones_like(weights.sum(-1)), atol=1e-5)


@pytest.mark.parametrize("mask_value", [-1e9, -1e4, float("-inf")])
def test_a_fully_padded_source_gives_zero_rows_not_nan(mask_value):
    model = make_model(mask_value=mask_value)
    src = torch.tensor([[3, 4, 5], [0, 0, 0]])
    _, trace = model.run_with_trace(src, random_ids(2, 4, 22))
    for key, tensor in trace.items():
        if tensor.is_floating_point():
            assert not torch.isnan(tensor).any(), key
    assert torch.all(trace["encoder.layers.0.self_attn.weights"][1] == 0)
    assert torch.all(trace["decoder.layers.1.cross_attn.weights"][1] == 0)


@pytest.mark.parametrize("mask_value", [-1e9, -1e4, float("-inf")])
def test_the_mask_value_is_what_blocked_scores_become(mask_value):
    # Catches a model that fills blocked scores with a constant of its own instead of config.mask_value.
    model = make_model(mask_value=mask_value)
    src, tgt = torch.tensor([[3, 4, 0]]), torch.tensor([[1, 2, 0]])
    _, trace = model.run_with_trace(src, tgt)
    for key, masked in trace.items():
        if key.endswith(".masked_scores"):
            prefix = key.removesuffix(".masked_scores")
            blocked = ~trace[f"{prefix}.mask"].expand_as(masked)
            assert blocked.any() and torch.all(masked[blocked] == mask_value), key
            assert torch.equal(masked[~blocked], trace[f"{prefix}.scores"][~blocked]), key
    # Even with -1e4 (seed 002) a blocked key gets exactly zero: the weights are masked after the softmax.
    assert torch.all(trace["encoder.layers.0.self_attn.weights"][..., 2] == 0)
