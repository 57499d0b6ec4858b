"""The Trace: what one run recorded, a read-only mapping from trace name to a detached CPU tensor.

The model writes it (`Transformer.run_with_trace`); analysis, figures and the app read it. Reading attention
goes through `recorded_attention`, which names what there is when a choice does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch

from transformer_viz.config import ModelConfig, is_whole
from transformer_viz.trace import export
from transformer_viz.trace.form import Form, form_of
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import (
    ATTENTION_KINDS,
    attention_name,
    check_index,
    check_kind,
    check_stack,
    name,
    target_axes,
)


class NotRecorded(KeyError, ValueError):
    """A name the trace does not hold: a KeyError for a mapping's users (`in`, `get`), and the ValueError with a
    sentence that every function of the public API raises for input it cannot use (a partial trace)."""

    def __str__(self) -> str:  # KeyError's would quote the sentence
        return str(self.args[0])


@dataclass(frozen=True, eq=False)
class Trace(Mapping):
    """A read-only mapping from trace name to a detached CPU tensor, plus the run's context.

    `src_tokens` / `tgt_tokens` are the display strings of batch item 0 (when known);
    `config` is the ModelConfig that produced it; `intervention` the Intervention it ran under
    (None for a trace built by hand).
    """

    tensors: Mapping[str, torch.Tensor]
    config: Any = None
    src_tokens: tuple[str, ...] | None = None
    tgt_tokens: tuple[str, ...] | None = None
    intervention: Any = None

    def __post_init__(self) -> None:
        """ValueError with a sentence for fields a trace cannot have; tokens become tuples of strings."""
        _check_tensors(self.tensors)
        _check_config(self.config)
        for side in ("src_tokens", "tgt_tokens"):
            object.__setattr__(self, side, _checked_tokens(getattr(self, side), side))
        if self.intervention is not None and not isinstance(self.intervention, Intervention):
            raise ValueError(f"intervention must be an Intervention or None, got {type(self.intervention).__name__}.")

    def __getitem__(self, key: str) -> torch.Tensor:
        try:
            return self.tensors[key]
        except (KeyError, TypeError):  # TypeError: a key that cannot be one (a list)
            raise NotRecorded(f"{key!r} was not recorded in this trace; recorded names start with "
                              f"{sorted(self.tensors)[:3]}...") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    @property
    def form(self) -> Form:
        """The traced model's form (trace/form.py): the paper's encoder-decoder, or GPT's one stream."""
        return form_of(self.config)

    def stack_layers(self, stack: str) -> int:
        """How many layers of `stack` ("encoder" or "decoder") the trace holds: from the config (a decoder-only
        model has no encoder), else from the recorded names (a layer counts when its output or any of its attention
        weights was recorded)."""
        check_stack(stack)
        if self.config is not None:
            if stack == "decoder":
                return self.config.n_decoder_layers
            return self.config.n_encoder_layers if stack in self.form.stacks else 0
        kinds = [kind for kind, attention in ATTENTION_KINDS.items() if attention.stack == stack]
        return self._recorded_layers(lambda i: [name(stack, i, "resid_post"),
                                                *(attention_name(kind, i, "weights") for kind in kinds)])

    def n_layers(self, kind: str) -> int:
        """How many layers of attention `kind` the trace holds: its stack's, else those whose weights it recorded."""
        check_kind(kind)
        if self.config is not None:
            return self.stack_layers(ATTENTION_KINDS[kind].stack) if self.form.has_kind(kind) else 0
        return self._recorded_layers(lambda i: [attention_name(kind, i, "weights")])

    def attention_kinds(self) -> tuple[str, ...]:
        """The kinds of attention this trace holds (a decoder-only model's: its masked self-attention only)."""
        return tuple(kind for kind in ATTENTION_KINDS if self.n_layers(kind))

    def _recorded_layers(self, names_of_layer) -> int:
        """The layers 0, 1, ... for which any of `names_of_layer(layer)` was recorded, counted up to the first gap."""
        count = 0
        while any(recorded in self for recorded in names_of_layer(count)):
            count += 1
        return count

    def attention_tokens(self, kind: str) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
        """(query tokens, key tokens) of attention `kind`: display strings, None where unknown."""
        check_kind(kind)
        tokens = {"src": self.src_tokens, "tgt": self.tgt_tokens}
        return tokens[ATTENTION_KINDS[kind].query_side], tokens[ATTENTION_KINDS[kind].key_side]

    def target_prefix(self, length: int) -> Trace:
        """The trace of the first `length` decoder positions: views, no copies.

        With the look-ahead mask, position t of a pass never sees a later position, so the prefix of
        a pass over <bos> + a whole greedy answer is what greedy step `length - 1` computed.
        """
        def prefix(name: str, tensor: torch.Tensor) -> torch.Tensor:
            for axis in target_axes(name):
                tensor = tensor.narrow(axis, 0, length)
            return tensor

        return replace(self, tensors={n: prefix(n, t) for n, t in self.tensors.items()},
                       tgt_tokens=None if self.tgt_tokens is None else self.tgt_tokens[:length])

    def with_tokens(self, src_tokens=None, tgt_tokens=None) -> Trace:
        """The same trace with display strings for the source and target positions."""
        return replace(self, src_tokens=src_tokens, tgt_tokens=tgt_tokens)

    # Exports (trace/export.py; pandas is imported only by to_dataframe).

    def to_npz(self, path) -> None:
        """Save the tensors, tokens, config and intervention to one .npz file (no pickles)."""
        export.save_npz(self, path)

    @classmethod
    def from_npz(cls, path) -> Trace:
        """A trace saved by `to_npz`; ValueError for a file that is not one."""
        return cls(**export.load_npz(path))

    def to_dataframe(self):
        """Every attention weight of batch item 0 as a tidy pandas table, one row per (layer, head, query, key)."""
        return export.attention_table(self)

    def to_bertviz(self) -> dict:
        """The keyword arguments of BertViz's `head_view` / `model_view` for an encoder-decoder."""
        return export.bertviz_arguments(self)


CONFIG_SIZES = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers")  # what readers of a trace ask its config


def _check_tensors(tensors) -> None:
    if not isinstance(tensors, Mapping):
        raise ValueError(f"tensors must map trace names to tensors, got {type(tensors).__name__}.")
    for key, tensor in tensors.items():
        if not isinstance(key, str):
            raise ValueError(f"A trace name is a string such as 'logits', got {key!r}.")
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{key}: a trace holds torch tensors, got {type(tensor).__name__} (torch.as_tensor "
                             "makes one of a numeric array).")


def _check_config(config) -> None:
    """None, a ModelConfig, or a config with the same sizes (a Hugging Face model's HFConfig)."""
    if config is None or isinstance(config, ModelConfig):
        return
    for field in CONFIG_SIZES:
        value = getattr(config, field, None)
        if not is_whole(value) or value < 1:
            raise ValueError(f"config must be the ModelConfig of the traced model (or None): its {field} should be "
                             f"a positive whole number, got {type(config).__name__} with {field} = {value!r}.")


def _checked_tokens(tokens, side: str) -> tuple[str, ...] | None:
    """None, or the display strings as a tuple (a string is read as its characters)."""
    if tokens is None:
        return None
    if isinstance(tokens, (bytes, Mapping)) or not isinstance(tokens, Iterable):
        raise ValueError(f"{side} must be a list of strings (one per position) or None, got {type(tokens).__name__}.")
    tokens = tuple(tokens)
    for token in tokens:
        if not isinstance(token, str):
            raise ValueError(f"{side} must be a list of strings (one per position), but it holds {token!r}.")
    return tokens


def check_trace(trace) -> None:
    """Raise ValueError unless `trace` is a Trace."""
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a Trace (from model.run_with_trace), got {type(trace).__name__}.")


def recorded_attention(trace: Trace, kind: str, layer: int, leaf: str) -> torch.Tensor:
    """The recorded `leaf` of attention `kind` in `layer` (zero-based), e.g. q (batch, heads, q_len, d_head).

    Every reader of attention comes through here: an unknown kind, a layer the trace does
    not have or a leaf it did not record is a ValueError naming what there is.
    """
    check_trace(trace)
    check_kind(kind)
    layer = check_index(layer, trace.n_layers(kind), f"{ATTENTION_KINDS[kind].title} layer")
    recorded = attention_name(kind, layer, leaf)
    if recorded not in trace:
        raise ValueError(f"This trace did not record {recorded}: record one with model.run_with_trace.")
    return trace[recorded]


def recorded_mask(trace: Trace, kind: str, layer: int) -> torch.Tensor:
    """Batch item 0's mask of attention `kind` in `layer`: (q_len, k_len) bool, True = may attend.

    A trace without a recorded mask (one built by hand) allows every key.
    """
    weights = recorded_attention(trace, kind, layer, "weights")  # (batch, heads, q_len, k_len)
    mask = trace.get(attention_name(kind, int(layer), "mask"))
    return torch.ones(weights.shape[2:], dtype=torch.bool) if mask is None else mask[0, 0].bool()  # (q_len, k_len)
