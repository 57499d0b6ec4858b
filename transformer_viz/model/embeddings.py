"""Token embeddings, the four positional encodings, and their sum (paper section 3.4-3.5).

Attention by itself treats its input as a set: permute the tokens and every output
is permuted the same way. Adding a position-dependent vector breaks that symmetry.
"""

import math

import torch
from torch import nn

from transformer_viz.config import ModelConfig
from transformer_viz.model.hooks import Dropout, HookPoint, active_intervention


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The paper's layout: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same). -> (max_len, d_model)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model / 2,)
    return _interleave(position / 10000.0 ** (two_i / d_model))  # (max_len, d_model)


def sinusoidal_concat_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The TensorFlow layout (seed 004): [sin | cos] halves, timescales exp(-i ln(10000) / (d/2 - 1))."""
    half = d_model // 2
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    # TensorFlow divides by (d/2 - 1), not d/2: its slowest frequency is exactly 1/10000.
    log_step = math.log(10000.0) / max(half - 1, 1)
    inv_timescales = torch.exp(-log_step * torch.arange(half, dtype=torch.float32))  # (d_model / 2,)
    angle = position * inv_timescales  # (max_len, d_model / 2)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)  # (max_len, d_model)


def seed002_buggy_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """Seed 002's table, wrong on purpose: a labelled bug to show, never used by the model.

    The seed wrote `10000 ** (2 * i / d)` with its loop variable i already stepping 0, 2, 4, ...,
    so the exponent is doubled: the frequencies fall off twice as fast and the upper half of the
    dimensions is almost constant (sin ≈ 0, cos ≈ 1). -> (max_len, d_model).
    """
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model / 2,) the seed's loop variable 0, 2, 4, ...
    return _interleave(position / 10000.0 ** (2 * i / d_model))  # (max_len, d_model); the bug: 2 * i


def learned_init_encoding(max_len: int, d_model: int, seed: int = 0) -> torch.Tensor:
    """A learned table as `Transformer.reset_parameters` initialises it (Xavier-uniform), before any training."""
    table = torch.empty(max_len, d_model)
    return nn.init.xavier_uniform_(table, generator=torch.Generator().manual_seed(seed))  # (max_len, d_model)


def encoding_tables(max_len: int, d_model: int) -> dict[str, torch.Tensor]:
    """The tables to compare, each (max_len, d_model): the paper's, TensorFlow's [sin | cos],
    seed 002's bug, and a learned table at its random initialisation."""
    return {"sinusoidal": sinusoidal_encoding(max_len, d_model),
            "sinusoidal_concat": sinusoidal_concat_encoding(max_len, d_model),
            "seed002_bug": seed002_buggy_encoding(max_len, d_model),
            "learned_init": learned_init_encoding(max_len, d_model)}


def _interleave(angle: torch.Tensor) -> torch.Tensor:
    """(max_len, d_model / 2) angles -> (max_len, d_model): sines in the even dimensions, cosines in the odd."""
    encoding = torch.empty(angle.shape[0], 2 * angle.shape[1])  # (max_len, d_model)
    encoding[:, 0::2] = torch.sin(angle)
    encoding[:, 1::2] = torch.cos(angle)
    return encoding


class PositionalEncoding(nn.Module):
    """One of "sinusoidal", "sinusoidal_concat", "learned" (a table, as in BERT) or "none" (zeros)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.kind, self.max_len, self.d_model = config.positional, config.max_len, config.d_model
        if self.kind == "learned":
            self.table = nn.Embedding(config.max_len, config.d_model)
        else:
            # A buffer, not a parameter: fixed, and rebuilt from the config rather than saved.
            self.register_buffer("table", self.fixed_table(), persistent=False)

    def fixed_table(self) -> torch.Tensor:
        """The table of a fixed kind (zeros for "none") -> (max_len, d_model)."""
        builders = {"sinusoidal": sinusoidal_encoding, "sinusoidal_concat": sinusoidal_concat_encoding}
        if self.kind in builders:
            return builders[self.kind](self.max_len, self.d_model)
        return torch.zeros(self.max_len, self.d_model)

    def forward(self, length: int) -> torch.Tensor:
        """-> (length, d_model). A copy, so a recording never aliases the table that training updates."""
        table = self.table.weight if self.kind == "learned" else self.table
        return table[:length].clone()


class Embeddings(nn.Module):
    """Token embedding (x sqrt(d_model) if scaled) + positional encoding, then optional LayerNorm and dropout."""

    def __init__(self, config: ModelConfig, vocab_size: int) -> None:
        super().__init__()
        self.token_table = nn.Embedding(vocab_size, config.d_model, padding_idx=config.pad_id)
        self.positional = PositionalEncoding(config)
        self.scale = math.sqrt(config.d_model) if config.scale_embeddings else 1.0
        self.norm = nn.LayerNorm(config.d_model) if config.embed_norm else nn.Identity()
        self.dropout = Dropout(config.dropout)
        self.hook_token = HookPoint()
        self.hook_position = HookPoint()
        self.hook_out = HookPoint()

    def forward(self, ids: torch.Tensor, token: torch.Tensor | None = None) -> torch.Tensor:
        """ids (batch, seq_len) -> (batch, seq_len, d_model).

        `token` (batch, seq_len, d_model), given, stands for the token table's rows of `ids`: attribution
        differentiates the output with respect to it (analysis/attribution.py)."""
        token = self.token_table(ids) if token is None else token  # (batch, seq_len, d_model)
        if self.scale != 1.0:
            token = token * self.scale
        token = self.hook_token(token)
        position = self.positional(ids.shape[1])  # (seq_len, d_model)
        if not active_intervention().positions:
            position = torch.zeros_like(position)
        position = self.hook_position(position)
        return self.hook_out(self.dropout(self.norm(token + position)))  # (batch, seq_len, d_model)
