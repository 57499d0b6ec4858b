"""The names of a trace: its leaves, `name()`, the three kinds of attention, and checked choices.

A recorded tensor is named by its module path plus its leaf (`decoder.layers.1.cross_attn.weights`); the
model sets the names once from its module tree, everything above builds them with `name()` / `attention_name()`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from transformer_viz.i18n import text

# The leaf names a recorded tensor may have (see DESIGN.md, "The trace").
LEAVES = ("token", "position", "out", "q", "k", "v", "q_rot", "k_rot", "scores", "mask", "masked_scores", "weights",
          "hidden", "resid_mid", "resid_cross", "resid_post", "logits")


def name(*parts: str | int) -> str:
    """Build a trace name: name("decoder", 1, "cross_attn", "weights") -> "decoder.layers.1.cross_attn.weights"."""
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, (str, int)):
            raise ValueError(f"a trace name is made of words and layer numbers, got {part!r}.")
    return ".".join(f"layers.{p}" if isinstance(p, int) else p for p in parts)


@dataclass(frozen=True)
class AttentionKind:
    """One of the three uses of attention: where it sits, which tokens it reads, what to call it."""

    stack: str  # "encoder" or "decoder"
    sublayer: str  # "self_attn" or "cross_attn"
    query_side: str  # "src" or "tgt": whose tokens the rows (queries) are
    key_side: str  # whose tokens the columns (keys) are
    norm: str  # the LayerNorm applied just before this sublayer in pre-LN
    title: str  # its English name: the catalogs' "kind.<kind>"


ATTENTION_KINDS: dict[str, AttentionKind] = {
    "encoder_self": AttentionKind("encoder", "self_attn", "src", "src", "norm1", text("kind.encoder_self")),
    "decoder_self": AttentionKind("decoder", "self_attn", "tgt", "tgt", "norm1", text("kind.decoder_self")),
    "cross": AttentionKind("decoder", "cross_attn", "tgt", "src", "norm2", text("kind.cross")),
}


STACKS = ("encoder", "decoder")


def check_stack(stack: str) -> None:
    """Raise ValueError naming the stacks unless `stack` is one of them."""
    if not isinstance(stack, str) or stack not in STACKS:
        raise ValueError(f"stack must be one of {', '.join(STACKS)}, got {stack!r}.")


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
    if ".self_attn." in trace_name:  # q, k, v, q_rot, k_rot (B, H, T, Dh); scores, weights (B, H, T, T); mask
        return {"q": (2,), "k": (2,), "v": (2,), "q_rot": (2,), "k_rot": (2,), "out": (1,)}.get(leaf, (2, 3))
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
