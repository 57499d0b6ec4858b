"""Positional encodings against their formulas, and what each variant does to the embedding."""

import math

import pytest
import torch
from helpers import make_model, random_ids

from transformer_viz import ModelConfig, Transformer
from transformer_viz.model import (
    learned_init_encoding,
    seed002_buggy_encoding,
    sinusoidal_concat_encoding,
    sinusoidal_encoding,
)


@pytest.mark.parametrize("position, dim", [(0, 0), (0, 1), (1, 0), (3, 5), (7, 10), (20, 31)])
def test_sinusoidal_matches_paper_formula(position, dim):
    d_model = 32
    i = dim // 2
    angle = position / 10000 ** (2 * i / d_model)
    expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    assert sinusoidal_encoding(24, d_model)[position, dim].item() == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("position, dim", [(0, 0), (0, 16), (1, 0), (5, 3), (9, 17), (23, 31)])
def test_sinusoidal_concat_matches_tensorflow_formula(position, dim):
    d_model, half = 32, 16
    i = dim % half
    angle = position * math.exp(-i * math.log(10000) / (half - 1))
    expected = math.sin(angle) if dim < half else math.cos(angle)
    assert sinusoidal_concat_encoding(24, d_model)[position, dim].item() == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("position, dim", [(0, 0), (3, 2), (7, 5), (20, 31)])
def test_seed002_bug_doubles_the_paper_exponent(position, dim):
    d_model, two_i = 32, dim - dim % 2  # the seed's loop variable is already 2i
    angle = position / 10000 ** (2 * two_i / d_model)
    expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    assert seed002_buggy_encoding(24, d_model)[position, dim].item() == pytest.approx(expected, abs=1e-6)


def test_learned_init_encoding_is_drawn_as_a_fresh_learned_table():
    table = make_model(positional="learned").src_embed.positional.table.weight.detach()  # (max_len, d_model)
    init = learned_init_encoding(*table.shape)
    bound = math.sqrt(6 / sum(table.shape))  # Xavier-uniform
    for values in (table, init):
        assert 0.9 * bound < values.abs().max() <= bound
    assert torch.equal(init, learned_init_encoding(*table.shape))  # seeded: the figure does not change


def trace_of(**overrides):
    model = make_model(**overrides)
    src, tgt = random_ids(1, 6, 20), random_ids(1, 4, 22)
    return model, model.run_with_trace(src, tgt)[1], src


@pytest.mark.parametrize("positional", ["sinusoidal", "sinusoidal_concat", "learned"])
def test_position_is_added_to_token(positional):
    _, trace, _ = trace_of(positional=positional)
    assert trace["src_embed.position"].abs().sum() > 0
    assert torch.allclose(trace["src_embed.out"], trace["src_embed.token"] + trace["src_embed.position"])


def test_none_records_zeros():
    _, trace, _ = trace_of(positional="none")
    assert torch.equal(trace["src_embed.position"], torch.zeros(6, 16))
    assert torch.equal(trace["src_embed.out"], trace["src_embed.token"])


def test_scale_embeddings_multiplies_token_by_sqrt_d_model():
    model, trace, src = trace_of(scale_embeddings=True)
    table = model.src_embed.token_table.weight.detach()
    assert torch.allclose(trace["src_embed.token"][0], table[src[0]] * 4.0)  # sqrt(16)


def test_embed_norm_normalises_the_sum():
    _, trace, _ = trace_of(embed_norm=True)
    out = trace["src_embed.out"]
    assert torch.allclose(out.mean(-1), torch.zeros(1, 6), atol=1e-5)
    assert torch.allclose(out.std(-1, unbiased=False), torch.ones(1, 6), atol=1e-3)


def test_padding_row_embeds_to_zero():
    model = make_model()
    assert torch.equal(model.src_embed.token_table.weight[0], torch.zeros(16))


def permuted_encoder_output(positional: str):
    model = Transformer(ModelConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=4,
                                    positional=positional)).eval()
    src = random_ids(1, 7, 20)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    with torch.no_grad():
        memory, _ = model.encode(src)
        memory_of_permuted, _ = model.encode(src[:, perm])
    return memory[:, perm], memory_of_permuted


def test_without_positions_the_encoder_is_permutation_equivariant():
    want, got = permuted_encoder_output("none")
    assert torch.allclose(want, got, atol=1e-5)


@pytest.mark.parametrize("positional", ["sinusoidal", "sinusoidal_concat", "learned"])
def test_positions_break_permutation_equivariance(positional):
    want, got = permuted_encoder_output(positional)
    assert not torch.allclose(want, got, atol=1e-3)
