"""Scaled dot-product attention and multi-head attention (paper section 3.2), written out.

Fused kernels such as F.scaled_dot_product_attention do not return the weights,
so every step is spelled out and passes through a HookPoint.
"""

import math

import torch
from torch import nn

from transformer_viz.config import ModelConfig
from transformer_viz.model.hooks import Dropout, HookPoint, active_gate, active_intervention
from transformer_viz.model.rotary import rotary_angles, rotate


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None, mask_value: float,
                   empty_rows_even: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(masked_scores, weights): every blocked score replaced by `mask_value`, then the softmax over the keys.

    scores (..., q_len, k_len); mask broadcastable to it, True = may attend. Blocked keys get weight exactly 0.
    A row with no allowed key (a padding query before every real token, or outside every real key's sliding
    window) gets all zeros in this project's models (not uniform, nor NaN even with mask_value = -inf); with
    `empty_rows_even`, as in Hugging Face's models, whose additive mask leaves such a row as even as its fills, the
    softmax spreads it over every key (1 / k_len each).
    """
    if mask is None:
        return scores, scores.softmax(dim=-1)
    # float(): a whole-number fill beyond int64 (allowed: it is above the float32 limit) overflows masked_fill.
    masked_scores = scores.masked_fill(~mask, float(mask_value))  # (..., q_len, k_len)
    weights = masked_scores.softmax(dim=-1).masked_fill(~mask, 0.0)  # (..., q_len, k_len)
    if empty_rows_even:  # a row with no allowed key: the softmax of its equal fills
        weights = torch.where(mask.any(dim=-1, keepdim=True), weights, masked_scores.softmax(dim=-1))
    return masked_scores, weights


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, mask_value: float,
    dropout: nn.Module | None = None, scale: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√d_head, masked) V (without the division when `scale` is False: an intervention).

    q (..., q_len, d_head), k and v (..., k_len, d_head); mask broadcastable to
    (..., q_len, k_len) with True = may attend. Returns (output, weights, scores,
    masked_scores): scores before masking, masked_scores with every blocked score
    replaced by mask_value (the softmax's input), weights before the optional dropout.
    The mask is applied by `masked_softmax`.
    """
    # Divide by sqrt(d_head): dot products grow with d_head and would push the softmax to one-hot.
    scores = q @ k.transpose(-2, -1)  # (..., q_len, k_len)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    masked_scores, weights = masked_softmax(scores, mask, mask_value)  # (..., q_len, k_len) each
    attended = weights if dropout is None else dropout(weights)
    return attended @ v, weights, scores, masked_scores  # (..., q_len, d_head), (..., q_len, k_len) x 3


class MultiHeadAttention(nn.Module):
    """Project to Q, K, V, split into heads, attend per head, merge heads, project with W_O.

    `rotary` (self-attention of a model with positional="rotary"): q and k are turned by their positions
    (model/rotary.py) before the scores; `q` and `k` are recorded before the turn, `q_rot` and `k_rot` after."""

    def __init__(self, config: ModelConfig, rotary: bool = False) -> None:
        super().__init__()
        self.n_heads, self.d_head = config.n_heads, config.d_head
        self.rotary = rotary
        self.mask_value = config.mask_value
        self.q_proj = nn.Linear(config.d_model, config.d_model)
        self.k_proj = nn.Linear(config.d_model, config.d_model)
        self.v_proj = nn.Linear(config.d_model, config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)
        self.dropout = Dropout(config.dropout)
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()
        self.hook_q_rot, self.hook_k_rot = HookPoint(), HookPoint()
        self.hook_scores = HookPoint()
        self.hook_masked_scores = HookPoint()
        self.hook_mask = HookPoint()
        self.hook_weights = HookPoint()
        self.hook_out = HookPoint()
        self.site: tuple[str, int] | None = None  # (attention kind, layer): what an intervention calls it

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq_len, d_model) -> (batch, heads, seq_len, d_head)."""
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.d_head).transpose(1, 2)  # (batch, heads, seq_len, d_head)

    def forward(self, query: torch.Tensor, key_value: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """query (batch, q_len, d_model), key_value (batch, k_len, d_model),
        mask (batch, 1, q_len or 1, k_len) True = may attend -> (batch, q_len, d_model)."""
        batch, q_len, d_model = query.shape
        q = self.hook_q(self.split_heads(self.q_proj(query)))  # (batch, heads, q_len, d_head)
        k = self.hook_k(self.split_heads(self.k_proj(key_value)))  # (batch, heads, k_len, d_head)
        v = self.hook_v(self.split_heads(self.v_proj(key_value)))  # (batch, heads, k_len, d_head)
        mask = self.hook_mask(mask.expand(batch, 1, q_len, k.shape[2]))  # (batch, 1, q_len, k_len)
        intervention = active_intervention()
        if self.rotary and intervention.positions:  # self-attention: the queries' positions are the keys'
            angles = rotary_angles(q_len, self.d_head)  # (q_len, d_head / 2)
            q, k = self.hook_q_rot(rotate(q, angles)), self.hook_k_rot(rotate(k, angles))  # as q and k
        # context (batch, heads, q_len, d_head)
        context, weights, scores, masked_scores = scaled_dot_product_attention(
            q, k, v, mask, self.mask_value, self.dropout, scale=intervention.scale)
        ablated = intervention.heads_at(*self.site) if self.site and intervention.ablate_heads else []
        if ablated:
            context = context.clone()
            for head in ablated:  # the head's output before W_O: zeros, or its mean over the positions
                mean = intervention.ablation == "mean"
                context[:, head] = context[:, head].mean(dim=1, keepdim=True) if mean else 0.0
        gate = active_gate(self.site)
        if gate is not None:  # (heads,) or (batch, heads): each head's output scaled, differentiably
            context = context * gate[..., None, None]  # (batch, heads, q_len, d_head)
        self.hook_scores(scores)  # (batch, heads, q_len, k_len)
        self.hook_masked_scores(masked_scores)  # (batch, heads, q_len, k_len)
        self.hook_weights(weights)  # (batch, heads, q_len, k_len)
        merged = context.transpose(1, 2).reshape(batch, q_len, d_model)  # (batch, q_len, d_model)
        return self.hook_out(self.out_proj(merged))  # (batch, q_len, d_model)
