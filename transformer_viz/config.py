"""ModelConfig: every size and architecture variant of the Transformer, validated.

The variants are the choices the seed tutorials make differently: where the
LayerNorm sits (pre-LN or post-LN), how positions are encoded, whether token
embeddings are scaled by sqrt(d_model), whether the embedding sum is normalised,
and which value fills a blocked attention score.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

POSITIONAL_ENCODINGS = ("sinusoidal", "sinusoidal_concat", "learned", "none")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and variants of an encoder-decoder Transformer (checked on creation)."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 128
    max_len: int = 32
    dropout: float = 0.0
    pad_id: int = 0
    norm_first: bool = True
    positional: str = "sinusoidal"
    scale_embeddings: bool = False
    embed_norm: bool = False
    mask_value: float = -1e9

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def validate(self) -> None:
        """Raise ValueError with a sentence a student understands if this model cannot exist."""
        for field in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads",
                      "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{field} must be a positive whole number, got {value!r}.")
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model = {self.d_model} cannot be split evenly into n_heads = {self.n_heads} heads: "
                f"each head gets d_model / n_heads dimensions, so n_heads must divide d_model "
                f"(for d_model = {self.d_model} try one of {divisors(self.d_model)})."
            )
        if self.positional not in POSITIONAL_ENCODINGS:
            raise ValueError(
                f"positional = {self.positional!r} is not a known positional encoding; "
                f"choose one of {', '.join(POSITIONAL_ENCODINGS)}."
            )
        if self.positional.startswith("sinusoidal") and self.d_model % 2 != 0:
            raise ValueError(
                f"The sinusoidal positional encoding pairs every sine with a cosine, so d_model must be "
                f"even, got d_model = {self.d_model}. Pick an even d_model or a learned encoding."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout is a probability below 1, got {self.dropout!r}.")
        for side in ("src", "tgt"):
            vocab = getattr(self, f"{side}_vocab_size")
            if not 0 <= self.pad_id < vocab:
                raise ValueError(
                    f"pad_id = {self.pad_id} is not a token of the {side} vocabulary (ids 0 to {vocab - 1})."
                )
        if math.isnan(self.mask_value) or self.mask_value >= 0:
            raise ValueError(
                f"mask_value fills blocked attention scores before the softmax, so it must be a large "
                f"negative number such as -1e9 or -inf, got {self.mask_value!r}."
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        """Build from a dict such as JSON metadata; unknown keys are an error, not ignored."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown ModelConfig settings: {', '.join(unknown)}.")
        return cls(**data)


def divisors(n: int) -> list[int]:
    """Head counts that split n dimensions evenly."""
    return [k for k in range(1, n + 1) if n % k == 0]
