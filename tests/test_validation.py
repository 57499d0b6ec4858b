"""Every impossible configuration and unreadable input is a ValueError a student can act on."""

import json

import pytest
import torch
from helpers import make_model

from transformer_viz import ModelConfig
from transformer_viz.config import SIZE_LIMITS
from transformer_viz.data.tasks import TASKS, model_config_for
from transformer_viz.weights.pretrained import CHECKPOINT_DIR


def config(**overrides):
    return ModelConfig(**{"src_vocab_size": 10, "tgt_vocab_size": 10, **overrides})


def test_heads_that_do_not_divide_d_model_name_both_numbers():
    with pytest.raises(ValueError, match=r"d_model = 64.*n_heads = 5") as error:
        config(d_model=64, n_heads=5)
    assert "1, 2, 4, 8, 16, 32, 64" in str(error.value)


@pytest.mark.parametrize("positional", ["sinusoidal", "sinusoidal_concat"])
def test_odd_d_model_with_sinusoidal_encoding(positional):
    with pytest.raises(ValueError, match="must be even"):
        config(d_model=15, n_heads=3, positional=positional)


def test_odd_d_model_is_fine_with_learned_positions():
    assert config(d_model=15, n_heads=3, positional="learned").d_head == 5


@pytest.mark.parametrize("field", ["d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff",
                                   "max_len", "src_vocab_size"])
@pytest.mark.parametrize("value", [0, -3, 2.5])
def test_non_positive_or_fractional_sizes(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a positive whole number"):
        config(**{field: value})


@pytest.mark.parametrize("overrides, message", [
    ({"positional": "alibi"}, "not a known positional encoding"),
    ({"dropout": 1.0}, "dropout"),
    ({"pad_id": 10}, "pad_id = 10"),
    ({"mask_value": 0.0}, "large negative"),
    ({"mask_value": float("nan")}, "large negative"),
])
def test_unknown_variants_and_bad_values(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(**overrides)


@pytest.mark.parametrize("overrides, message", [
    ({"pad_id": "0"}, r"pad_id must be a whole number, got '0'"),
    ({"pad_id": True}, "pad_id must be a whole number, got True"),
    ({"pad_id": 1.5}, "pad_id must be a whole number, got 1.5"),
    ({"dropout": "0.1"}, r"dropout must be a number from 0 up to \(not including\) 1, got '0.1'"),
    ({"dropout": True}, "dropout must be a number"),
    ({"dropout": float("nan")}, "dropout must be a number"),
    ({"mask_value": None}, "mask_value .* got None"),
    ({"mask_value": "-1e9"}, "mask_value .* got '-1e9'"),
    ({"mask_value": 1j}, r"mask_value .* got 1j"),
    ({"mask_value": True}, "mask_value .* got True"),
    ({"mask_value": -1e39}, "float32"),  # masked_fill could not store it: a RuntimeError inside the forward pass
    ({"norm_first": "False"}, "norm_first must be True or False, got 'False'"),
    ({"norm_first": 0}, "norm_first must be True or False, got 0"),
    ({"scale_embeddings": None}, "scale_embeddings must be True or False"),
    ({"embed_norm": "yes"}, "embed_norm must be True or False"),
    ({"positional": ["learned"]}, "not a known positional encoding"),
])
def test_values_of_the_wrong_type_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(**overrides)


def test_mask_value_accepts_any_negative_real_down_to_minus_infinity():
    for value in (-1, -1e-3, -1e4, -3.4e38, float("-inf")):
        assert config(mask_value=value).mask_value == value
    assert config(dropout=0).dropout == 0


@pytest.mark.parametrize("field", sorted(SIZE_LIMITS))
def test_sizes_above_the_documented_limits_are_refused(field):
    limit = SIZE_LIMITS[field]
    assert getattr(config(**{field: limit}), field) == limit
    with pytest.raises(ValueError, match=rf"{field} = {limit + 1} is more than .* at most {limit}"):
        config(**{field: limit + 1})


def test_huge_sizes_are_refused_before_anything_is_built():
    with pytest.raises(ValueError, match=f"max_len = {2**40} is more than"):
        config(max_len=2**40)
    with pytest.raises(ValueError, match=f"d_model = {10**9} is more than"):
        config(d_model=10**9)


def test_the_limits_admit_every_shipped_checkpoint_and_every_task():
    for path in CHECKPOINT_DIR.glob("*.json"):
        ModelConfig.from_dict(json.loads(path.read_text(encoding="utf-8"))["config"])
    for task in TASKS.values():
        model_config_for(task, d_model=256, n_heads=16, layers=6, d_ff=512, max_len=64)


@pytest.mark.parametrize("data", [5, None, ["d_model"], "config"])
def test_from_dict_refuses_what_is_not_a_dict(data):
    with pytest.raises(ValueError, match="ModelConfig settings must be a dict"):
        ModelConfig.from_dict(data)


def test_from_dict_names_a_missing_vocabulary_size():
    with pytest.raises(ValueError, match="must include tgt_vocab_size"):  # was a TypeError from __init__
        ModelConfig.from_dict({"src_vocab_size": 10})


def test_config_round_trips_through_a_dict():
    cfg = config(norm_first=False, positional="learned", mask_value=float("-inf"))
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="Unknown ModelConfig settings: colour"):
        ModelConfig.from_dict({**cfg.to_dict(), "colour": "red"})


@pytest.mark.parametrize("src, tgt, message", [
    (torch.ones(1, 25, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), "source sequence has 25 tokens"),
    (torch.ones(1, 3, dtype=torch.long), torch.ones(1, 30, dtype=torch.long), "target sequence has 30 tokens"),
    (torch.tensor([[1, 20]]), torch.ones(1, 2, dtype=torch.long), "Token id 20 is outside the source"),
    (torch.tensor([[1, -1]]), torch.ones(1, 2, dtype=torch.long), "Token id -1 is outside the source"),
    (torch.ones(1, 3, dtype=torch.long), torch.tensor([[1, 22]]), "Token id 22 is outside the target"),
    (torch.ones(1, 0, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), "source sequence is empty"),
    (torch.ones(3, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), "shape \\(batch, length\\)"),
    (torch.ones(1, 3), torch.ones(1, 2, dtype=torch.long), "int64"),
    (torch.ones(0, 3, dtype=torch.long), torch.ones(0, 2, dtype=torch.long), "source batch is empty"),
    (torch.ones(1, 3, dtype=torch.long), torch.ones(0, 2, dtype=torch.long), "target batch is empty"),
    (torch.ones(2, 3, dtype=torch.long), torch.ones(3, 2, dtype=torch.long), "2 source rows but 3 target rows"),
    (torch.ones(1, 3, dtype=torch.long), torch.ones(2, 2, dtype=torch.long), "1 source row but 2 target rows"),
    (torch.ones(1, 1, 3, dtype=torch.long), torch.ones(1, 2, dtype=torch.long), "got a 3-D tensor"),
    (torch.ones(1, 3, dtype=torch.bool), torch.ones(1, 2, dtype=torch.long), "got dtype torch.bool"),
    (torch.ones(1, 3, dtype=torch.int32), torch.ones(1, 2, dtype=torch.long), "got dtype torch.int32"),
    ([[1, 2]], torch.ones(1, 2, dtype=torch.long), "got a list"),
])
def test_bad_inputs_raise_value_error(src, tgt, message):
    model = make_model()
    with pytest.raises(ValueError, match=message):
        model(src, tgt)
    with pytest.raises(ValueError, match=message):
        model.run_with_trace(src, tgt)


@pytest.mark.parametrize("src, message", [
    (torch.ones(0, 3, dtype=torch.long), "source batch is empty"),
    (torch.ones(3, dtype=torch.long), "got a 1-D tensor"),
    (torch.ones(1, 3, dtype=torch.float64), "got dtype torch.float64"),
])
def test_generate_refuses_unreadable_sources(src, message):
    with pytest.raises(ValueError, match=message):
        make_model().generate(src, max_new_tokens=3, bos_id=1, eos_id=2)


@pytest.mark.parametrize("settings, message", [
    ({"max_new_tokens": None}, "max_new_tokens must be a whole number of at least 1, got None"),
    ({"max_new_tokens": 2.5}, "max_new_tokens must be a whole number of at least 1, got 2.5"),
    ({"max_new_tokens": True}, "max_new_tokens must be a whole number of at least 1, got True"),
    ({"bos_id": 22}, "bos_id = 22 is not a token of the target vocabulary"),
    ({"bos_id": -1}, "bos_id = -1 is not a token of the target vocabulary"),
    ({"eos_id": "2"}, "eos_id must be a whole token id, got '2'"),
    ({"eos_id": 2.0}, "eos_id must be a whole token id, got 2.0"),
])
def test_generate_refuses_impossible_settings(settings, message):
    arguments = {"max_new_tokens": 3, "bos_id": 1, "eos_id": 2, **settings}
    with pytest.raises(ValueError, match=message):
        make_model().generate(torch.ones(1, 3, dtype=torch.long), **arguments)
