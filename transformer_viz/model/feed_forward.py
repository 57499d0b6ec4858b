"""Position-wise feed-forward network (paper section 3.3): the same two-layer MLP at every position."""

import torch
from torch import nn

from transformer_viz.config import ModelConfig
from transformer_viz.model.hooks import Dropout, HookPoint


class FeedForward(nn.Module):
    """linear1 -> ReLU -> dropout -> linear2; the hidden activation is recorded."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)
        self.dropout = Dropout(config.dropout)
        self.hook_hidden = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, seq_len, d_model) -> (batch, seq_len, d_model)."""
        hidden = self.hook_hidden(torch.relu(self.linear1(x)))  # (batch, seq_len, d_ff)
        return self.linear2(self.dropout(hidden))  # (batch, seq_len, d_model)
