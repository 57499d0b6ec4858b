"""Encoder and decoder layers and stacks (paper section 3.1), pre-LN or post-LN.

post-LN (the paper, seed 002): x = norm(x + sublayer(x)).
pre-LN (seeds 000, 001, 004):  x = x + sublayer(norm(x)), and a final LayerNorm per stack.
With the same weights these compute what torch.nn.TransformerEncoderLayer /
TransformerDecoderLayer compute with `norm_first` set the same way.
"""

from collections.abc import Callable

import torch
from torch import nn

from transformer_viz.config import ModelConfig
from transformer_viz.model.attention import MultiHeadAttention
from transformer_viz.model.feed_forward import FeedForward
from transformer_viz.model.hooks import Dropout, HookPoint


class ResidualBlock(nn.Module):
    """Base of both layers: residual connections with LayerNorm before (pre-LN) or after (post-LN)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.norm_first = config.norm_first
        self.dropout = Dropout(config.dropout)

    def residual(
        self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor], norm: nn.LayerNorm
    ) -> torch.Tensor:
        """Keeps (batch, seq_len, d_model)."""
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))


class EncoderLayer(ResidualBlock):
    """Self-attention over the source, then the feed-forward network (none in an attention-only model: its
    resid_post is its resid_mid)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.self_attn = MultiHeadAttention(config, rotary=config.positional == "rotary")
        self.norm1 = nn.LayerNorm(config.d_model)
        if not config.attention_only:
            self.ffn, self.norm2 = FeedForward(config), nn.LayerNorm(config.d_model)
        self.hook_resid_mid, self.hook_resid_post = HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """x (batch, src_len, d_model), src_mask (batch, 1, 1, src_len) -> (batch, src_len, d_model)."""
        x = self.hook_resid_mid(self.residual(x, lambda h: self.self_attn(h, h, src_mask), self.norm1))
        if hasattr(self, "ffn"):
            x = self.residual(x, self.ffn, self.norm2)
        return self.hook_resid_post(x)


class DecoderLayer(ResidualBlock):
    """Masked self-attention over the target, cross-attention to the encoder's memory, then the FFN."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.self_attn = MultiHeadAttention(config, rotary=config.positional == "rotary")
        self.cross_attn = MultiHeadAttention(config)  # a query and a key of two sequences: no turn
        self.ffn = FeedForward(config)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(config.d_model) for _ in range(3))
        self.hook_resid_mid, self.hook_resid_cross, self.hook_resid_post = HookPoint(), HookPoint(), HookPoint()

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor, src_mask: torch.Tensor
    ) -> torch.Tensor:
        """x (batch, tgt_len, d_model), memory (batch, src_len, d_model),
        tgt_mask (batch, 1, tgt_len, tgt_len), src_mask (batch, 1, 1, src_len) -> (batch, tgt_len, d_model)."""
        x = self.hook_resid_mid(self.residual(x, lambda h: self.self_attn(h, h, tgt_mask), self.norm1))
        x = self.hook_resid_cross(self.residual(x, lambda h: self.cross_attn(h, memory, src_mask), self.norm2))
        return self.hook_resid_post(self.residual(x, self.ffn, self.norm3))


class Encoder(nn.Module):
    """A stack of encoder layers (self-attention and FFN); pre-LN adds a final LayerNorm. A decoder-only model's
    stack is the same with a causal mask (`n_layers`: its config's n_decoder_layers)."""

    def __init__(self, config: ModelConfig, n_layers: int | None = None) -> None:
        super().__init__()
        count = config.n_encoder_layers if n_layers is None else n_layers
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(count))
        self.norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()
        self.hook_out = HookPoint()

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """(batch, src_len, d_model), src_mask (batch, 1, 1 or src_len, src_len) -> (batch, src_len, d_model)."""
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.hook_out(self.norm(x))


class Decoder(nn.Module):
    """A stack of decoder layers; pre-LN adds a final LayerNorm."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.n_decoder_layers))
        self.norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()
        self.hook_out = HookPoint()

    def forward(
        self, x: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor, src_mask: torch.Tensor
    ) -> torch.Tensor:
        """(batch, tgt_len, d_model) -> (batch, tgt_len, d_model)."""
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, src_mask)
        return self.hook_out(self.norm(x))
