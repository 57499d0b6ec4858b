"""ModelConfig: every size and architecture variant of the Transformer, validated.

The variants are the choices the seed tutorials make differently: where the
LayerNorm sits (pre-LN or post-LN), how positions are encoded, whether token
embeddings are scaled by sqrt(d_model), whether the embedding sum is normalised,
and which value fills a blocked attention score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, fields, replace
from types import MappingProxyType

from transformer_viz.errors import TranslatableError

# "rotary" (RoPE) adds nothing to the embeddings: self-attention turns its queries and keys (model/rotary.py).
POSITIONAL_ENCODINGS = ("sinusoidal", "sinusoidal_concat", "learned", "none", "rotary")
# encoder-decoder (the paper's); decoder-only (GPT's): one token stream, causal self-attention, its tgt_vocab_size
ARCHITECTURES = ("encoder_decoder", "decoder_only")
# The tasks' names, for a command's help without importing torch (data/tasks/ defines them: a test keeps these equal)
TASK_NAMES = ("copy", "reverse", "sort", "rotate", "en-fr", "en-zh")
LM_TASK_NAMES = ("induction",)  # learnt by a decoder-only model only
# The largest sizes this teaching tool supports (DESIGN.md, "Limits"): every call stays within about
# a gigabyte and half a minute on a 2-core server, greedy decoding included (its cost grows as max_len³).
SIZE_LIMITS = MappingProxyType({
    "src_vocab_size": 10_000, "tgt_vocab_size": 10_000, "d_model": 512, "n_heads": 16,
    "n_encoder_layers": 6, "n_decoder_layers": 6, "d_ff": 2048, "max_len": 64,
})
SWITCHES = ("norm_first", "scale_embeddings", "embed_norm", "attention_only", "tie_embeddings")
# Scores are float32: a finite fill below this cannot be stored (masked_fill would fail mid-forward).
MASK_VALUE_MIN = -3.4028234663852886e38


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and variants of a Transformer (checked on creation): encoder-decoder, or decoder-only (its one
    vocabulary is tgt_vocab_size, its layers n_decoder_layers; the encoder's settings are not used)."""

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
    architecture: str = "encoder_decoder"
    # A decoder-only model without feed-forward sublayers (the induction-heads studies' "attention-only" models).
    attention_only: bool = False
    # A decoder-only model whose output projection is its token embedding table (GPT-2's weight tying).
    tie_embeddings: bool = False

    def __post_init__(self) -> None:
        self.validate()

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def score_scale(self) -> float:
        """What q·k is divided by: √d_head."""
        return math.sqrt(self.d_head)

    @property
    def empty_rows_even(self) -> bool:
        """A query that may attend to no key gets weight 0 everywhere (model/attention.py::masked_softmax)."""
        return False

    def validate(self) -> None:
        """Raise ValueError with a sentence a student understands if this model cannot exist."""
        for field, limit in SIZE_LIMITS.items():
            value = getattr(self, field)
            if not is_whole(value) or value <= 0:
                raise ValueError(f"{field} must be a positive whole number, got {value!r}.")
            if value > limit:
                raise ValueError(f"{field} = {value} is more than this teaching tool supports: at most {limit}.")
        if not is_whole(self.pad_id):
            raise ValueError(f"pad_id must be a whole number, got {self.pad_id!r}.")
        for field in SWITCHES:
            value = getattr(self, field)
            if not isinstance(value, bool):
                raise ValueError(f"{field} must be True or False, got {value!r}.")
        if self.d_model % self.n_heads != 0:
            raise TranslatableError(
                "config.heads", f"d_model = {self.d_model} cannot be split evenly into n_heads = {self.n_heads} heads: "
                f"each head gets d_model / n_heads dimensions, so n_heads must divide d_model "
                f"(for d_model = {self.d_model} try one of {divisors(self.d_model)}).",
                d_model=self.d_model, n_heads=self.n_heads, divisors=divisors(self.d_model),
            )
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture = {self.architecture!r} is not one this tool builds; choose one of "
                             f"{', '.join(ARCHITECTURES)}.")
        for switch in ("attention_only", "tie_embeddings"):
            if getattr(self, switch) and self.architecture != "decoder_only":
                raise ValueError(f"{switch} models are decoder-only here: set architecture='decoder_only'.")
        if self.positional not in POSITIONAL_ENCODINGS:
            raise ValueError(
                f"positional = {self.positional!r} is not a known positional encoding; "
                f"choose one of {', '.join(POSITIONAL_ENCODINGS)}."
            )
        if self.positional.startswith("sinusoidal") and self.d_model % 2 != 0:
            raise TranslatableError(
                "config.odd_d_model", f"The sinusoidal positional encoding pairs every sine with a cosine, so "
                f"d_model must be even, got d_model = {self.d_model}. Pick an even d_model or a learned encoding.",
                d_model=self.d_model,
            )
        if self.positional == "rotary" and self.d_head % 2 != 0:
            raise TranslatableError(
                "config.odd_d_head", f"Rotary position embeddings turn pairs of dimensions of each head, so "
                f"d_model / n_heads must be even, got {self.d_model} / {self.n_heads} = {self.d_head}.",
                d_model=self.d_model, n_heads=self.n_heads, d_head=self.d_head)
        if not (is_real(self.dropout) and 0 <= self.dropout < 1):
            raise ValueError(f"dropout must be a number from 0 up to (not including) 1, got {self.dropout!r}.")
        for side in ("src", "tgt"):
            vocab = getattr(self, f"{side}_vocab_size")
            if not 0 <= self.pad_id < vocab:
                raise ValueError(
                    f"pad_id = {self.pad_id} is not a token of the {side} vocabulary (ids 0 to {vocab - 1})."
                )
        if not (is_real(self.mask_value) and (MASK_VALUE_MIN <= self.mask_value < 0 or self.mask_value == -math.inf)):
            raise ValueError(
                f"mask_value fills blocked attention scores before the softmax, so it must be a large "
                f"negative number such as -1e9 or -inf (a finite one no lower than {MASK_VALUE_MIN:.2g}, "
                f"the float32 limit), got {self.mask_value!r}."
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        """Build from a dict such as JSON metadata; unknown keys are an error, not ignored."""
        if not isinstance(data, Mapping):
            raise ValueError(f"ModelConfig settings must be a dict of name: value, got {data!r}.")
        known = {f.name for f in fields(cls)}
        unknown = sorted(map(str, set(data) - known))
        if unknown:
            raise ValueError(f"Unknown ModelConfig settings: {', '.join(unknown)}.")
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.name not in data]
        if missing:
            raise ValueError(f"ModelConfig settings must include {' and '.join(missing)}.")
        return cls(**data)


def fits(weights: ModelConfig, config: ModelConfig) -> bool:
    """Whether the weights of a model of `weights` can be loaded into a model of `config` and be the same model:
    every setting equal but the mask value and dropout, which hold no weight (and change no weight's meaning)."""
    return replace(weights, mask_value=config.mask_value, dropout=config.dropout) == config


def is_whole(value) -> bool:
    """An int, but not a bool (True is 1 to Python, never a size to a student)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value) -> bool:
    """An int or a float, but not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def divisors(n: int) -> list[int]:
    """Head counts that split n dimensions evenly."""
    return [k for k in range(1, n + 1) if n % k == 0]
