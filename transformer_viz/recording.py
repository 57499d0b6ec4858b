"""Recording named tensors: HookPoint, the per-call Recorder and the Trace.

A HookPoint is an identity placed on a tensor worth seeing. It costs one
context-variable lookup when nothing records. `recording()` installs a Recorder
for the current thread (or asyncio task) only, so several users can trace the
same shared model at once and each gets their own tensors. Nothing is ever
stored on a module.
"""

from __future__ import annotations

import contextvars
import numbers
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

# The leaf names a recorded tensor may have (see DESIGN.md, "The trace").
LEAVES = ("token", "position", "out", "q", "k", "v", "scores", "mask", "masked_scores", "weights",
          "hidden", "resid_mid", "resid_cross", "resid_post", "logits")

_active_recorder: contextvars.ContextVar[dict[str, torch.Tensor] | None] = contextvars.ContextVar(
    "transformer_viz_recorder", default=None
)


class HookPoint(nn.Module):
    """Identity on a tensor; saves it under `self.name` while a recording is active.

    The name is the module path minus the `hook_` prefix, set by `name_hook_points`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        recorder = _active_recorder.get()
        if recorder is not None:
            recorder[self.name] = x.detach().cpu()
        return x

    # Skip nn.Module's hook dispatch: this runs dozens of times per forward pass.
    __call__ = forward


def name_hook_points(root: nn.Module) -> None:
    """Give every HookPoint under `root` its module path, e.g. `encoder.layers.0.self_attn.weights`."""
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            parent, _, leaf = path.rpartition(".")
            if not leaf.startswith("hook_") or leaf[len("hook_"):] not in LEAVES:
                raise ValueError(f"HookPoint {path!r} must be called hook_<leaf> with a leaf from LEAVES.")
            module.name = f"{parent}.{leaf[len('hook_'):]}" if parent else leaf[len("hook_"):]


@contextmanager
def recording(into: dict[str, torch.Tensor] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record every HookPoint reached in this thread into a dict (a fresh one unless given)."""
    recorder = {} if into is None else into
    token = _active_recorder.set(recorder)
    try:
        yield recorder
    finally:
        _active_recorder.reset(token)


def name(*parts: str | int) -> str:
    """Build a trace name: name("decoder", 1, "cross_attn", "weights") -> "decoder.layers.1.cross_attn.weights"."""
    return ".".join(f"layers.{p}" if isinstance(p, int) else p for p in parts)


@dataclass(frozen=True)
class AttentionKind:
    """One of the three uses of attention: where it sits, which tokens it reads, what to call it."""

    stack: str  # "encoder" or "decoder"
    sublayer: str  # "self_attn" or "cross_attn"
    query_side: str  # "src" or "tgt": whose tokens the rows (queries) are
    key_side: str  # whose tokens the columns (keys) are
    norm: str  # the LayerNorm applied just before this sublayer in pre-LN
    title: str


ATTENTION_KINDS: dict[str, AttentionKind] = {
    "encoder_self": AttentionKind("encoder", "self_attn", "src", "src", "norm1", "Encoder self-attention"),
    "decoder_self": AttentionKind("decoder", "self_attn", "tgt", "tgt", "norm1", "Decoder masked self-attention"),
    "cross": AttentionKind("decoder", "cross_attn", "tgt", "src", "norm2", "Cross-attention (decoder → encoder)"),
}


def attention_name(kind: str, layer: int, leaf: str) -> str:
    """attention_name("cross", 1, "weights") -> "decoder.layers.1.cross_attn.weights"."""
    attention = ATTENTION_KINDS[kind]
    return name(attention.stack, layer, attention.sublayer, leaf)


def target_axes(trace_name: str) -> tuple[int, ...]:
    """The axes of a recorded tensor that run over target (decoder input) positions."""
    if trace_name == "tgt_embed.position":
        return (0,)  # (T, D)
    if trace_name == "logits" or trace_name.startswith("tgt_embed."):
        return (1,)  # (B, T, ...)
    if not trace_name.startswith("decoder."):
        return ()
    leaf = trace_name.rsplit(".", 1)[1]
    if ".self_attn." in trace_name:  # q, k, v (B, H, T, Dh); scores, weights (B, H, T, T); mask (B, 1, T, T)
        return {"q": (2,), "k": (2,), "v": (2,), "out": (1,)}.get(leaf, (2, 3))
    if ".cross_attn." in trace_name:  # k, v (B, H, S, Dh) are the source's; the rest has T on axis 2
        return {"k": (), "v": (), "out": (1,)}.get(leaf, (2,))
    return (1,)  # ffn.hidden, resid_* and decoder.out (B, T, ...)


def token_labels(tokens: Sequence[str] | None, length: int) -> list[str]:
    """Display strings for positions 0..length-1; without tokens, the positions themselves."""
    if tokens is None:
        return [str(i) for i in range(length)]
    return [str(t) for t in tokens[:length]] + [str(i) for i in range(len(tokens), length)]


def check_kind(kind: str) -> None:
    """Raise ValueError naming the attention kinds unless `kind` is one of them."""
    if not isinstance(kind, str) or kind not in ATTENTION_KINDS:
        raise ValueError(f"Unknown attention kind {kind!r}; choose one of {', '.join(ATTENTION_KINDS)}.")


def check_index(value: int, count: int, what: str) -> int:
    """`value` as a plain int if it is one of 0..count-1; else ValueError naming that range.

    Layers, heads and positions count from 0 here (the app shows layers and heads from 1).
    A negative index is refused: numpy would quietly read it from the end.
    """
    if count <= 0:
        raise ValueError(f"There is no {what} to choose from: this trace holds none.")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < count:
        raise ValueError(f"{what} must be a whole number from 0 to {count - 1} (counting from 0), got {value!r}.")
    return int(value)


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

    def __getitem__(self, key: str) -> torch.Tensor:
        try:
            return self.tensors[key]
        except KeyError:
            raise KeyError(f"{key!r} was not recorded; recorded names start with "
                           f"{sorted(self.tensors)[:3]}...") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def n_layers(self, kind: str) -> int:
        """How many layers of attention `kind` the trace holds: from the config, else from the recorded names."""
        check_kind(kind)
        if self.config is not None:
            encoder = ATTENTION_KINDS[kind].stack == "encoder"
            return self.config.n_encoder_layers if encoder else self.config.n_decoder_layers
        count = 0
        while attention_name(kind, count, "weights") in self:
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
        return replace(
            self,
            src_tokens=None if src_tokens is None else tuple(src_tokens),
            tgt_tokens=None if tgt_tokens is None else tuple(tgt_tokens),
        )

    # Exports (transformer_viz/export.py): imported when called, so the package does not load pandas.

    def to_npz(self, path) -> None:
        """Save the tensors, tokens, config and intervention to one .npz file (no pickles)."""
        from .export import save_npz
        save_npz(self, path)

    @classmethod
    def from_npz(cls, path) -> Trace:
        """A trace saved by `to_npz`; ValueError for a file that is not one."""
        from .export import load_npz
        return load_npz(path)

    def to_dataframe(self):
        """Every attention weight of batch item 0 as a tidy pandas table, one row per (layer, head, query, key)."""
        from .export import attention_table
        return attention_table(self)

    def to_bertviz(self) -> dict:
        """The keyword arguments of BertViz's `head_view` / `model_view` for an encoder-decoder."""
        from .export import bertviz_arguments
        return bertviz_arguments(self)


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
