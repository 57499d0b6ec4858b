"""Cause and effect, measured from a trace: attention rollout, head scores, the logit lens, residual norms.

Every function reads batch item 0 of a Trace and returns numpy arrays; none draws (the
figures are in `figures/layers.py` and `figures/rollout.py`). Two of them are
approximations and say so: attention rollout (Abnar & Zuidema 2020, "Quantifying
Attention Flow in Transformers") follows the attention weights only, and the logit lens
(nostalgebraist 2020) reads a middle layer with the last layer's readout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from transformer_viz.analysis.flow import residual_mix
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name, check_index, check_kind, name
from transformer_viz.trace.record import Trace, check_trace, recorded_attention, recorded_mask

HEAD_SCORES = ("diagonal", "previous", "first", "entropy")  # the keys of `head_scores`
SUBLAYERS = {"encoder": ("self_attn", "ffn"), "decoder": ("self_attn", "cross_attn", "ffn")}
# The residual stream after each sublayer, in the order of SUBLAYERS.
STREAMS = {"encoder": ("resid_mid", "resid_post"), "decoder": ("resid_mid", "resid_cross", "resid_post")}


def layer_weights(trace: Trace, kind: str, layer: int) -> np.ndarray:
    """Batch item 0's attention weights of `kind` in `layer`: (heads, q_len, k_len) float64."""
    return recorded_attention(trace, kind, layer, "weights")[0].double().numpy()


def entropy_bits(weights: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean attention entropy in bits over the queries that have an allowed key.

    weights (..., q_len, k_len), mask (q_len, k_len) True = may attend -> (...).
    """
    p = np.clip(weights, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_query = -np.where(p > 0, p * np.log2(p), 0.0).sum(-1)  # (..., q_len)
    live = mask.any(-1)  # (q_len,)
    return per_query[..., live].mean(-1) if live.any() else np.zeros(per_query.shape[:-1])


# Attention rollout -------------------------------------------------------------------------------------------------

def attention_rollout(trace: Trace, kind: str, layer: int | None = None) -> np.ndarray:
    """How much each query position draws on each input position through layers 0..`layer` (default: all).

    An approximation (Abnar & Zuidema 2020): each layer is reduced to Â = 0.5·mean_heads(A) + 0.5·I
    (the identity stands for the residual connection), rows renormalised, and the layers are
    chained as Â_layer ⋯ Â_0. It ignores the values, the output projection, the FFN and the
    LayerNorms: a picture of where information could flow, not a measurement of what it did.
    Only self-attention chains (square maps); cross-attention is refused.
    Returns (q_len, q_len), rows summing to 1; with the look-ahead mask it stays lower-triangular.
    """
    check_trace(trace)
    check_kind(kind)
    if ATTENTION_KINDS[kind].sublayer != "self_attn":
        raise ValueError("Attention rollout multiplies square self-attention maps, one layer after another; "
                         "cross-attention maps target positions to source positions and cannot be chained. "
                         "Choose encoder_self or decoder_self.")
    layers = trace.n_layers(kind)
    last = check_index(layers - 1 if layer is None else layer, layers, f"{ATTENTION_KINDS[kind].title} layer")
    rollout = None
    for index in range(last + 1):
        step = residual_mix(layer_weights(trace, kind, index))  # (q_len, q_len)
        rollout = step if rollout is None else step @ rollout
    return rollout


# Head scores -------------------------------------------------------------------------------------------------------

def _mean_over(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """values (heads, q_len) averaged over the queries where rows (q_len,) is True; NaN where there are none."""
    return values[:, rows].mean(-1) if rows.any() else np.full(len(values), np.nan)


def head_scores(trace: Trace, kind: str) -> dict[str, np.ndarray]:
    """What each head does, as four (layers, heads) arrays; each is a mean over the queries with an allowed key.

    "diagonal": the weight on the key with the query's own index (for cross-attention simply the same
    index where the source has one: target row j, which writes target token j, reading source token j);
    "previous": the weight on key i − 1 (queries i ≥ 1); "first": the weight on key 0 (often a "sink");
    "entropy": the row entropy in bits over the allowed keys. A score no query can have is NaN.
    """
    check_trace(trace)
    check_kind(kind)
    scores = {score: [] for score in HEAD_SCORES}
    for layer in range(trace.n_layers(kind)):
        weights = layer_weights(trace, kind, layer)  # (heads, q_len, k_len)
        mask = recorded_mask(trace, kind, layer).numpy()  # (q_len, k_len)
        q_len, k_len = mask.shape
        live, query = mask.any(-1), np.arange(q_len)  # (q_len,) each
        own, before = query < k_len, (query >= 1) & (query - 1 < k_len)
        scores["diagonal"].append(_mean_over(live & own, _gather(weights, query, own)))
        scores["previous"].append(_mean_over(live & before, _gather(weights, query - 1, before)))
        scores["first"].append(_mean_over(live, weights[:, :, 0]))
        scores["entropy"].append(entropy_bits(weights, mask))
    if not scores["entropy"]:
        raise ValueError(f"This trace holds no {ATTENTION_KINDS[kind].title} layer.")
    return {score: np.stack(rows) for score, rows in scores.items()}


def _gather(weights: np.ndarray, keys: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """weights (heads, q_len, k_len) -> (heads, q_len): row i's weight on key keys[i] where valid, else 0."""
    picked = np.zeros(weights.shape[:2])
    rows = np.flatnonzero(valid)
    picked[:, rows] = weights[:, rows, keys[rows]]
    return picked


def alignment_scores(trace: Trace, pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    """Per cross-attention (layer, head): the share of target tokens whose largest weight is on a gold source.

    `pairs` are gold (source i, target j) pairs as the tasks give them (`task.gold(pieces)[1]`,
    `task.alignment(src_tokens, tgt_tokens)`). As in `training.evaluate`, pair (i, j) is the cell
    [row j, column i]: decoder row j reads <bos> + the first j target tokens and writes target token j.
    Targets j past the last row are left out. Returns (layers, heads); NaN when no pair is left.
    """
    sources: dict[int, set[int]] = {}
    for pair in pairs:
        if (not isinstance(pair, tuple | list) or len(pair) != 2
                or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 0 for v in pair)):
            raise ValueError(f"Each gold pair must be (source position, target position), two whole numbers "
                             f"from 0, got {pair!r}.")
        sources.setdefault(int(pair[1]), set()).add(int(pair[0]))
    check_trace(trace)
    layers = trace.n_layers("cross")
    result = []
    for layer in range(layers):
        looks_at = layer_weights(trace, "cross", layer).argmax(-1)  # (heads, tgt_len): first largest, as torch
        rows = [j for j in sorted(sources) if j < looks_at.shape[1]]
        hits = [np.isin(looks_at[:, j], sorted(sources[j])) for j in rows]  # (heads,) each
        result.append(np.mean(hits, axis=0) if rows else np.full(len(looks_at), np.nan))
    if not result:
        raise ValueError("This trace holds no cross-attention layer.")
    return np.stack(result)


# The logit lens ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogitLens:
    """What the decoder would predict if it stopped early: row 0 reads the embeddings, row l + 1 decoder layer l.

    token_ids, probabilities (layers + 1, tgt_len); top_tokens their display strings (None without a
    vocabulary); input_tokens the decoder input (`trace.tgt_tokens`): position j reads input token j
    and predicts the token after it.
    """

    token_ids: np.ndarray
    probabilities: np.ndarray
    top_tokens: tuple[tuple[str, ...], ...] | None = None
    input_tokens: tuple[str, ...] | None = None


def logit_lens(model, trace: Trace, vocab=None) -> LogitLens:
    """Send each decoder layer's residual stream through the decoder's final norm and `model.output_proj`.

    An approximation: the readout was trained on the last layer only, so an early layer's "prediction"
    says what the readout makes of it, not what that layer meant. Pre-LN applies the stack's final
    LayerNorm (as the model does before its readout); post-LN streams leave every layer normalised and
    the decoder has no final norm, so nothing is added (the embedding row then reads the raw embedding
    sum). The last row is the model's own prediction: the argmax of `trace["logits"]`.
    `vocab` (a Vocab, optional) turns the ids into `top_tokens`.
    """
    from transformer_viz.model.decoder_only import check_toy_model

    check_trace(trace)
    check_toy_model(model, "the Transformer that recorded the trace")
    if trace.config is not None and trace.config != model.config:
        raise ValueError("This trace was recorded by a model of another shape: pass the model that recorded it.")
    names = ["tgt_embed.out", *(name("decoder", layer, "resid_post") for layer in range(model.config.n_decoder_layers))]
    parameter = next(model.parameters())
    with torch.inference_mode():
        streams = torch.stack([_stream(trace, n) for n in names]).to(parameter)  # (layers + 1, tgt_len, d_model)
        probabilities = model.output_proj(model.decoder.norm(streams)).softmax(-1)  # (layers + 1, tgt_len, vocab)
        top, ids = probabilities.max(-1)  # (layers + 1, tgt_len) each
    token_ids = ids.cpu().numpy()
    top_tokens = None if vocab is None else tuple(tuple(vocab.decode(row)) for row in token_ids)
    return LogitLens(token_ids, top.double().cpu().numpy(), top_tokens, trace.tgt_tokens)


# Residual norms ----------------------------------------------------------------------------------------------------

def _stream(trace: Trace, recorded: str) -> torch.Tensor:
    """Batch item 0 of a recorded residual stream: (seq_len, d_model) float64; ValueError if not recorded."""
    if recorded not in trace:
        raise ValueError(f"This trace did not record {recorded}: record one with model.run_with_trace.")
    return trace[recorded][0].double()  # (seq_len, d_model)


def sublayers_of(trace: Trace, stack: str) -> list[tuple[str, str]]:
    """(sublayer, the stream after it) of each sublayer of a `stack` layer, in order: a decoder-only model's
    decoder has no cross-attention, an attention-only model no feed-forward network (its resid_post is its
    resid_mid)."""
    if getattr(trace.config, "attention_only", False):  # its self-attention's output is the layer's
        return [("self_attn", "resid_post")]
    return [(sublayer, stream) for sublayer, stream in zip(SUBLAYERS[stack], STREAMS[stack], strict=True)
            if sublayer in trace.form.sublayers[stack]]


def residual_norms(trace: Trace, stack: str) -> dict[str, np.ndarray]:
    """The L2 norm of each token's residual stream, per layer of `stack`, and of what each sublayer changed.

    Keys, each (layers, seq_len): "input" (the stream entering the layer: the embeddings for layer 0),
    the streams after each sublayer ("resid_mid", decoder "resid_cross", "resid_post") and the change
    each sublayer made ("self_attn", decoder "cross_attn", "ffn"): stream after − stream before.
    Pre-LN (x + sublayer(LayerNorm(x))): the change is exactly the sublayer's output, and input plus the
    changes is the layer's output. Post-LN (LayerNorm(x + sublayer(x))): the change is the sublayer's
    output and the LayerNorm's re-centring and rescaling together, not the sublayer's output alone.
    """
    check_trace(trace)
    layers = trace.stack_layers(stack)
    if layers == 0:
        raise ValueError(f"This trace holds no {stack} layer.")
    embedding = "src_embed.out" if stack == "encoder" else "tgt_embed.out"
    norms: dict[str, list[np.ndarray]] = {}
    for layer in range(layers):
        before = _stream(trace, embedding if layer == 0 else name(stack, layer - 1, "resid_post"))
        norms.setdefault("input", []).append(before.norm(dim=-1).numpy())
        for sublayer, stream in sublayers_of(trace, stack):
            after = _stream(trace, name(stack, layer, stream))
            norms.setdefault(stream, []).append(after.norm(dim=-1).numpy())
            norms.setdefault(sublayer, []).append((after - before).norm(dim=-1).numpy())
            before = after
    return {key: np.stack(rows) for key, rows in norms.items()}


def mean_entropy(trace: Trace, kind: str) -> float:
    """The mean entropy (bits) of the attention rows of `kind`, over every layer, head and query: low when
    each query puts its weight on one key (saturated), log2(keys) when it spreads it evenly."""
    rows = torch.cat([trace[attention_name(kind, layer, "weights")][0].flatten(0, 1).double()
                      for layer in range(trace.n_layers(kind))])  # (layers·heads·q_len, k_len)
    entropy = -(rows * torch.log2(rows.clamp_min(1e-300))).sum(-1)  # blocked keys have weight 0: no term
    return float(entropy[rows.sum(-1) > 0].mean())
