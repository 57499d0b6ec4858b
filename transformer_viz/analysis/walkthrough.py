"""Inside one attention head: scaled dot-product attention (paper section 3.2.1-3.2.2) step by step.

`head_walkthrough` recomputes every step of one head from the recorded inputs and
the model's own weights, then checks each step against the trace, so a page never
shows a number the model did not compute. `cell_numbers` does the same for one cell
from the trace alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.model.attention import masked_softmax
from transformer_viz.model.decoder_only import check_toy_model
from transformer_viz.model.rotary import rotary_angles, rotate
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name, check_index, check_kind, name, token_labels
from transformer_viz.trace.record import Trace, recorded_attention

# Recomputation and the model's forward pass use different matrix shapes, so float32 results
# differ in the last bits; a wrong weight or input differs by far more.
RTOL, ATOL = 1e-4, 1e-5


class TraceMismatchError(ValueError):
    """A recomputed step disagrees with the recorded trace (other weights, or a different run)."""


@dataclass(frozen=True)
class InputSource:
    """Where a head's X (or M) came from: a recorded tensor, LayerNorm-ed first in pre-LN.

    `recorded` is its trace name; `stack` and `layer` are set when it is a layer's residual stream
    (`decoder.layers.0.resid_post`), None for `src_embed.out`, `tgt_embed.out` and `encoder.out`.
    """

    recorded: str
    norm: str | None = None  # "norm1" or "norm2": the sublayer's own norm in pre-LN
    stack: str | None = None
    layer: int | None = None

    @property
    def leaf(self) -> str:
        return self.recorded.rsplit(".", 1)[1]

    def __str__(self) -> str:
        return f"{self.norm}({self.recorded})" if self.norm else self.recorded


def attention_input(kind: str, layer: int, norm_first: bool) -> InputSource:
    """What enters the query projection of attention `kind` in `layer`: the residual stream before the sublayer
    (the previous layer's output, the embeddings in layer 0, the stream after self-attention for cross-attention),
    through the sublayer's norm in pre-LN."""
    attention = ATTENTION_KINDS[kind]
    norm = attention.norm if norm_first else None
    if kind == "cross":
        return InputSource(name(attention.stack, layer, "resid_mid"), norm, attention.stack, layer)
    if layer == 0:
        return InputSource("src_embed.out" if attention.stack == "encoder" else "tgt_embed.out", norm)
    return InputSource(name(attention.stack, layer - 1, "resid_post"), norm, attention.stack, layer - 1)


@dataclass(frozen=True, eq=False)
class HeadWalkthrough:
    """Every intermediate of one attention head for batch item 0, as read-only numpy arrays.

    Row vectors throughout: Q = X·W_Q + b_Q. `mask` is True where the query may attend.
    """

    kind: str
    layer: int
    head: int
    n_heads: int
    norm_first: bool
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    x_query_source: InputSource  # how X was obtained, e.g. norm1(src_embed.out)
    x_key_source: InputSource
    x_query: np.ndarray  # (q_len, d_model)
    x_key: np.ndarray  # (k_len, d_model)
    w_q: np.ndarray  # (d_model, d_head)
    w_k: np.ndarray  # (d_model, d_head)
    w_v: np.ndarray  # (d_model, d_head)
    b_q: np.ndarray  # (d_head,)
    b_k: np.ndarray  # (d_head,)
    b_v: np.ndarray  # (d_head,)
    q: np.ndarray  # (q_len, d_head)
    k: np.ndarray  # (k_len, d_head)
    v: np.ndarray  # (k_len, d_head)
    qk: np.ndarray  # (q_len, k_len)
    scale: float  # sqrt(d_head) (1 in T5, which folds it into W_Q)
    position_bias: np.ndarray | None  # (q_len, k_len) added to the scores (T5's self-attention), else None
    scores: np.ndarray  # (q_len, k_len)
    mask: np.ndarray  # (q_len, k_len) bool
    mask_value: float
    masked_scores: np.ndarray  # (q_len, k_len)
    weights: np.ndarray  # (q_len, k_len)
    head_output: np.ndarray  # (q_len, d_head)
    all_heads: np.ndarray  # (q_len, d_model)
    w_o: np.ndarray  # (d_model, d_model)
    b_o: np.ndarray  # (d_model,)
    output: np.ndarray  # (q_len, d_model)
    # Rotary positions (self-attention of a model with positional="rotary"), else None: the angle of each position
    # and pair, and q and k turned by it; the scores are then q_rot·k_rotᵀ.
    angles: np.ndarray | None = None  # (max(q_len, k_len), d_head / 2), radians
    q_rot: np.ndarray | None = None  # (q_len, d_head)
    k_rot: np.ndarray | None = None  # (k_len, d_head)
    rotary_halves: bool = False  # pairs (i, i + d_head/2) as Hugging Face's rotate_half, else neighbours (2i, 2i+1)

    @property
    def d_model(self) -> int:
        return self.x_query.shape[1]

    @property
    def d_head(self) -> int:
        return self.q.shape[1]

    @property
    def unscaled(self) -> bool:
        """The scores are q·k, not divided by √d_head (T5 folds it into W_Q's initial values)."""
        return unscaled(self.scale, self.d_head)


def head_walkthrough(model, trace, kind: str, layer: int, head: int) -> HeadWalkthrough:
    """Recompute head `head` of attention `kind` in layer `layer` (zero-based) and check it against `trace`.

    Raises ValueError for an unknown kind or an out-of-range layer/head, and
    TraceMismatchError if any recomputed step differs from the recorded one.
    """
    layer, head = _check_choice(model, trace, kind, layer, head)
    config = model.config
    attention = ATTENTION_KINDS[kind]
    block = getattr(model, attention.stack).layers[layer]
    attn = getattr(block, attention.sublayer)
    source = attention_input(kind, layer, config.norm_first)
    with torch.no_grad():
        x_query = trace[source.recorded][0].float()  # (q_len, d_model)
        if source.norm:
            norm = getattr(block, source.norm)
            x_query = norm(x_query.to(norm.weight.device)).cpu()  # (q_len, d_model)
    projections = AttentionProjections(attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj, attn.n_heads,
                                       attn.d_head, score_scale(trace, config), float(attn.mask_value),
                                       config.empty_rows_even)
    turned = attention_name(kind, layer, "q_rot") in trace  # RoPE (not under Intervention(positions=False))
    angles = rotary_angles(x_query.shape[0], attn.d_head) if turned else None  # (q_len, d_head / 2)
    return walk_head(projections, trace, kind, layer, head, (x_query, source), config.norm_first, angles=angles)


@dataclass(frozen=True)
class AttentionProjections:
    """What one multi-head attention computes with: its four nn.Linear (a missing bias counts as zeros), its heads,
    the divisor of its scores (√d_head; 1 where the scale is folded into the weights, as in T5) and its mask value."""

    q: torch.nn.Linear
    k: torch.nn.Linear
    v: torch.nn.Linear
    out: torch.nn.Linear
    n_heads: int
    d_head: int
    scale: float
    mask_value: float
    empty_rows_even: bool = False  # a query with no allowed key: weight 0 (this project's models) or 1/k_len each


def walk_head(projections: AttentionProjections, trace, kind: str, layer: int, head: int,
              query_input: tuple[torch.Tensor, InputSource], norm_first: bool,
              position_bias: torch.Tensor | None = None, angles: torch.Tensor | None = None,
              halves: bool = False) -> HeadWalkthrough:
    """head_walkthrough from the attention's projections and what entered its query projection (q_len, d_model),
    checked step by step against `trace` (also for Hugging Face models, transformer_viz.weights.hf). `position_bias`
    (heads, q_len, k_len) is added to the scaled scores where the model does (T5's relative bias); `angles`
    (length, d_head / 2) turn q and k first (rotary positions, model/rotary.py), pairing dimension i with
    i + d_head/2 if `halves` (Hugging Face's Llama layout)."""
    attention = ATTENTION_KINDS[kind]
    x_query, x_query_source = query_input
    with torch.no_grad():
        if kind == "cross":
            x_key, x_key_source = trace["encoder.out"][0].float(), InputSource("encoder.out")  # (k_len, d_model)
        else:
            x_key, x_key_source = x_query, x_query_source  # (k_len, d_model)
        mask = trace[attention_name(kind, layer, "mask")][0, 0]  # (q_len, k_len)
        heads = [_head_steps(projections, h, x_query, x_key, mask, None if position_bias is None else position_bias[h],
                             angles, halves) for h in range(projections.n_heads)]
        all_heads = torch.cat([steps["head_output"] for steps in heads], dim=-1)  # (q_len, H·d_head)
        w_o, b_o = _cpu(projections.out.weight).T, _bias(projections.out, slice(None))  # (H·d_head, d_model)
        output = all_heads @ w_o + b_o  # (q_len, d_model)

    where = f"{attention.stack} layer {layer + 1} {attention.sublayer}"
    leaves = ("q", "k", "v", *(("q_rot", "k_rot") if angles is not None else ()), "scores", "masked_scores", "weights")
    for h, steps in enumerate(heads):
        for leaf in leaves:
            _check(steps[leaf], trace[attention_name(kind, layer, leaf)][0, h], f"{leaf} of {where}, head {h + 1}")
    _check(output, trace[attention_name(kind, layer, "out")][0], f"out of {where} (all heads concatenated, times W_O)")

    query_tokens, key_tokens = trace.attention_tokens(kind)
    chosen = heads[head]
    return HeadWalkthrough(
        kind=kind, layer=layer, head=head, n_heads=projections.n_heads, norm_first=norm_first,
        query_tokens=tuple(token_labels(query_tokens, x_query.shape[0])),
        key_tokens=tuple(token_labels(key_tokens, x_key.shape[0])),
        x_query_source=x_query_source, x_key_source=x_key_source,
        x_query=_np(x_query), x_key=_np(x_key),
        **{key: _np(value) for key, value in chosen.items() if key not in ("scale", "position_bias", "q_rot", "k_rot")},
        scale=chosen["scale"], position_bias=None if position_bias is None else _np(chosen["position_bias"]),
        angles=None if angles is None else _np(angles), q_rot=None if angles is None else _np(chosen["q_rot"]),
        k_rot=None if angles is None else _np(chosen["k_rot"]), rotary_halves=angles is not None and halves,
        mask=_np(mask), mask_value=projections.mask_value,
        all_heads=_np(all_heads), w_o=_np(w_o), b_o=_np(b_o), output=_np(output),
    )


@dataclass(frozen=True)
class CellNumbers:
    """The numbers behind one attention cell of batch item 0 (positions count from 0).

    `score` = `dot` / `scale` (√d_head; 1 in T5 or under Intervention(scale=False)) + `position_bias` (T5's
    self-attention: the recorded score less dot / scale; else None), equal to `recorded_score`.
    `row_masked_scores` is the recorded masked row (blocked keys hold `mask_value`) and `row_softmax` its softmax
    (blocked keys exactly 0, as in the model), whose entry at `key` equals the recorded `weight`.
    """

    kind: str
    layer: int
    head: int
    query: int
    key: int
    query_token: str
    key_token: str
    q: tuple[float, ...]  # (d_head,) this head's query vector
    k: tuple[float, ...]  # (d_head,)
    dot: float
    scale: float
    position_bias: float | None
    recorded_score: float
    allowed: bool
    mask_value: float
    masked_score: float
    row_masked_scores: tuple[float, ...]  # (k_len,)
    row_softmax: tuple[float, ...]  # (k_len,)
    weight: float

    @property
    def d_head(self) -> int:
        return len(self.q)

    @property
    def unscaled(self) -> bool:
        """The scores are q·k, not divided by √d_head."""
        return unscaled(self.scale, self.d_head)

    @property
    def score(self) -> float:
        return self.dot / self.scale + (self.position_bias or 0.0)


def cell_numbers(trace, kind: str, layer: int, head: int, query: int, key: int) -> CellNumbers:
    """The numbers behind one attention cell of batch item 0, recomputed from the recorded q and k."""
    if isinstance(trace, Trace) and trace.config is None:
        raise ValueError("cell_numbers needs a trace from model.run_with_trace: it reads mask_value from trace.config.")

    def recorded(leaf: str) -> torch.Tensor:
        return recorded_attention(trace, kind, layer, leaf)[0].double()

    q_all, k_all = recorded("q"), recorded("k")  # (heads, q_len, d_head), (heads, k_len, d_head)
    layer = int(layer)  # a whole number in range: recorded_attention checked it
    if attention_name(kind, layer, "q_rot") in trace.tensors:  # RoPE: the score is the turned q · the turned k
        q_all, k_all = recorded("q_rot"), recorded("k_rot")
    shared = getattr(trace.config, "kv_head_of_query_head", None)  # grouped-query attention (Llama's layout)
    if shared is not None and kind != "cross":  # query head h reads key/value head shared[h]
        k_all = k_all[list(shared)]  # (heads, k_len, d_head)
    head = check_index(head, q_all.shape[0], "head")
    query, key = check_index(query, q_all.shape[1], "query"), check_index(key, k_all.shape[1], "key")
    q, k = q_all[head, query], k_all[head, key]  # (d_head,) each
    dot, scale = float(q @ k), score_scale(trace, trace.config)
    recorded_score = float(recorded("scores")[head, query, key])
    relative = trace.config.positional == "relative" and kind != "cross"  # a learned bias added to every score
    row_allowed = recorded("mask")[0, query].bool()  # (k_len,)
    row_masked = recorded("masked_scores")[head, query]  # (k_len,)
    _, row_softmax = masked_softmax(row_masked, row_allowed, trace.config.mask_value,  # (k_len,)
                                    trace.config.empty_rows_even)
    query_tokens, key_tokens = trace.attention_tokens(kind)
    return CellNumbers(
        kind=kind, layer=layer, head=head, query=query, key=key,
        query_token=token_labels(query_tokens, query + 1)[query], key_token=token_labels(key_tokens, key + 1)[key],
        q=tuple(q.tolist()), k=tuple(k.tolist()), dot=dot, scale=scale,
        position_bias=recorded_score - dot / scale if relative else None, recorded_score=recorded_score,
        allowed=bool(row_allowed[key]), mask_value=float(trace.config.mask_value),
        masked_score=float(row_masked[key]), row_masked_scores=tuple(row_masked.tolist()),
        row_softmax=tuple(row_softmax.tolist()), weight=float(recorded("weights")[head, query, key]),
    )


def unscaled(scale: float, d_head: int) -> bool:
    """Whether a run that divided q·k by `scale` left it undivided by √d_head (T5, or Intervention(scale=False))."""
    return scale != math.sqrt(d_head)


def score_scale(trace: Trace, config) -> float:
    """What the run divided q·k by: the config's score_scale (√d_head), or 1 under Intervention(scale=False)."""
    intervention = trace.intervention
    return 1.0 if intervention is not None and not intervention.scale else float(config.score_scale)


def _check_choice(model, trace, kind: str, layer: int, head: int) -> tuple[int, int]:
    """(layer, head) as ints, or clear errors for a choice the model does not have or a trace from another model."""
    check_toy_model(model)
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a Trace (from model.run_with_trace), got {type(trace).__name__}.")
    check_kind(kind)
    if kind not in trace.attention_kinds():  # a decoder-only model: its masked self-attention alone
        raise ValueError(f"This model has no {ATTENTION_KINDS[kind].title}.")
    stack = ATTENTION_KINDS[kind].stack
    layer = check_index(layer, len(getattr(model, stack).layers), f"{stack} layer")
    head = check_index(head, model.config.n_heads, "head")
    if trace.config is not None and trace.config != model.config:
        raise TraceMismatchError("This trace was recorded by a model with a different configuration; "
                                 "run the shown model again to get its trace.")
    return layer, head


def _bias(linear: torch.nn.Linear, cols: slice) -> torch.Tensor:
    """The bias of `linear` on `cols` (zeros where it has none)."""
    if linear.bias is not None:
        return _cpu(linear.bias[cols])
    return torch.zeros(linear.weight.shape[0])[cols]


def _head_steps(projections: AttentionProjections, head: int, x_query: torch.Tensor, x_key: torch.Tensor,
                mask: torch.Tensor, position_bias: torch.Tensor | None,
                angles: torch.Tensor | None = None, halves: bool = False) -> dict[str, torch.Tensor | float | None]:
    """Scaled dot-product attention of one head, every intermediate kept. mask (q_len, k_len) True = may attend;
    position_bias (q_len, k_len) or None; angles (length, d_head / 2) turn q and k before their product, or None
    (pairs (i, i + d_head/2) if `halves`, else (2i, 2i+1))."""
    cols = slice(head * projections.d_head, (head + 1) * projections.d_head)
    linears = (projections.q, projections.k, projections.v)
    # nn.Linear stores (out, in) and computes x·Wᵀ; transpose so rows are input dimensions.
    w_q, w_k, w_v = (_cpu(p.weight[cols]).T for p in linears)  # (d_model, d_head)
    b_q, b_k, b_v = (_bias(p, cols) for p in linears)  # (d_head,)
    q = x_query @ w_q + b_q  # (q_len, d_head)
    k = x_key @ w_k + b_k  # (k_len, d_head)
    v = x_key @ w_v + b_v  # (k_len, d_head)
    q_rot = k_rot = None
    if angles is not None:  # rotary positions: the product of the turned vectors
        turn = _rotate_halves if halves else rotate
        q_rot, k_rot = turn(q, angles[: q.shape[0]]), turn(k, angles[: k.shape[0]])  # (q_len / k_len, d_head)
        qk = q_rot @ k_rot.T  # (q_len, k_len)
    else:
        qk = q @ k.T  # (q_len, k_len)
    scale = projections.scale
    scores = qk / scale  # (q_len, k_len)
    if position_bias is not None:
        scores = scores + position_bias  # (q_len, k_len)
    masked_scores, weights = masked_softmax(scores, mask, projections.mask_value,  # (q_len, k_len) each
                                            projections.empty_rows_even)
    return dict(w_q=w_q, w_k=w_k, w_v=w_v, b_q=b_q, b_k=b_k, b_v=b_v, q=q, k=k, v=v, q_rot=q_rot, k_rot=k_rot, qk=qk,
                scale=scale,
                position_bias=position_bias, scores=scores, masked_scores=masked_scores, weights=weights,
                head_output=weights @ v)


def _rotate_halves(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """RoPE as Hugging Face's Llama layout pairs dimensions (its rotate_half): i with i + d_head/2, turned by
    angles[:, i]. x (length, d_head), angles (length, d_head / 2) -> (length, d_head)."""
    first, second = x.chunk(2, dim=-1)  # (length, d_head / 2) each
    cos, sin = angles.cos(), angles.sin()  # (length, d_head / 2) each
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)  # (length, d_head)


def _check(recomputed: torch.Tensor, recorded: torch.Tensor, what: str) -> None:
    """Raise TraceMismatchError unless the recomputed step equals the recorded one to float tolerance."""
    recorded = recorded.float()
    if recomputed.shape != recorded.shape:
        raise TraceMismatchError(f"Recomputed {what} has shape {tuple(recomputed.shape)} but the trace "
                                 f"recorded {tuple(recorded.shape)}.")
    if not torch.allclose(recomputed, recorded, rtol=RTOL, atol=ATOL):
        gap = (recomputed - recorded).abs().max().item()
        raise TraceMismatchError(
            f"Recomputed {what} differs from the recorded trace by up to {gap:.3g}: the trace was not "
            f"produced by this model's weights. Run the model again to get a matching trace."
        )


def _cpu(parameter: torch.Tensor) -> torch.Tensor:
    return parameter.detach().float().cpu()


def _np(tensor: torch.Tensor) -> np.ndarray:
    """A read-only numpy copy, so a frozen walkthrough stays frozen."""
    array = tensor.detach().cpu().numpy().copy()
    array.setflags(write=False)
    return array
