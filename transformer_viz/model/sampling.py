"""Sampling the next token: temperature, top-k and top-p (nucleus) instead of always the most probable one.

The paper decodes with beam search; a toy model trained to near-certainty shows 100 % / 0 % under greedy
decoding. Drawing from a reshaped distribution shows the model's real uncertainty. The reshaping follows
Hugging Face's warpers (temperature, then top-k, then top-p on what top-k kept), which tests/test_sampling.py
holds it to; a cut never separates tokens of equal probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from transformer_viz.config import is_real, is_whole

SEED_LIMIT = 2**63  # seeds are whole numbers from 0 to SEED_LIMIT - 1


@dataclass(frozen=True)
class Sampling:
    """How the next token is drawn.

    temperature: divides the logits before the softmax; below 1 sharpens, above 1 flattens, 0 means greedy
    (always the most probable token; the other settings are then unused). top_k: keep only the k most probable
    tokens (0: all). top_p: keep the most probable tokens until their probabilities add up to p (1.0: all).
    seed: the draws come from a torch.Generator seeded with it, never from torch's global RNG.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        t, k, p, seed = self.temperature, self.top_k, self.top_p, self.seed
        if not is_real(t) or not math.isfinite(t) or t < 0:
            raise ValueError(f"The temperature must be a number of 0 or more (0 means greedy: always the most "
                             f"probable token; 1 keeps the model's own probabilities), got {t!r}.")
        if not is_whole(k) or k < 0:
            raise ValueError(f"top_k must be a whole number of 0 or more (how many of the most probable tokens "
                             f"may be drawn; 0 means all of them), got {k!r}.")
        if not is_real(p) or not 0 < p <= 1:
            raise ValueError(f"top_p must be a number above 0 and at most 1 (the share of probability the "
                             f"tokens that may be drawn add up to; 1 means all of them), got {p!r}.")
        if not is_whole(seed) or not 0 <= seed < SEED_LIMIT:
            raise ValueError(f"The sampling seed must be a whole number from 0 to {SEED_LIMIT - 1}, got {seed!r}.")

    @property
    def greedy(self) -> bool:
        """Temperature 0: the most probable token, every time (no draw)."""
        return self.temperature == 0

    def generator(self) -> torch.Generator:
        """A fresh generator seeded with `seed`: the same seed draws the same tokens."""
        return torch.Generator().manual_seed(self.seed)


def sampling_distribution(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution a token is drawn from: logits (..., vocab) -> probabilities (..., vocab).

    softmax(logits / T); then only the top_k most probable tokens (ties with the k-th too); then the smallest
    set of most probable tokens whose probabilities, renormalized after top-k, reach top_p (the most probable
    always, and every token tied with the least probable one kept); renormalized. Temperature 0: all the
    probability on the most probable token (torch.argmax's: the first of tied ones).
    """
    if not isinstance(sampling, Sampling):
        raise ValueError(f"sampling must be a Sampling, got {type(sampling).__name__}.")
    if sampling.greedy:
        return torch.zeros_like(logits).scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)  # (..., vocab)
    # Shifted by the maximum first, so that a tiny temperature gives 0 and -inf, never inf - inf = nan; and the
    # maximum's 0 kept 0 where the temperature is too small for the logits' dtype (0 / 0 = nan).
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # (..., vocab)
    scaled = torch.where(shifted == 0, 0.0, shifted / sampling.temperature)  # (..., vocab)
    if 0 < sampling.top_k < logits.shape[-1]:
        kth = scaled.topk(sampling.top_k, dim=-1).values[..., -1:]  # (..., 1)
        scaled = scaled.masked_fill(scaled < kth, -math.inf)
    if sampling.top_p < 1:
        scaled = scaled.masked_fill(~nucleus(scaled.softmax(dim=-1), sampling.top_p), -math.inf)
    return scaled.softmax(dim=-1)  # (..., vocab)


def nucleus(probabilities: torch.Tensor, top_p: float) -> torch.Tensor:
    """Which tokens top-p keeps: probabilities (..., vocab) -> bool (..., vocab).

    In order of probability, a token is kept while the tokens before it add up to less than top_p; then every
    token as probable as the least probable one kept is kept too (a cut never depends on the order of ties).
    """
    ordered = probabilities.sort(dim=-1, descending=True).values  # (..., vocab)
    before = ordered.cumsum(dim=-1) - ordered  # (..., vocab): the probability of the tokens ranked above
    least_kept = ordered.masked_fill(before >= top_p, math.inf).amin(dim=-1, keepdim=True)  # (..., 1)
    # The most probable token always: a top_p below float32's smallest number (1e-320) is 0 to the tensors
    return probabilities >= torch.minimum(least_kept, ordered[..., :1])


def next_tokens(logits: torch.Tensor, sampling: Sampling | None, generator: torch.Generator | None) -> torch.Tensor:
    """The next token of each row: logits (batch, vocab) -> ids (batch,).

    Greedy (sampling None or temperature 0): the argmax. Otherwise one draw per row from
    sampling_distribution, with `generator`.
    """
    if sampling is None or sampling.greedy:
        return logits.argmax(dim=-1)  # (batch,)
    return torch.multinomial(sampling_distribution(logits, sampling), 1, generator=generator)[:, 0]  # (batch,)
