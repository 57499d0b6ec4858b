"""Encoder and decoder layers against torch.nn.TransformerEncoderLayer / TransformerDecoderLayer."""

import pytest
import torch
from helpers import random_ids
from torch import nn

from transformer_viz import ModelConfig
from transformer_viz.model import DecoderLayer, EncoderLayer, decoder_self_mask, padding_mask

D_MODEL, N_HEADS, D_FF = 16, 4, 24


def config(norm_first: bool) -> ModelConfig:
    return ModelConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=D_MODEL, n_heads=N_HEADS,
                       d_ff=D_FF, norm_first=norm_first)


def copy_attention(ours, ref: nn.MultiheadAttention) -> None:
    ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    ref.out_proj.load_state_dict(ours.out_proj.state_dict())


def randomise(module: nn.Module) -> None:
    """Non-trivial biases and LayerNorm affine parameters, so a mix-up of norms shows."""
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if parameter.dim() == 1:
                centre = 1.0 if "norm" in name and "weight" in name else 0.0
                parameter.copy_(torch.randn_like(parameter) * 0.5 + centre)


def copy_common(ours, ref) -> None:
    ref.linear1.load_state_dict(ours.ffn.linear1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.linear2.state_dict())
    ref.norm1.load_state_dict(ours.norm1.state_dict())
    ref.norm2.load_state_dict(ours.norm2.state_dict())


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_layer_matches_torch(norm_first):
    ours = EncoderLayer(config(norm_first)).eval()
    randomise(ours)
    # train() with dropout 0 is deterministic and keeps torch off its fused fast path.
    ref = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation="relu",
                                     batch_first=True, norm_first=norm_first).train()
    with torch.no_grad():
        copy_attention(ours.self_attn, ref.self_attn)
        copy_common(ours, ref)

    src_ids = random_ids(3, 6, 10, pad_tail=[0, 1, 4])
    x = torch.randn(3, 6, D_MODEL)
    with torch.no_grad():
        got = ours(x, padding_mask(src_ids, 0))
        want = ref(x, src_key_padding_mask=src_ids == 0)  # torch: True = blocked
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_layer_matches_torch(norm_first):
    ours = DecoderLayer(config(norm_first)).eval()
    randomise(ours)
    ref = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation="relu",
                                     batch_first=True, norm_first=norm_first).train()
    with torch.no_grad():
        copy_attention(ours.self_attn, ref.self_attn)
        copy_attention(ours.cross_attn, ref.multihead_attn)
        copy_common(ours, ref)
        ref.norm3.load_state_dict(ours.norm3.state_dict())

    src_ids = random_ids(2, 7, 10, pad_tail=[2, 0])
    tgt_ids = random_ids(2, 5, 10, pad_tail=[0, 2])
    x, memory = torch.randn(2, 5, D_MODEL), torch.randn(2, 7, D_MODEL)
    with torch.no_grad():
        got = ours(x, memory, decoder_self_mask(tgt_ids, 0), padding_mask(src_ids, 0))
        future = torch.ones(5, 5, dtype=torch.bool).triu(1)  # torch: True = blocked
        want = ref(x, memory, tgt_mask=future, tgt_key_padding_mask=tgt_ids == 0,
                   memory_key_padding_mask=src_ids == 0)
    assert torch.allclose(got, want, atol=1e-5)
