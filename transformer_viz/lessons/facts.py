"""The facts a lesson reveals, computed from a model's real numbers (never written by hand).

Each function answers one "predict, then reveal" question of the app's lesson; the lesson shows
what it returns, and the tests check it against the model's output.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from transformer_viz.data.tasks import Task, encode_source
from transformer_viz.model import Transformer
from transformer_viz.trace.names import attention_name
from transformer_viz.trace.record import Trace

HEAD_PATTERNS = ("same", "previous", "first")


def head_patterns(trace: Trace, kind: str, layer: int) -> dict[str, np.ndarray]:
    """Per head, the mean weight a query puts on its own position, the one before it, and position 0.

    "previous" and "first" average over the queries that have such a key (query 0 has no previous key
    and is its own first). -> {pattern: (heads,)}
    """
    weights = trace[attention_name(kind, layer, "weights")][0].double()  # (heads, q_len, k_len)
    q_len = weights.shape[1]
    return {"same": torch.diagonal(weights, dim1=1, dim2=2).mean(-1).numpy(),
            "previous": torch.diagonal(weights, offset=-1, dim1=1, dim2=2).mean(-1).numpy(),
            "first": weights[:, 1:q_len, 0].mean(-1).numpy()}


def strongest_key(trace: Trace, kind: str, layer: int, head: int, query: int) -> int:
    """The key position query `query` gives the largest weight to."""
    return int(trace[attention_name(kind, layer, "weights")][0, head, query].argmax())


def mirror_mass(trace: Trace, layer: int, head: int) -> float:
    """How much of the cross-attention follows the anti-diagonal of reversing: the mean weight that decoder
    row i puts on source position n-1-i, over the n source tokens before <eos>. 1 = a perfect mirror."""
    weights = trace[attention_name("cross", layer, "weights")][0, head].double()  # (tgt_len, src_len)
    n = min(trace.src_tokens.index("<eos>") if "<eos>" in trace.src_tokens else weights.shape[1], weights.shape[0])
    return float(torch.stack([weights[i, n - 1 - i] for i in range(n)]).mean())


def equal_token_rows(trace: Trace, first: int, second: int, side: str = "src") -> tuple[float, float]:
    """Two positions holding the same token: the largest difference of their token embeddings (0: the same
    vector) and of their inputs to layer 1 (embedding + position)."""
    token, total = trace[f"{side}_embed.token"][0], trace[f"{side}_embed.out"][0]  # (seq_len, d_model)
    return (float((token[first] - token[second]).abs().max()), float((total[first] - total[second]).abs().max()))


@torch.no_grad()
def shuffle_difference(model: Transformer, task: Task, text: str, order: list[int]) -> float:
    """Read the tokens of `text` in `order`: the largest difference between the encoder outputs of the
    shuffled input and the original outputs put in the same order. 0 (up to rounding) without positions:
    self-attention alone cannot tell where a token stands."""
    src_ids = encode_source(task, text, model.config.max_len).ids  # (1, n + 1), ending with <eos>
    n = src_ids.shape[1] - 1
    if sorted(order) != list(range(n)):
        raise ValueError(f"order must reorder the {n} tokens of {text!r}, got {order}")
    keep = [*order, n]  # <eos> stays last
    original, _ = model.encode(src_ids)  # (1, n + 1, d_model)
    moved, _ = model.encode(src_ids[:, keep])
    return float((original[0, keep] - moved[0]).abs().max())


def softmax_entropy(d_ks, n_keys: int, scaled: bool, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """Mean entropy (bits) of softmax(q·k / √d_k) rows over `n_keys` keys, for q and k with unit-variance
    entries (as after a LayerNorm and an initialised projection). -> (len(d_ks),)

    Without the scaling the scores' spread grows like √d_k and the softmax saturates towards one key.
    """
    generator = torch.Generator().manual_seed(seed)
    entropies = []
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(samples, n_keys, d_k, generator=generator, dtype=torch.float64)
        scores = (q @ k.transpose(1, 2)).squeeze(1)  # (samples, n_keys)
        if scaled:
            scores = scores / math.sqrt(d_k)
        p = scores.softmax(-1)
        entropies.append(float(-(p * torch.log2(p.clamp_min(1e-300))).sum(-1).mean()))
    return np.array(entropies)


def blocked_by_padding_only(trace: Trace) -> int:
    """Cells of the decoder's combined mask that are blocked although look-ahead alone would allow them:
    the queries' looks at target <pad> keys."""
    combined = trace[attention_name("decoder_self", 0, "mask")][0, 0].bool()  # (tgt_len, tgt_len)
    look_ahead = torch.tril(torch.ones_like(combined))
    return int((look_ahead & ~combined).sum())


def mean_entropy(trace: Trace, kind: str) -> float:
    """The mean entropy (bits) of the attention rows of `kind`, over every layer, head and query: low when
    each query puts its weight on one key (saturated), log2(keys) when it spreads it evenly."""
    rows = torch.cat([trace[attention_name(kind, layer, "weights")][0].flatten(0, 1).double()
                      for layer in range(trace.n_layers(kind))])  # (layers·heads·q_len, k_len)
    entropy = -(rows * torch.log2(rows.clamp_min(1e-300))).sum(-1)  # blocked keys have weight 0: no term
    return float(entropy[rows.sum(-1) > 0].mean())
