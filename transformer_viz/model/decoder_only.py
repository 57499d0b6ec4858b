"""The decoder-only Transformer (GPT's form): one token stream, causal self-attention in every layer, no encoder
and no cross-attention, a final LayerNorm (pre-LN) and the output projection.

Its layers are the encoder's layers under a causal mask (each equals torch.nn.TransformerEncoderLayer given
that mask), and its trace uses the decoder's names (`tgt_embed.*`, `decoder.layers.{i}.self_attn.*`,
`logits`), so every figure that draws the decoder's self-attention draws this model unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from transformer_viz.config import ModelConfig
from transformer_viz.model.embeddings import Embeddings
from transformer_viz.model.generation import check_generation, generation_loop
from transformer_viz.model.hooks import HookPoint, active_intervention, intervening, name_hook_points, recording
from transformer_viz.model.layers import Encoder
from transformer_viz.model.masks import decoder_self_mask, padding_mask
from transformer_viz.model.sampling import Sampling
from transformer_viz.model.transformer import (
    Transformer,
    check_ids,
    checked_intervention,
    init_parameters,
    xavier_reset,
)
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.record import Trace


class DecoderOnlyTransformer(nn.Module):
    """`model(ids)` returns next-token logits at every position; `model.run_with_trace(ids)` returns (logits,
    trace) with the same logits; `model.generate(prompt, n)` continues a prompt. Nothing is stored on the
    modules, so one instance serves many concurrent callers."""

    def __init__(self, config: ModelConfig, generator: torch.Generator | None = None) -> None:
        """The initial weights are drawn from `generator` (None: torch's global RNG), as Transformer's."""
        super().__init__()
        if not isinstance(config, ModelConfig) or config.architecture != "decoder_only":
            raise ValueError('A DecoderOnlyTransformer needs a ModelConfig with architecture="decoder_only".')
        self.config = config
        with torch.device("meta"):  # shapes only: init_parameters draws the values from `generator`
            self.tgt_embed = Embeddings(config, config.tgt_vocab_size)
            self.decoder = Encoder(config, n_layers=config.n_decoder_layers)
            self.output_proj = nn.Linear(config.d_model, config.tgt_vocab_size)
        self.to_empty(device=torch.get_default_device())
        if config.tie_embeddings:  # one matrix reads tokens in and scores them out (GPT-2): (vocab, d_model)
            self.output_proj.weight = self.tgt_embed.token_table.weight
        self.hook_logits = HookPoint()
        name_hook_points(self)
        for i, layer in enumerate(self.decoder.layers):
            layer.self_attn.site = ("decoder_self", i)
        init_parameters(self, generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        xavier_reset(self, (self.tgt_embed,), self.config.pad_id, generator)

    def forward(self, ids: torch.Tensor, token: torch.Tensor | None = None) -> torch.Tensor:
        """ids (batch, length) -> logits (batch, length, vocab): position t predicts token t + 1 from tokens 0..t.

        `token` (batch, length, d_model): the token embeddings, given instead of looked up (attribution)."""
        check_ids(ids, self.config.tgt_vocab_size, self.config.max_len, "input")
        if active_intervention().look_ahead:
            mask = decoder_self_mask(ids, self.config.pad_id)  # (batch, 1, length, length)
        else:  # an intervention: padding only, every position sees the whole sequence
            mask = padding_mask(ids, self.config.pad_id)  # (batch, 1, 1, length)
        hidden = self.decoder(self.tgt_embed(ids, token), mask)  # (batch, length, d_model)
        return self.hook_logits(self.output_proj(hidden))  # (batch, length, vocab)

    def checked(self, intervention: Intervention | None) -> Intervention:
        return checked_intervention(intervention, self.config)

    def run_with_trace(self, ids: torch.Tensor,
                       intervention: Intervention | None = None) -> tuple[torch.Tensor, Trace]:
        """Forward pass under inference_mode that also returns every recorded tensor (see DESIGN.md)."""
        intervention = self.checked(intervention)
        with torch.inference_mode(), recording() as tensors, intervening(intervention):
            logits = self(ids)
        return logits, Trace(tensors, config=self.config, intervention=intervention)

    def generate(self, prompt_ids: torch.Tensor, max_new_tokens: int, eos_id: int, keep_steps: bool = True,
                 intervention: Intervention | None = None,
                 sampling: Sampling | None = None) -> tuple[torch.Tensor, list[Trace]]:
        """Continue each prompt by the most probable token (or one drawn as `sampling` says), one at a time.

        prompt_ids (batch, prompt_len) -> (ids (batch, prompt_len + n), one Trace per step: step k's is the pass
        over ids[:, :prompt_len + k] whose last position chose the next token). Positions after a row's eos are
        pad_id; no more than max_len tokens in all. With `keep_steps=False` only the last step's trace is kept (the
        others are its prefixes). Every step runs under `intervention`.
        """
        check_generation(max_new_tokens, eos_id, sampling)
        check_ids(prompt_ids, self.config.tgt_vocab_size, self.config.max_len, "prompt")
        intervention = self.checked(intervention)
        with torch.no_grad(), intervening(intervention):
            room = self.config.max_len - prompt_ids.shape[1]  # no more than max_len tokens in all
            ids, steps = generation_loop(self, prompt_ids, min(max_new_tokens, room), eos_id, self.config.pad_id,
                                         sampling=sampling, keep_steps=keep_steps)
        return ids, [Trace(tensors, config=self.config, intervention=intervention) for tensors in steps]


def check_toy_model(model, what: str = "a Transformer") -> None:
    """ValueError unless `model` is one of this project's models (the encoder-decoder or the decoder-only one)."""
    if not isinstance(model, Transformer | DecoderOnlyTransformer):
        raise ValueError(f"model must be {what}, got {type(model).__name__}.")


def build_model(config: ModelConfig, generator: torch.Generator | None = None) -> Transformer | DecoderOnlyTransformer:
    """The model `config.architecture` names, its initial weights drawn from `generator` (None: torch's global RNG)."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}.")
    kind = DecoderOnlyTransformer if config.architecture == "decoder_only" else Transformer
    return kind(config, generator=generator)
