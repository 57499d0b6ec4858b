"""Rotary position embeddings (RoPE; Su et al. 2021, "RoFormer"; used by Llama, Qwen, Mistral).

Instead of adding a position vector to the embeddings, self-attention turns each pair of dimensions (2i, 2i+1)
of a query or key at position p by the angle p · θ_i, θ_i = base^(−2i / d_head). A rotation keeps lengths and
q_p · k_r depends only on the angle between them, (p − r) · θ_i per pair: the score sees how far apart two
tokens are, never where they are.
"""

from __future__ import annotations

import torch

ROTARY_BASE = 10_000.0


def rotary_angles(length: int, d_head: int, base: float = ROTARY_BASE) -> torch.Tensor:
    """The angle of each position and pair: (length, d_head / 2), angle[p, i] = p · base^(−2i / d_head)."""
    if d_head % 2:
        raise ValueError(f"Rotary embeddings turn pairs of dimensions, so d_head must be even, got {d_head}.")
    theta = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (d_head / 2,)
    return (torch.arange(length, dtype=torch.float64)[:, None] * theta).float()  # (length, d_head / 2)


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Turn each pair (2i, 2i+1) of the last axis by its angle. x (..., length, d_head), angles (length, d_head/2)
    -> (..., length, d_head)."""
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., length, d_head / 2) each
    cos, sin = angles.cos(), angles.sin()  # (length, d_head / 2) each
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)  # (..., length, d_head / 2, 2)
    return turned.flatten(-2)  # (..., length, d_head)
