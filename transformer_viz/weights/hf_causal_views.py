"""What the app's pages read of a Hugging Face decoder-only model (GPT-2, the Llama layout) beyond its trace
(hf_causal.py): its tokenizer as a vocabulary, the logit lens through its own final norm, its parameters in the toy
model's blocks, whether its rotary angles are the toy's, and one head step by step (Inside one head).

    from transformer_viz.weights import hf_causal, hf_causal_views
    model = hf_causal.load("gpt2")
    run = hf_causal.run_text(model, "The cat sat on the")
    walk = hf_causal_views.head_walkthrough(model, run.trace, "decoder_self", 0, 3)   # checked against the trace
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from transformer_viz.analysis.walkthrough import (
    AttentionProjections,
    HeadWalkthrough,
    TraceMismatchError,
    attention_input,
    walk_head,
)
from transformer_viz.i18n import translatable_error
from transformer_viz.trace.names import ATTENTION_KINDS, check_index, check_kind, name
from transformer_viz.trace.record import Trace, check_trace
from transformer_viz.weights.hf import _tokens
from transformer_viz.weights.hf_causal import HFCausalModel, _core, _layers


class TokenizerVocab:
    """A Hugging Face tokenizer read as the Decoding page reads a task's Vocab: `tokens[id]` is a piece (looked up
    when asked: a vocabulary of 150,000 is never listed), `index(piece)` its id."""

    def __init__(self, hf) -> None:  # an HFCausalModel or an encoder-decoder's hf.HFModel
        self.hf, self.tokens = hf, _Pieces(hf)

    def index(self, piece: str) -> int | None:
        """The id of a piece the model wrote (None: not the tokenizer's own, as T5's ids past its table)."""
        found = self.hf.tokenizer.convert_tokens_to_ids(piece)
        return found if isinstance(found, int) and 0 <= found < len(self.tokens) else None


class _Pieces(Sequence):
    def __init__(self, hf) -> None:
        self.hf = hf

    def __len__(self) -> int:
        return self.hf.config.tgt_vocab_size

    def __getitem__(self, i: int) -> str:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
            raise IndexError(f"token ids run from 0 to {len(self) - 1}, got {i!r}.")
        return _tokens(self.hf, torch.tensor([i]))[0]


def logit_lens(hf: HFCausalModel, trace: Trace):
    """analysis.logit_lens for a decoder-only Hugging Face model: what enters the first layer and each layer's
    stream, read out by the model's own final norm and lm_head (the last row is the model's own prediction)."""
    from transformer_viz.analysis.measures import LogitLens

    names = ["tgt_embed.out", *(name("decoder", layer, "resid_post") for layer in range(hf.config.n_decoder_layers))]
    final_norm = _core(hf).ln_f if hf.family == "gpt2" else _core(hf).norm
    with torch.no_grad():
        streams = torch.stack([trace[n][0] for n in names])  # (layers + 1, T, d_model)
        probabilities = hf.model.lm_head(final_norm(streams)).softmax(-1)  # (layers + 1, T, vocab)
        top, ids = probabilities.max(-1)  # (layers + 1, T)
    tokens = tuple(_tokens(hf, row) for row in ids)
    return LogitLens(ids.numpy(), top.double().numpy(), tokens, trace.tgt_tokens)


# Parameter paths of both families as the toy decoder-only model's blocks (model/summary.py), applied in turn.
TOY_PATHS = [
    (r"^(transformer|model)\.", ""),
    (r"^(h|layers)\.(\d+)\.", r"decoder.layers.\2."),
    (r"^(wte|embed_tokens)\.", "tgt_embed.token_table."),
    (r"^wpe\.", "tgt_embed.positional.table."),
    (r"^(ln_f|norm)\.", "decoder.norm."),
    (r"^lm_head\.", "output_proj."),
    (r"\.(attn|self_attn)\.", ".self_attn."),
    (r"\.mlp\.", ".ffn."),
    (r"\.(ln_1|input_layernorm)\.", ".norm1."),
    (r"\.(ln_2|post_attention_layernorm)\.", ".norm2."),
]


def toy_path(path: str) -> str:
    """A GPT-2 or Llama-layout parameter path under the toy model's names, e.g. Llama's
    "model.layers.0.mlp.gate_proj.weight" -> "decoder.layers.0.ffn.gate_proj.weight"."""
    for pattern, replacement in TOY_PATHS:
        path = re.sub(pattern, replacement, path, count=1)
    return path


def parameter_counts(hf: HFCausalModel) -> dict[str, int]:
    """summary.parameter_counts's blocks for a decoder-only Hugging Face model (a readout tied to the token table
    is counted once, under the table)."""
    from transformer_viz.model.summary import block_keys

    counts: dict[str, int] = {}
    for path, parameter in hf.model.named_parameters():
        counts["total"] = counts.get("total", 0) + parameter.numel()
        for key in block_keys(toy_path(path)):
            counts[key] = counts.get(key, 0) + parameter.numel()
    return counts


def turns_as_the_toy(hf: HFCausalModel) -> bool:
    """Whether the model turns q and k by model/rotary.py's angles (position · 10000^(−2i/d_head), no scaling):
    the angles the Embeddings page draws. Llama 3, Qwen2 and SmolLM choose another base or scale them."""
    from transformer_viz.model.rotary import rotary_angles

    if hf.config.positional != "rotary":
        return False
    rotary = _core(hf).rotary_emb
    theta = rotary_angles(2, hf.config.d_head)[1]  # (d_head / 2,): the angle of position 1
    own = rotary.inv_freq.float()  # (d_head / 2,) for a full rotation
    return (getattr(rotary, "attention_scaling", 1.0) == 1.0 and own.shape == theta.shape
            and torch.allclose(own, theta, rtol=1e-5, atol=0))


# Inside one head: walkthrough.walk_head over the family's own projections, every step checked against the trace.


@dataclass(frozen=True)
class Projection:
    """What walk_head reads of an nn.Linear, y = x·Wᵀ + b: `weight` (out, in) and `bias` (out,) or None. GPT-2's
    Conv1D computes y = x·W + b with W (in, out): its weight transposed is this one."""

    weight: torch.Tensor
    bias: torch.Tensor | None


def head_walkthrough(hf: HFCausalModel, trace: Trace, kind: str, layer: int, head: int) -> HeadWalkthrough:
    """walkthrough.head_walkthrough for GPT-2 or the Llama layout: head `head` of the masked self-attention of
    `layer` (zero-based) recomputed from norm1(the stream entering the layer) and the model's own projections, and
    every head checked against the trace (TraceMismatchError where a step differs). Query head h reads key/value
    head config.kv_head_of_query_head[h]; RoPE turns pairs (i, i + d_head/2) by the model's own frequencies."""
    check_trace(trace)
    check_kind(kind)
    if kind not in trace.attention_kinds():  # a decoder-only model: its masked self-attention alone
        raise ValueError(f"This model has no {ATTENTION_KINDS[kind].title}.")
    config = hf.config
    layer = check_index(layer, config.n_decoder_layers, "decoder layer")
    head = check_index(head, config.n_heads, "head")
    if trace.config != config:
        raise TraceMismatchError("This trace was recorded by another model; run the shown model again to get its "
                                 "trace.")
    block = _layers(hf)[layer]
    source = attention_input(kind, layer, norm_first=True)  # both families are pre-LN: norm1 is ln_1 or input_layernorm
    norm = block.ln_1 if hf.family == "gpt2" else block.input_layernorm
    with torch.no_grad():
        x = norm(trace[source.recorded][0].float())  # (T, d_model)
    projections = AttentionProjections(*_projections(hf, block), config.n_heads, config.d_head, config.score_scale,
                                       config.mask_value, config.empty_rows_even)
    if config.positional != "rotary":
        return walk_head(projections, trace, kind, layer, head, (x, source), norm_first=True)
    return walk_head(projections, _keys_per_query_head(trace, layer, config), kind, layer, head, (x, source),
                     norm_first=True, angles=_angles(hf, trace, layer), halves=True)


def _projections(hf: HFCausalModel, block: torch.nn.Module) -> tuple[Projection, ...]:
    """W_Q, W_K, W_V and W_O of a layer as walk_head reads them (out, in), one block of d_head rows per query head:
    GPT-2's packed c_attn split in three (views, no copies); the Llama layout's k_proj and v_proj rows of each
    key/value head repeated for the query heads that share it, as transformers' repeat_kv repeats k and v."""
    if hf.family == "gpt2":
        attention = block.attn
        weights = attention.c_attn.weight.detach().T.split(hf.config.d_model)  # 3 × (d_model, d_model), (out, in)
        biases = attention.c_attn.bias.detach().split(hf.config.d_model)  # 3 × (d_model,)
        out = Projection(attention.c_proj.weight.detach().T, attention.c_proj.bias.detach())  # (d_model, d_model)
        return (*(Projection(w, b) for w, b in zip(weights, biases, strict=True)), out)
    attention = block.self_attn
    group = hf.config.n_heads // hf.config.n_kv_heads

    def per_query_head(tensor: torch.Tensor | None) -> torch.Tensor | None:  # (kv · d_head, ...) -> (H · d_head, ...)
        if tensor is None:
            return None
        by_head = tensor.detach().unflatten(0, (hf.config.n_kv_heads, hf.config.d_head))  # (kv, d_head, ...)
        return by_head.repeat_interleave(group, dim=0).flatten(0, 1)  # (heads · d_head, ...)

    k, v = (Projection(per_query_head(p.weight), per_query_head(p.bias)) for p in (attention.k_proj, attention.v_proj))
    return attention.q_proj, k, v, attention.o_proj


def _keys_per_query_head(trace: Trace, layer: int, config) -> Trace:
    """The trace with this layer's k, v and k_rot repeated per query head (batch, heads, T, d_head), as the model's
    scores read them: walk_head checks query head h's k against the key/value head it reads."""
    group = config.n_heads // config.n_kv_heads
    shared = [name("decoder", layer, "self_attn", leaf) for leaf in ("k", "v", "k_rot")]
    return replace(trace, tensors={**trace.tensors, **{n: trace[n].repeat_interleave(group, dim=1) for n in shared}})


def _angles(hf: HFCausalModel, trace: Trace, layer: int) -> torch.Tensor:
    """The angle of each position and pair of batch row 0, (T, d_head / 2) radians: its position (its real tokens
    counted, as run_with_trace numbers them) times the model's own frequency of each pair, computed as transformers
    computes it. TranslatableError for a rotation that also scales q and k (attention_scaling, as YaRN's)."""
    rotary = _core(hf).rotary_emb
    scaling = float(getattr(rotary, "attention_scaling", 1.0))
    if scaling != 1.0 or rotary.inv_freq.shape != (hf.config.d_head // 2,):
        raise translatable_error("hf.walk_rotary", name=hf.config.name, scaling=round(scaling, 4))
    real = trace[name("decoder", layer, "self_attn", "mask")][0, 0].diagonal()  # (T,): a real token may see itself
    positions = (real.long().cumsum(-1) - 1).masked_fill(~real, 0)  # (T,)
    return positions[:, None].float() * rotary.inv_freq.float()  # (T, d_head / 2)
