"""Hugging Face decoder-only models (GPT-2, and the Llama layout: Llama, Qwen2, Mistral) traced into the names
of the toy decoder-only model (model/decoder_only.py), as hf.py does for the encoder-decoders.

    from transformer_viz.weights import hf_causal
    model = hf_causal.load("gpt2")                            # a local folder, or a name in the local cache
    run = hf_causal.run_text(model, "The cat sat on the")     # greedy, step by step
    run.trace["decoder.layers.0.self_attn.weights"]           # (1, heads, T, T)

The model runs with its own code (eager attention, float32). Forward hooks record q, k and v; the scores, the
causal and padding mask and the weights are recomputed from them and checked against the model's own
`output_attentions`: a trace that disagrees is an error, never a picture. What a family does not have is not
faked: the Llama layout has no position vector (`tgt_embed.position`); RoPE turns q and k instead, recorded
before (`q`, `k`) and after (`q_rot`, `k_rot`) the turn. Its pairs are dimensions (i, i + d_head/2), the
layout of Hugging Face's `rotate_half`, where the toy turns neighbours (2i, 2i + 1): the same rotation of
permuted weights.

Grouped-query attention: `k`, `v` and `k_rot` hold one head per key/value head (batch, n_kv_heads, T, d_head),
as the model computes them; query head h reads key/value head `config.kv_head_of_query_head[h]`
(= h // (n_heads / n_kv_heads)), and the scores use the keys repeated so (batch, n_heads, T, T).
The FFN's `hidden` is what enters its output projection: GPT-2's GELU(x W1), the Llama layout's SwiGLU product
act(x W_gate) * (x W_up).

What the pages read beyond a trace (the tokenizer as a vocabulary, the logit lens, parameter counts, one head step by
step) is in hf_causal_views.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
from torch import nn

from transformer_viz.analysis.inference import TextRun
from transformer_viz.config import is_whole
from transformer_viz.i18n import translatable_error
from transformer_viz.model.attention import masked_softmax
from transformer_viz.model.masks import decoder_self_mask
from transformer_viz.trace.names import name
from transformer_viz.trace.record import Trace
from transformer_viz.weights.hf import (
    _first,
    _heads,
    _tokens,
    check_weights,
    encode,
    load_pretrained,
    missing_reason,
)
from transformer_viz.weights.hf_causal_limits import LLAMA_LIKE, parameter_count

FAMILIES = ("gpt2", *LLAMA_LIKE)  # model_type values traced here


@dataclass(frozen=True)
class HFCausalConfig:
    """The shape of a Hugging Face decoder-only model, in the names the views read from a decoder-only
    ModelConfig (its one vocabulary is tgt_vocab_size, its layers n_decoder_layers)."""

    name: str
    family: str  # "gpt2", "llama", "qwen2" or "mistral"
    tgt_vocab_size: int
    d_model: int
    n_heads: int
    n_kv_heads: int  # key/value heads (grouped-query attention); GPT-2: n_heads
    d_head: int
    n_decoder_layers: int
    d_ff: int
    max_len: int  # positions the model can read: GPT-2's n_positions, the Llama layout's max_position_embeddings
    pad_id: int | None  # the tokenizer's pad token, else its end token (GPT-2 has no pad token)
    positional: str  # "learned" (GPT-2) or "rotary"
    norm: str  # "layer_norm" (GPT-2) or "rms_norm"
    architecture: str = "decoder_only"
    norm_first: bool = True  # both families are pre-LN
    scale_embeddings: bool = False  # neither family scales its token table by √d_model
    embed_norm: bool = False  # nor norms the embeddings before the first layer
    mask_value: float = torch.finfo(torch.float32).min  # what the model adds to a blocked score

    @property
    def empty_rows_even(self) -> bool:
        """A query that may attend to no key spreads its weight over every key (masked_softmax's empty_rows_even)."""
        return True

    @property
    def src_vocab_size(self) -> int:
        return self.tgt_vocab_size

    @property
    def n_encoder_layers(self) -> int:
        """Not used (no encoder), as in a decoder-only ModelConfig: a Trace asks every config for a positive count."""
        return 1

    @property
    def score_scale(self) -> float:
        """What q·k is divided by: √d_head (load refuses GPT-2 configs that scale otherwise)."""
        return math.sqrt(self.d_head)

    @property
    def kv_head_of_query_head(self) -> tuple[int, ...]:
        """The key/value head each query head reads: h // (n_heads / n_kv_heads), as transformers' repeat_kv."""
        group = self.n_heads // self.n_kv_heads
        return tuple(head // group for head in range(self.n_heads))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class HFCausalModel:
    """A loaded Hugging Face decoder-only model, its tokenizer and its shape."""

    model: nn.Module
    tokenizer: object
    config: HFCausalConfig

    @property
    def family(self) -> str:
        return self.config.family


def check_config(hub_config, name_or_path: str) -> int:
    """The parameters of a config traced here (sizes checked, nothing built); TranslatableError otherwise."""
    model_type = getattr(hub_config, "model_type", "")
    if model_type not in FAMILIES:
        raise translatable_error("hf.causal_family", model_type=model_type)
    if model_type == "gpt2":
        for option, wanted in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                               ("add_cross_attention", False)):
            if bool(getattr(hub_config, option, wanted)) != wanted:
                raise translatable_error("hf.gpt2_option", name=name_or_path, option=option, value=not wanted)
    return parameter_count(hub_config, name_or_path)


def config_of(hf_model: nn.Module, tokenizer, name_or_path: str) -> HFCausalConfig:
    hub = hf_model.config
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if hub.model_type == "gpt2":
        return HFCausalConfig(name_or_path, "gpt2", hub.vocab_size, hub.n_embd, hub.n_head, hub.n_head,
                              hub.n_embd // hub.n_head, hub.n_layer, hub.n_inner or 4 * hub.n_embd, hub.n_positions,
                              pad, "learned", "layer_norm")
    d_head = getattr(hub, "head_dim", None) or hub.hidden_size // hub.num_attention_heads
    return HFCausalConfig(name_or_path, hub.model_type, hub.vocab_size, hub.hidden_size, hub.num_attention_heads,
                          hub.num_key_value_heads, d_head, hub.num_hidden_layers, hub.intermediate_size,
                          hub.max_position_embeddings, pad, "rotary", "rms_norm")


def model_type(name_or_path: str, allow_download: bool = False) -> str | None:
    """The model_type of the config in a folder or the local cache (the Hub only when `allow_download`), read to
    choose the loader: this module's for FAMILIES, hf.load's otherwise. None when there is no config to read: the
    loader reads it again and says why."""
    if missing_reason() is not None or not isinstance(name_or_path, str) or not name_or_path.strip():
        return None
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(name_or_path.strip(), local_files_only=not allow_download)
    except Exception:  # whatever it is, the loader meets it again and names it in a sentence
        return None
    return getattr(config, "model_type", None)


def load(name_or_path: str, allow_download: bool = False, max_parameters: int | None = None) -> HFCausalModel:
    """A GPT-2 or Llama-layout model and its tokenizer, under hf.load's rules: a local folder or the local cache
    (the Hub only when `allow_download`), the config checked and its parameters counted (at most
    `max_parameters`) before any weights are read; float32, eager attention. ValueError with a sentence."""
    model, tokenizer, name_or_path = load_pretrained(name_or_path, allow_download, max_parameters,
                                                     "AutoModelForCausalLM", check_config, dtype=torch.float32)
    model.config._attn_implementation = "eager"
    return HFCausalModel(model.eval(), tokenizer, config_of(model, tokenizer, name_or_path))


# Where each family keeps what the trace records.


def _core(hf: HFCausalModel) -> nn.Module:
    return hf.model.transformer if hf.family == "gpt2" else hf.model.model


def _layers(hf: HFCausalModel) -> nn.ModuleList:
    return _core(hf).h if hf.family == "gpt2" else _core(hf).layers


def _layer_modules(hf: HFCausalModel, layer: nn.Module) -> dict[str, nn.Module]:
    """A layer's modules by role: the projections of q, k and v (GPT-2: one packed "qkv"), the attention's
    output projection, the norm whose input is resid_mid, the FFN's output projection (its input: hidden)."""
    if hf.family == "gpt2":
        return {"qkv": layer.attn.c_attn, "out": layer.attn.c_proj, "resid_mid": layer.ln_2,
                "ffn.hidden": layer.mlp.c_proj}
    attention = layer.self_attn
    return {"q": attention.q_proj, "k": attention.k_proj, "v": attention.v_proj, "out": attention.o_proj,
            "resid_mid": layer.post_attention_layernorm, "ffn.hidden": layer.mlp.down_proj}


@contextmanager
def _hooks(hf: HFCausalModel, into: dict[str, torch.Tensor]) -> Iterator[None]:
    """Forward hooks that copy what the trace needs into `into` while the model runs."""
    handles = []

    def keep(trace_name: str):
        def hook(module, args, output):
            into[trace_name] = output if trace_name == "rotary" else _first(output).detach().clone()
        return hook

    def keep_input(trace_name: str):
        def hook(module, args, kwargs):
            into[trace_name] = (args[0] if args else kwargs["hidden_states"]).detach().clone()
        return hook

    core, layers = _core(hf), _layers(hf)
    gpt2 = hf.family == "gpt2"
    handles.append((core.wte if gpt2 else core.embed_tokens).register_forward_hook(keep("tgt_embed.token")))
    positions = core.wpe if gpt2 else core.rotary_emb  # the learned table, or RoPE's (cos, sin)
    handles.append(positions.register_forward_hook(keep("tgt_embed.position" if gpt2 else "rotary")))
    handles.append(layers[0].register_forward_pre_hook(keep_input("tgt_embed.out"), with_kwargs=True))
    handles.append((core.ln_f if gpt2 else core.norm).register_forward_hook(keep("decoder.out")))
    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_hook(keep(name("decoder", i, "resid_post"))))
        for role, module in _layer_modules(hf, layer).items():
            if role in ("resid_mid", "ffn.hidden"):
                handles.append(module.register_forward_pre_hook(keep_input(name("decoder", i, role)),
                                                                with_kwargs=True))
            else:
                handles.append(module.register_forward_hook(keep(name("decoder", i, "self_attn", role))))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE as the Llama layout pairs dimensions: (i, i + d_head/2) turned by the model's own angles.
    x (batch, heads, T, d_head), cos and sin (batch or 1, T, d_head) -> (batch, heads, T, d_head)."""
    first, second = x.chunk(2, dim=-1)  # (batch, heads, T, d_head / 2) each
    return x * cos[:, None] + torch.cat((-second, first), dim=-1) * sin[:, None]


def attention_mask(hf: HFCausalModel, real: torch.Tensor, layer: int) -> torch.Tensor:
    """The mask a layer's self-attention applies: causal AND the key is a real token (AND within the sliding
    window, where the family has one). real (batch, T) 1 for a real token -> (batch, 1, T, T), True = may attend."""
    mask = decoder_self_mask(real, pad_id=0)  # (batch, 1, T, T)
    window = _sliding_window(hf, layer)
    if window is not None:
        position = torch.arange(real.shape[1])  # (T,)
        mask = mask & (position[:, None] - position[None, :] < window)  # (batch, 1, T, T)
    return mask


def _sliding_window(hf: HFCausalModel, layer: int) -> int | None:
    """Mistral's window (all layers), Qwen2's (the layers whose type is sliding_attention), else None."""
    if hf.family == "mistral":
        return hf.model.config.sliding_window
    return getattr(_layers(hf)[layer].self_attn, "sliding_window", None) if hf.family == "qwen2" else None


def _attention(hf: HFCausalModel, tensors: dict[str, torch.Tensor], layer: int, mask: torch.Tensor,
               own_weights: torch.Tensor) -> None:
    """Record q, k, v per head (k and v per key/value head), RoPE's turned q and k, and the scores, mask, masked
    scores and weights recomputed from them; check the weights against the model's own."""
    config, prefix = hf.config, name("decoder", layer, "self_attn")
    if hf.family == "gpt2":  # c_attn packs q, k and v side by side
        packed = tensors.pop(f"{prefix}.qkv")  # (batch, T, 3 · d_model)
        q, k, v = (_heads(part, config.n_heads) for part in packed.split(config.d_model, dim=-1))
    else:
        q = _heads(tensors[f"{prefix}.q"], config.n_heads)  # (batch, heads, T, d_head)
        k, v = (_heads(tensors[f"{prefix}.{leaf}"], config.n_kv_heads) for leaf in "kv")  # (batch, kv, T, d_head)
    recorded = {"q": q, "k": k, "v": v}
    if config.positional == "rotary":
        cos, sin = tensors["rotary"]  # (batch or 1, T, d_head) each
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        recorded.update(q_rot=q, k_rot=k)
    keys = k.repeat_interleave(config.n_heads // config.n_kv_heads, dim=1)  # (batch, heads, T, d_head)
    scores = q @ keys.transpose(-2, -1) / config.score_scale  # (batch, heads, T, T)
    masked, weights = masked_softmax(scores, mask, config.mask_value, config.empty_rows_even)  # (batch, heads, T, T)
    check_weights(prefix, weights, own_weights)
    recorded.update(mask=mask, scores=scores, masked_scores=masked, weights=weights)
    tensors.update({f"{prefix}.{leaf}": tensor for leaf, tensor in recorded.items()})


def _embeddings(hf: HFCausalModel, tensors: dict[str, torch.Tensor]) -> None:
    """GPT-2: token + position is what enters the first layer; `tgt_embed.position` keeps batch row 0's
    (T, d_model) (a left-padded row's positions count its real tokens only). The Llama layout: none."""
    tensors.pop("rotary", None)
    if hf.family != "gpt2":
        return
    position = tensors["tgt_embed.position"]  # (batch or 1, T, d_model)
    if not torch.allclose(tensors["tgt_embed.token"] + position, tensors["tgt_embed.out"], atol=1e-5):
        raise RuntimeError("tgt_embed: token + position is not what enters the first layer; not traced correctly.")
    tensors["tgt_embed.position"] = position[0]  # (T, d_model)


def trace_names(hf: HFCausalModel) -> list[str]:
    """The names a trace records, in the toy decoder-only model's order."""
    config = hf.config
    attention = ["q", "k", "v", "mask", *(("q_rot", "k_rot") if config.positional == "rotary" else ()), "scores",
                 "masked_scores", "weights", "out"]
    names = ["tgt_embed.token", *(("tgt_embed.position",) if config.positional == "learned" else ()),
             "tgt_embed.out"]
    for i in range(config.n_decoder_layers):
        names += [name("decoder", i, "self_attn", leaf) for leaf in attention]
        names += [name("decoder", i, leaf) for leaf in ("resid_mid", "ffn.hidden", "resid_post")]
    return [*names, "decoder.out", "logits"]


def _checked_ids(hf: HFCausalModel, ids, real) -> torch.Tensor:
    """ValueError unless ids are (batch, T) token ids the model reads and `real` (None: all ones) matches them."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point() or ids.shape[1] < 1:
        raise ValueError("ids must be a (batch, length) tensor of token ids with at least one position.")
    if ids.shape[1] > hf.config.max_len or ids.min() < 0 or ids.max() >= hf.config.tgt_vocab_size:
        raise ValueError(f"ids must be tokens 0 to {hf.config.tgt_vocab_size - 1}, at most {hf.config.max_len} "
                         "positions.")
    real = torch.ones_like(ids) if real is None else real
    if not isinstance(real, torch.Tensor) or real.shape != ids.shape:
        raise ValueError(f"mask must be a tensor of the shape of ids {tuple(ids.shape)}, 1 for a real token.")
    return (real != 0).long()  # (batch, T)


def run_with_trace(hf: HFCausalModel, ids: torch.Tensor, mask: torch.Tensor | None = None
                   ) -> tuple[torch.Tensor, Trace]:
    """One pass: (logits (batch, T, vocab), its Trace). `ids` (batch, T); `mask` (batch, T) 1 for a real token
    (default: all). Each row's positions count its real tokens, as `generate` does, so a row padded on either
    side computes on its real tokens what it computes alone."""
    real = _checked_ids(hf, ids, mask)
    positions = (real.cumsum(-1) - 1).masked_fill(real == 0, 0)  # (batch, T)
    tensors: dict[str, torch.Tensor] = {}
    with torch.no_grad(), _hooks(hf, tensors):
        output = hf.model(input_ids=ids, attention_mask=real, position_ids=positions, output_attentions=True,
                          use_cache=False, return_dict=True)
    for layer in range(hf.config.n_decoder_layers):
        _attention(hf, tensors, layer, attention_mask(hf, real, layer), output.attentions[layer])
    _embeddings(hf, tensors)
    tensors["logits"] = output.logits  # (batch, T, vocab)
    return output.logits, Trace({n: tensors[n] for n in trace_names(hf)}, config=hf.config)


def end_ids(hf: HFCausalModel) -> set[int]:
    """The tokens that end a generation: the generation config's (Llama 3 has several), else the tokenizer's."""
    eos = getattr(hf.model.generation_config, "eos_token_id", None)
    eos = hf.tokenizer.eos_token_id if eos is None else eos
    return set(eos) if isinstance(eos, (list, tuple)) else ({eos} if eos is not None else set())


def greedy(hf: HFCausalModel, ids: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding as the Decoding page explains it: each step appends the most likely next token (the model's
    own logits, none of a generation config's rules), until an end token. (1, P) -> (1, P + new)."""
    ends = end_ids(hf)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = hf.model(input_ids=ids, use_cache=False).logits  # (1, length, vocab)
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)  # (1, length + 1)
            if ids[0, -1].item() in ends:
                break
    return ids


def run_text(hf: HFCausalModel, prompt: str, max_new_tokens: int = 32, max_len: int = 64, *,
             tgt_text: str | None = None, pad_to: int = 0) -> TextRun:
    """`prompt` continued greedily by up to `max_new_tokens` tokens (prompt and answer within `max_len` and the
    model's positions), with the trace of the last step: `run.step(k)` is what step k computed. Given `tgt_text`,
    the prompt and that answer are one teacher-forced pass instead, right-padded to `pad_to` positions (shown as
    <pad>, masked as a batch masks them)."""
    if not is_whole(max_new_tokens) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a whole number of at least 1, got {max_new_tokens!r}.")
    max_len = min(max_len, hf.config.max_len)
    ids = encode(hf, prompt, max_len - 1)  # (1, P): room for one new token at least
    prompt_len = ids.shape[1]
    if tgt_text:
        return _teacher_forced(hf, ids, tgt_text, max_len, pad_to)
    generated = greedy(hf, ids, min(max_new_tokens, max_len - prompt_len))  # (1, P + n)
    n_steps = generated.shape[1] - prompt_len
    _, trace = run_with_trace(hf, generated[:, :-1])  # the last step read all but the last token
    tokens = _tokens(hf, generated[0])
    answer = generated[0, prompt_len:]
    answer = answer[:-1] if answer[-1].item() in end_ids(hf) else answer
    output = hf.tokenizer.decode(answer, skip_special_tokens=True)
    return TextRun(trace.with_tokens(None, tokens[:-1]), output, tokens[prompt_len:], n_steps, (),
                   prompt_len=prompt_len)


def _teacher_forced(hf: HFCausalModel, prompt: torch.Tensor, tgt_text: str, max_len: int, pad_to: int) -> TextRun:
    """One pass over the prompt (1, P) and the answer `tgt_text` as the tokenizer splits it (no special tokens
    added; cut to the positions left after the prompt: a greedy answer decoded and split again can come out
    longer than it was), then <pad> up to `pad_to` (at most `max_len`) with a mask of 0 there."""
    if not is_whole(pad_to) or pad_to < 0:
        raise ValueError(f"pad_to must be a whole number of positions (0 for no padding), got {pad_to!r}.")
    answer = hf.tokenizer(tgt_text, add_special_tokens=False)["input_ids"][:max_len - prompt.shape[1]]
    ids = torch.cat([prompt, torch.tensor([answer], dtype=torch.long).reshape(1, -1)], dim=1)  # (1, P + A)
    extra = max(0, min(pad_to, max_len) - ids.shape[1])
    pad_id = 0 if hf.config.pad_id is None else hf.config.pad_id
    real = torch.nn.functional.pad(torch.ones_like(ids), (0, extra), value=0)  # (1, length): 1 for a real token
    padded = torch.nn.functional.pad(ids, (0, extra), value=pad_id)  # (1, length)
    _, trace = run_with_trace(hf, padded, real)
    tokens = _tokens(hf, ids[0]) + ("<pad>",) * extra  # GPT-2 pads with its end token: shown as padding
    return TextRun(trace.with_tokens(None, tokens), None, (), 0, (), prompt_len=prompt.shape[1])
