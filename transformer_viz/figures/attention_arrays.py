"""One layer of one attention kind as numpy arrays (weights, scores, masked scores, mask), checked, and the value
a figure colours."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from transformer_viz.figures.colours import DIVERGING, SEQUENTIAL
from transformer_viz.figures.numbers import symmetric_limit
from transformer_viz.trace.names import attention_name, check_index, check_kind
from transformer_viz.trace.record import Trace, recorded_attention, recorded_mask


def as_numpy(tensor) -> np.ndarray:
    """A trace entry (torch tensor) or array-like as a numpy array."""
    return tensor.numpy() if hasattr(tensor, "numpy") else np.asarray(tensor)


class AttentionArrays(NamedTuple):
    """One layer of one attention kind for batch item 0, as numpy (float64, mask bool).

    weights, scores, masked_scores (heads, q_len, k_len); mask (q_len, k_len), True = may attend.
    """

    weights: np.ndarray
    scores: np.ndarray
    masked_scores: np.ndarray
    mask: np.ndarray

    def head(self, head: int) -> AttentionArrays:
        """The arrays of one head: weights, scores, masked_scores (q_len, k_len)."""
        head = check_index(head, self.weights.shape[0], "head")
        return AttentionArrays(self.weights[head], self.scores[head], self.masked_scores[head], self.mask)


def attention_arrays(trace: Trace, kind: str, layer: int) -> AttentionArrays:
    """The recorded weights, scores, masked scores and mask of one layer, batch item 0.

    Every builder reads attention through here, so an unknown kind or a layer the trace
    does not hold is a ValueError naming the choices. A trace without a recorded mask
    allows every key; one without scores or masked scores (built by hand) gets NaN for them.
    """
    weights = as_numpy(recorded_attention(trace, kind, layer, "weights"))[0].astype(np.float64)  # (heads, q_len, k_len)
    layer = int(layer)  # a whole number in range: recorded_attention checked it

    def plane(leaf: str) -> np.ndarray:
        recorded = trace.get(attention_name(kind, layer, leaf))
        return np.full_like(weights, np.nan) if recorded is None else as_numpy(recorded)[0].astype(np.float64)

    mask = as_numpy(recorded_mask(trace, kind, layer))  # (q_len, k_len)
    return AttentionArrays(weights, plane("scores"), plane("masked_scores"), mask)


def all_layers(trace: Trace, kind: str) -> list[AttentionArrays]:
    """`attention_arrays` of every layer of `kind`, first to last; ValueError if the trace holds none."""
    first = attention_arrays(trace, kind, 0)
    return [first, *(attention_arrays(trace, kind, layer) for layer in range(1, trace.n_layers(kind)))]


def check_cell(cell: tuple[int, int], rows: int, cols: int, names: tuple[str, str],
               argument: str = "highlight") -> tuple[int, int]:
    """A pair such as (query, key) or (layer, head) as ints, each checked by `check_index`."""
    if not isinstance(cell, tuple | list) or len(cell) != 2:
        raise ValueError(f"{argument} must be a pair ({names[0]}, {names[1]}), got {cell!r}.")
    return check_index(cell[0], rows, names[0]), check_index(cell[1], cols, names[1])


def mask_value(trace) -> float:
    """The fill for blocked scores in the model that made this trace (-1e9 when unknown)."""
    return float(getattr(trace.config, "mask_value", -1e9))


# What an attention figure can colour: the weights, the scaled scores QKᵀ/√d_k, or the scores after masking.
# Their names are the words `cell_value.<value>` (one value) and `values.<value>` (many).
ATTENTION_VALUES = ("weights", "scores", "masked_scores")


def check_choice(kind: str, value: str = "weights") -> None:
    """Raise ValueError naming the choices for an unknown attention kind or value."""
    check_kind(kind)
    if not isinstance(value, str) or value not in ATTENTION_VALUES:
        raise ValueError(f"value must be one of {', '.join(ATTENTION_VALUES)}, got {value!r}.")


def value_plane(value: str, arrays: AttentionArrays) -> tuple[np.ndarray, float, float, str]:
    """(z, zmin, zmax, colour scale) for drawing `value` of `arrays` (any leading dimensions).

    Weights use a fixed 0-1 range; scores and masked scores a range symmetric about 0
    taken from the allowed cells only, so a fill such as -1e9 never stretches the colours.
    """
    if value == "weights":
        return arrays.weights, 0.0, 1.0, SEQUENTIAL
    if value in ("scores", "masked_scores"):
        scores = arrays.scores
        allowed = np.broadcast_to(arrays.mask, scores.shape) if value == "masked_scores" else True
        limit = symmetric_limit(scores[allowed & np.isfinite(scores)])
        return getattr(arrays, value), -limit, limit, DIVERGING
    raise ValueError(f"value must be one of {', '.join(ATTENTION_VALUES)}, got {value!r}.")
