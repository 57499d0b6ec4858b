"""The encoder-decoder Transformer: embeddings, two stacks, output projection, tracing and greedy decoding."""

from __future__ import annotations

import math

import torch
from torch import nn

from transformer_viz.config import ModelConfig, is_whole
from transformer_viz.model.embeddings import Embeddings, PositionalEncoding
from transformer_viz.model.generation import check_generation, generation_loop
from transformer_viz.model.hooks import HookPoint, active_intervention, intervening, name_hook_points, recording
from transformer_viz.model.layers import Decoder, Encoder
from transformer_viz.model.masks import decoder_self_mask, padding_mask
from transformer_viz.model.sampling import Sampling
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.record import Trace


class Transformer(nn.Module):
    """Encoder-decoder Transformer whose every intermediate tensor can be recorded.

    `model(src_ids, tgt_ids)` returns logits; `model.run_with_trace(src_ids, tgt_ids)`
    returns (logits, trace) with the same logits. Nothing is ever stored on the modules,
    so one instance can serve many concurrent callers.
    """

    def __init__(self, config: ModelConfig, generator: torch.Generator | None = None) -> None:
        """The initial weights are drawn from `generator` (None: torch's global RNG, which every thread of the
        process shares: a server gives each model its own seeded generator). See `init_parameters`."""
        super().__init__()
        if isinstance(config, ModelConfig) and config.architecture != "encoder_decoder":
            raise ValueError(f"A Transformer is the encoder-decoder; a {config.architecture} config builds a "
                             f"DecoderOnlyTransformer.")
        self.config = config
        device = torch.get_default_device()
        with torch.device("meta"):  # shapes only: torch's modules would draw their initial values from the global RNG
            self.src_embed = Embeddings(config, config.src_vocab_size)
            self.tgt_embed = Embeddings(config, config.tgt_vocab_size)
            self.encoder = Encoder(config)
            self.decoder = Decoder(config)
            self.output_proj = nn.Linear(config.d_model, config.tgt_vocab_size)
        self.to_empty(device=device)
        self.hook_logits = HookPoint()
        name_hook_points(self)
        for i, layer in enumerate(self.encoder.layers):
            layer.self_attn.site = ("encoder_self", i)
        for i, layer in enumerate(self.decoder.layers):
            layer.self_attn.site, layer.cross_attn.site = ("decoder_self", i), ("cross", i)
        init_parameters(self, generator)

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        xavier_reset(self, (self.src_embed, self.tgt_embed), self.config.pad_id, generator)

    def encode(self, src_ids: torch.Tensor,
               src_token: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """src_ids (batch, src_len) -> memory (batch, src_len, d_model), src_mask (batch, 1, 1, src_len).

        `src_token` (batch, src_len, d_model): the source's token embeddings, given instead of looked up."""
        check_ids(src_ids, self.config.src_vocab_size, self.config.max_len, "source")
        src_mask = padding_mask(src_ids, self.config.pad_id)  # (batch, 1, 1, src_len)
        return self.encoder(self.src_embed(src_ids, src_token), src_mask), src_mask

    def decode(self, tgt_ids: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """tgt_ids (batch, tgt_len) -> logits (batch, tgt_len, vocab)."""
        check_ids(tgt_ids, self.config.tgt_vocab_size, self.config.max_len, "target")
        if tgt_ids.shape[0] != memory.shape[0]:
            raise ValueError(f"The batch has {_rows(memory.shape[0], 'source')} but "
                             f"{_rows(tgt_ids.shape[0], 'target')}: give one target sequence for each source sequence.")
        if active_intervention().look_ahead:
            tgt_mask = decoder_self_mask(tgt_ids, self.config.pad_id)  # (batch, 1, tgt_len, tgt_len)
        else:  # an intervention: padding only, every query sees the whole target
            tgt_mask = padding_mask(tgt_ids, self.config.pad_id)  # (batch, 1, 1, tgt_len)
        hidden = self.decoder(self.tgt_embed(tgt_ids), memory, tgt_mask, src_mask)  # (batch, tgt_len, d_model)
        return self.hook_logits(self.output_proj(hidden))  # (batch, tgt_len, vocab)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor,
                src_token: torch.Tensor | None = None) -> torch.Tensor:
        """src_ids (batch, src_len), tgt_ids (batch, tgt_len) -> logits (batch, tgt_len, vocab);
        `src_token` as in `encode`."""
        memory, src_mask = self.encode(src_ids, src_token)
        return self.decode(tgt_ids, memory, src_mask)

    def run_with_trace(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor,
                       intervention: Intervention | None = None) -> tuple[torch.Tensor, Trace]:
        """Forward pass under inference_mode that also returns every recorded tensor (see DESIGN.md).

        Under `intervention` (see transformer_viz.trace.intervention), kept as `trace.intervention`.
        """
        intervention = self.checked(intervention)
        with torch.inference_mode(), recording() as tensors, intervening(intervention):
            logits = self(src_ids, tgt_ids)
        return logits, Trace(tensors, config=self.config, intervention=intervention)

    def checked(self, intervention: Intervention | None) -> Intervention:
        return checked_intervention(intervention, self.config)

    def generate(
        self, src_ids: torch.Tensor, max_new_tokens: int, bos_id: int, eos_id: int, keep_steps: bool = True,
        intervention: Intervention | None = None, sampling: Sampling | None = None,
    ) -> tuple[torch.Tensor, list[Trace]]:
        """Greedy decoding, or sampling.

        Returns tgt_ids (batch, 1 + n) starting with bos_id (positions after a row's
        eos are pad_id) and one Trace per step: step k's trace is the pass over
        tgt_ids[:, :k + 1] whose last position chose token k + 1. The encoder runs once;
        its tensors appear in every step's trace. With `keep_steps=False` only the last
        step's trace is kept (the others are its prefixes: `Trace.target_prefix`). An eos_id
        outside the vocabulary never stops a row early. Every step runs under `intervention`.
        Each step writes the most probable token (sampling None: greedy), or draws it as `sampling` says
        (model/sampling.py), from a generator seeded with its seed: the same seed writes the same tokens.
        """
        check_generation(max_new_tokens, eos_id, sampling)
        vocab_size = self.config.tgt_vocab_size
        if not is_whole(bos_id) or not 0 <= bos_id < vocab_size:
            raise ValueError(f"bos_id = {bos_id!r} is not a token of the target vocabulary "
                             f"(ids 0 to {vocab_size - 1}).")
        intervention = self.checked(intervention)
        # no_grad rather than inference_mode: the returned ids must be usable in a later training step.
        with torch.no_grad(), intervening(intervention):
            with recording() as encoder_tensors:
                memory, src_mask = self.encode(src_ids)
            start = torch.full((src_ids.shape[0], 1), bos_id, dtype=torch.int64)  # (batch, 1)
            tgt_ids, steps = generation_loop(
                lambda ids: self.decode(ids, memory, src_mask), start, min(max_new_tokens, self.config.max_len - 1),
                eos_id, self.config.pad_id, sampling=sampling, keep_steps=keep_steps, recorded_first=encoder_tensors)
        return tgt_ids, [Trace(tensors, config=self.config, intervention=intervention) for tensors in steps]


def check_ids(ids: torch.Tensor, vocab_size: int, max_len: int, side: str) -> None:
    """Raise ValueError (not an error from deep inside torch) for ids the model cannot read."""
    if not isinstance(ids, torch.Tensor):
        raise ValueError(f"The {side} ids must be a tensor of shape (batch, length), got a {type(ids).__name__}. "
                         f"Make one with torch.tensor(ids, dtype=torch.int64).")
    if ids.dim() != 2:
        raise ValueError(f"The {side} ids must have shape (batch, length), got a {ids.dim()}-D tensor of shape "
                         f"{tuple(ids.shape)}. One sequence is a batch of one row: ids[None].")
    if ids.dtype != torch.int64:
        raise ValueError(f"The {side} ids must be whole token ids of dtype int64, got dtype {ids.dtype}. "
                         f"Convert them with ids.long() if they are whole numbers.")
    if ids.shape[0] == 0:
        raise ValueError(f"The {side} batch is empty: give it at least one sequence.")
    if ids.shape[1] == 0:
        raise ValueError(f"The {side} sequence is empty: give it at least one token.")
    if ids.shape[1] > max_len:
        raise ValueError(
            f"The {side} sequence has {ids.shape[1]} tokens but this model reads at most "
            f"max_len = {max_len}. Shorten the text or raise max_len."
        )
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"Token id {bad} is outside the {side} vocabulary (ids 0 to {vocab_size - 1}).")


def checked_intervention(intervention: Intervention | None, config: ModelConfig) -> Intervention:
    """The intervention to apply (None: none); ValueError if it names a head a model of `config` lacks."""
    intervention = Intervention() if intervention is None else intervention
    if not isinstance(intervention, Intervention):
        raise ValueError(f"intervention must be an Intervention, got {type(intervention).__name__}.")
    intervention.check_fits(config)
    return intervention


def xavier_reset(model: nn.Module, embeddings, pad_id: int, generator: torch.Generator | None = None) -> None:
    """Xavier-uniform for every matrix of `model` (as the paper's reference code), each embedding's padding row
    back to zero."""
    for parameter in model.parameters():
        if parameter.dim() > 1:
            nn.init.xavier_uniform_(parameter, generator=generator)
    with torch.no_grad():
        for embed in embeddings:
            embed.token_table.weight[pad_id].zero_()


def init_parameters(model: Transformer, generator: torch.Generator | None = None) -> Transformer:
    """Set every parameter (and fixed table) of `model` afresh, drawing from `generator` (None: the global RNG).

    The draws of `torch.manual_seed(s); Transformer(config)` before models had generators: torch's own
    initialisation of each module in order (Linear: Kaiming-uniform weight, uniform bias; Embedding: normal;
    LayerNorm: ones and zeros), then `reset_parameters`. The Kaiming draws are overwritten by Xavier's but keep
    the later draws where they were: a generator seeded with s gives the weights that seed s always gave.
    """
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=generator)
                if module.bias is not None:
                    bound = 1 / math.sqrt(module.in_features)
                    nn.init.uniform_(module.bias, -bound, bound, generator=generator)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, generator=generator)
            elif isinstance(module, nn.LayerNorm):
                module.reset_parameters()
            elif isinstance(module, PositionalEncoding) and module.kind != "learned":
                module.table.copy_(module.fixed_table())  # (max_len, d_model)
    model.reset_parameters(generator)
    return model


def _rows(count: int, side: str) -> str:
    """_rows(1, "source") -> "1 source row"; _rows(3, "target") -> "3 target rows"."""
    return f"{count} {side} row" + "s" * (count != 1)
