"""The view: every choice that defines what the app shows, as one small serializable object.

A View round-trips through URL query parameters, so a link restores the same
model, input and selection. No Streamlit here: the sidebar moves it in and out of
st.session_state and st.query_params.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from transformer_viz.figures.common import ATTENTION_KINDS, ATTENTION_VALUES

LANGUAGES = ("en", "zh")
WEIGHTS = ("pretrained", "random", "trained")
KINDS = tuple(ATTENTION_KINDS)
MASK_VALUES = (-1e9, -1e4, -math.inf)
CHOICES = {"lang": LANGUAGES, "weights": WEIGHTS, "kind": KINDS, "value": ATTENTION_VALUES}
SHAPE_FIELDS = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "max_len",
                "positional", "norm_first", "scale_embeddings", "embed_norm", "mask_value")


@dataclass(frozen=True)
class View:
    """What is on screen. Defaults are the shipped pretrained models' shape."""

    lang: str = "en"
    task: str = "reverse"
    weights: str = "pretrained"
    d_model: int = 64
    n_heads: int = 4
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_ff: int = 128
    max_len: int = 0  # 0: the task's own (its longest text + 1); more lets a fresh model read longer text
    positional: str = "sinusoidal"
    norm_first: bool = True
    scale_embeddings: bool = False
    embed_norm: bool = False
    mask_value: float = -1e9
    seed: int = 0
    src_text: str = ""
    tgt_text: str = ""
    kind: str = "cross"  # where a trained model's pattern is plainest: alignment
    layer: int = 1  # the last layer of the shipped models (clamped for smaller ones)
    head: int = 0
    value: str = "weights"

    def shape(self) -> dict:
        """The ModelConfig settings this view asks for (sizes and variants; max_len only when set)."""
        return {f: getattr(self, f) for f in SHAPE_FIELDS if f != "max_len" or self.max_len}

    def to_params(self) -> dict[str, str]:
        """Query parameters for the fields that differ from the defaults."""
        default = View()
        return {f.name: encode(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    @classmethod
    def from_params(cls, params: dict[str, str]) -> tuple[View, list[str]]:
        """Parse query parameters; returns the view and the names that could not be read (left at default)."""
        view, rejected = cls(), []
        types = {f.name: type(getattr(view, f.name)) for f in fields(cls)}
        values = {}
        for key, text in params.items():
            if key not in types:
                continue
            try:
                value = decode(text, types[key])
            except ValueError:
                rejected.append(key)
                continue
            if key in CHOICES and value not in CHOICES[key]:
                rejected.append(key)
            else:
                values[key] = value
        return replace(view, **values), rejected

    def as_dict(self) -> dict:
        return asdict(self)


def encode(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "-inf" if value == -math.inf else f"{value:g}"
    return str(value)


def decode(text: str, kind: type):
    if kind is bool:
        if text not in ("0", "1"):
            raise ValueError(text)
        return text == "1"
    return kind(text)
