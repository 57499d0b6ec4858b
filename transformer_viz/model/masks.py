"""Attention masks. Convention everywhere: True = "this query may attend to this key".

This is the meaning of `F.scaled_dot_product_attention`'s boolean mask and of the
seeds' `masked_fill(mask == 0, ...)`. `nn.MultiheadAttention` uses the opposite
(True = blocked): invert before handing a mask to it.
"""

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are real tokens. ids (batch, k_len) -> (batch, 1, 1, k_len), broadcast over heads and queries."""
    return (ids != pad_id)[:, None, None, :]  # (batch, 1, 1, k_len)


def look_ahead_mask(length: int, device: torch.device | None = None) -> torch.Tensor:
    """Query i may see keys 0..i, never a future one. -> (length, length), lower triangle True."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()  # (q_len, k_len)


def decoder_self_mask(tgt_ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Look-ahead AND target padding. tgt_ids (batch, tgt_len) -> (batch, 1, tgt_len, tgt_len)."""
    causal = look_ahead_mask(tgt_ids.shape[1], device=tgt_ids.device)  # (tgt_len, tgt_len)
    return padding_mask(tgt_ids, pad_id) & causal  # (batch, 1, tgt_len, tgt_len)
