"""Every impossible configuration and unreadable input is a ValueError a student can act on."""

import pytest
import torch
from helpers import make_model

from transformer_viz import ModelConfig


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
    ({"positional": "rotary"}, "not a known positional encoding"),
    ({"dropout": 1.0}, "dropout"),
    ({"pad_id": 10}, "pad_id = 10"),
    ({"mask_value": 0.0}, "large negative"),
    ({"mask_value": float("nan")}, "large negative"),
])
def test_unknown_variants_and_bad_values(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(**overrides)


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
])
def test_bad_inputs_raise_value_error(src, tgt, message):
    model = make_model()
    with pytest.raises(ValueError, match=message):
        model(src, tgt)
    with pytest.raises(ValueError, match=message):
        model.run_with_trace(src, tgt)
