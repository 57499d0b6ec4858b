"""Hugging Face encoder-decoders (Marian, BART, T5) traced into the same names the views read.

An optional extra (`pip install '.[hf]'` in the project's folder). Nothing downloads unless asked (`allow_download`).

    from transformer_viz.weights import hf
    model = hf.load("Helsinki-NLP/opus-mt-en-zh")          # a local folder, or a name in the local cache
    run = hf.run_text(model, "The cat sat on the mat.")     # greedy, step by step as the app shows it
    run.trace["decoder.layers.0.cross_attn.weights"]        # (1, H, T, S), as for the toy models

The model runs with its own code (eager attention). Forward hooks on its projections record q, k and v; the
scores, masks and weights are recomputed from them as the views define them (Q·Kᵀ scaled, the mask as applied,
softmax) and checked against the model's own `output_attentions`: a trace that disagrees is an error, never a
picture. What a family does not have is not faked: T5 has no positional encoding (a learned relative bias is
added to each self-attention score instead, and is part of its recorded scores), so its trace has no
`*.position`.
"""

from __future__ import annotations

import math
import pickle
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
from torch import nn

from transformer_viz.analysis.inference import TextRun
from transformer_viz.errors import TranslatableError
from transformer_viz.i18n import translatable_error
from transformer_viz.model.attention import masked_softmax
from transformer_viz.model.masks import decoder_self_mask, padding_mask
from transformer_viz.trace.names import ATTENTION_KINDS, name
from transformer_viz.trace.record import Trace
from transformer_viz.weights.hf_limits import parameter_count

FAMILIES = ("marian", "bart", "t5")  # model_type values traced here (mt5 and umt5 trace as t5)
T5_LIKE = ("t5", "mt5")
WEIGHTS_TOLERANCE = 1e-4  # recomputed vs the model's own attention weights (float32)
INSTALL = "pip install '.[hf]'"  # the package is not on PyPI: its folder, or its wheel's path + [hf]


def _error(kind: str, **values) -> TranslatableError:
    """hf's ValueErrors: TranslatableError "hf.<kind>", its sentences the catalogs' "detail.hf.<kind>"."""
    return translatable_error(f"hf.{kind}", **values)


def missing_reason() -> str | None:
    """Why Hugging Face models cannot be traced here (None: they can)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return f"the Hugging Face extra is not installed ({INSTALL})"
    return None


@dataclass(frozen=True)
class HFConfig:
    """The shape of a Hugging Face model, in the names the views read from a ModelConfig."""

    name: str
    family: str  # "marian", "bart" or "t5"
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int
    n_heads: int
    d_head: int  # T5 sets it apart from d_model / n_heads
    n_encoder_layers: int
    n_decoder_layers: int
    d_ff: int
    max_len: int
    pad_id: int
    positional: str  # "sinusoidal_concat" (Marian), "learned" (BART), "relative" (T5: a bias on the scores)
    norm_first: bool
    scale_embeddings: bool
    embed_norm: bool
    mask_value: float = torch.finfo(torch.float32).min  # what the model adds to a blocked score

    @property
    def empty_rows_even(self) -> bool:
        """A query that may attend to no key spreads its weight over every key (masked_softmax's empty_rows_even)."""
        return True

    @property
    def score_scale(self) -> float:
        """What q·k is divided by: √d_head, or 1 for T5, which folds the scale into its initial weights."""
        return 1.0 if self.family == "t5" else math.sqrt(self.d_head)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class HFModel:
    """A loaded Hugging Face encoder-decoder, its tokenizer and its shape."""

    model: nn.Module
    tokenizer: object
    config: HFConfig

    @property
    def family(self) -> str:
        return self.config.family


def family_of(model_type: str) -> str:
    if model_type in T5_LIKE or model_type == "umt5":
        return "t5"
    if model_type in ("marian", "bart"):
        return model_type
    raise _error("family", model_type=model_type)


def config_of(model: nn.Module, name_or_path: str) -> HFConfig:
    hf = model.config
    family = family_of(hf.model_type)
    if family == "t5":
        return HFConfig(name_or_path, family, hf.vocab_size, hf.vocab_size, hf.d_model, hf.num_heads, hf.d_kv,
                        hf.num_layers, hf.num_decoder_layers, hf.d_ff, getattr(hf, "n_positions", 512),
                        hf.pad_token_id, "relative", norm_first=True, scale_embeddings=False, embed_norm=False)
    return HFConfig(name_or_path, family, hf.vocab_size, hf.vocab_size, hf.d_model, hf.encoder_attention_heads,
                    hf.d_model // hf.encoder_attention_heads, hf.encoder_layers, hf.decoder_layers, hf.encoder_ffn_dim,
                    hf.max_position_embeddings, hf.pad_token_id,
                    "sinusoidal_concat" if family == "marian" else "learned", norm_first=False,
                    scale_embeddings=bool(hf.scale_embedding), embed_norm=family == "bart")


def _first_line(error: Exception) -> str:
    """The first line of an error's message that says something, at most 200 characters."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:200]


def load(name_or_path: str, allow_download: bool = False, max_parameters: int | None = None) -> HFModel:
    """The model and tokenizer in a local folder or the local Hugging Face cache (from the Hub only when
    `allow_download`). Its config is read first: a family not traced here, a size beyond HF_SIZE_LIMITS
    (weights/hf_limits.py) or more than `max_parameters` (counted from the config) is refused before anything is
    built or any weights are read. ValueError with a sentence for anything that cannot be loaded."""
    def counted(hub_config, name: str) -> int:
        family_of(getattr(hub_config, "model_type", ""))
        return parameter_count(hub_config, name)  # every size bounded, nothing built

    model, tokenizer, name_or_path = load_pretrained(name_or_path, allow_download, max_parameters,
                                                     "AutoModelForSeq2SeqLM", counted)
    return HFModel(model.eval(), tokenizer, config_of(model, name_or_path))


def load_pretrained(name_or_path: str, allow_download: bool, max_parameters: int | None, auto_class: str,
                    counted: Callable[[object, str], int], **options) -> tuple[nn.Module, object, str]:
    """load's rules for any family: (model with eager attention, tokenizer, the name stripped). `counted(config,
    name)` refuses a config (TranslatableError) or returns its parameter count, before anything is built;
    `auto_class` names the transformers Auto class that builds the model, given `options` too."""
    reason = missing_reason()
    if reason is not None:
        raise _error("missing", reason=reason)
    import transformers
    from huggingface_hub.errors import StrictDataclassError
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise _error("name")
    name_or_path = name_or_path.strip()

    def unavailable(error: Exception) -> TranslatableError:
        return _error("not_on_hub" if allow_download else "not_here", name=name_or_path, cause=_first_line(error))

    try:
        hub_config = AutoConfig.from_pretrained(name_or_path, local_files_only=not allow_download)
    except (StrictDataclassError, TypeError, KeyError, AttributeError) as error:  # a value of the wrong type
        raise _error("config", name=name_or_path, reason=" ".join(str(error).split())[:200]) from None
    except (OSError, ValueError, ImportError) as error:
        raise unavailable(error) from None
    parameters = counted(hub_config, name_or_path)
    if max_parameters is not None and parameters > max_parameters:
        raise _error("too_big", name=name_or_path, parameters=parameters, limit=int(max_parameters))
    try:
        model = getattr(transformers, auto_class).from_pretrained(
            name_or_path, local_files_only=not allow_download, attn_implementation="eager", **options)
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=not allow_download)
    except pickle.UnpicklingError:  # torch.load(weights_only=True) met more than tensors
        raise _error("pickle", name=name_or_path) from None
    except SafetensorError as error:
        raise _error("weights", name=name_or_path, cause=_first_line(error)) from None
    except (OSError, ValueError, ImportError) as error:
        raise unavailable(error) from None
    except (RuntimeError, KeyError, ZeroDivisionError, TypeError, AttributeError, IndexError) as error:
        # a config transformers accepted but cannot build (weights of another shape, an unknown activation, a
        # RoPE variant's missing factors): the folder's fault, said in a sentence
        raise _error("config", name=name_or_path, reason=" ".join(str(error).split())[:200]) from None
    return model, tokenizer, name_or_path


# Where each family keeps what the trace records: (trace name, module, what to take from it).


def _attention_modules(hf: HFModel) -> Iterator[tuple[str, nn.Module, tuple[str, str, str, str]]]:
    """(trace prefix, attention module, names of its q, k, v and output projections) of every attention."""
    if hf.family == "t5":
        projections = ("q", "k", "v", "o")
        for i, block in enumerate(hf.model.encoder.block):
            yield name("encoder", i, "self_attn"), block.layer[0].SelfAttention, projections
        for i, block in enumerate(hf.model.decoder.block):
            yield name("decoder", i, "self_attn"), block.layer[0].SelfAttention, projections
            yield name("decoder", i, "cross_attn"), block.layer[1].EncDecAttention, projections
        return
    projections = ("q_proj", "k_proj", "v_proj", "out_proj")
    for i, layer in enumerate(hf.model.model.encoder.layers):
        yield name("encoder", i, "self_attn"), layer.self_attn, projections
    for i, layer in enumerate(hf.model.model.decoder.layers):
        yield name("decoder", i, "self_attn"), layer.self_attn, projections
        yield name("decoder", i, "cross_attn"), layer.encoder_attn, projections


def _stacks(hf: HFModel) -> dict[str, nn.Module]:
    core = hf.model if hf.family == "t5" else hf.model.model
    return {"encoder": core.encoder, "decoder": core.decoder}


def _layers(stack: nn.Module) -> nn.ModuleList:
    return stack.block if hasattr(stack, "block") else stack.layers


def _residual_modules(hf: HFModel, stack_name: str, i: int, layer: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """(trace name, module whose output is it) of the residual stream inside a layer."""
    if hf.family == "t5":  # pre-LN: each sublayer returns the stream with its output added
        yield name(stack_name, i, "resid_mid"), layer.layer[0]
        if stack_name == "decoder":
            yield name(stack_name, i, "resid_cross"), layer.layer[1]
        return
    yield name(stack_name, i, "resid_mid"), layer.self_attn_layer_norm  # post-LN: the stream is normed
    if stack_name == "decoder":
        yield name(stack_name, i, "resid_cross"), layer.encoder_attn_layer_norm


def _ffn_output(hf: HFModel, layer: nn.Module) -> nn.Module:
    """The FFN's second linear layer: its input is the hidden activation."""
    return layer.layer[-1].DenseReluDense.wo if hf.family == "t5" else layer.fc2


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _last_hidden_state(output) -> torch.Tensor:
    """A stack's output (a ModelOutput, or a tuple) -> its last hidden state (B, L, d_model)."""
    return output[0]


@contextmanager
def _hooks(hf: HFModel, into: dict[str, torch.Tensor]) -> Iterator[None]:
    """Forward hooks that copy what the trace needs into `into` while the model runs."""
    handles = []

    def keep(trace_name: str, take: Callable = _first):
        def hook(module, args, output):
            into[trace_name] = take(output).detach().clone()
        return hook

    def keep_input(trace_name: str):
        def hook(module, args, kwargs):
            into[trace_name] = (args[0] if args else kwargs["hidden_states"]).detach().clone()
        return hook

    for prefix, attention, (q, k, v, out) in _attention_modules(hf):
        for leaf, projection in zip(("q", "k", "v", "out"), (q, k, v, out), strict=True):
            handles.append(getattr(attention, projection).register_forward_hook(keep(f"{prefix}.{leaf}")))
    for stack_name, stack in _stacks(hf).items():
        side = "src_embed" if stack_name == "encoder" else "tgt_embed"
        layers = _layers(stack)
        handles.append(layers[0].register_forward_pre_hook(keep_input(f"{side}.out"), with_kwargs=True))
        if stack_name == "decoder":  # what the stack returns (T5's: after its final norm), the readout's input
            handles.append(stack.register_forward_hook(keep("decoder.out", take=_last_hidden_state)))
        if hf.family != "t5":
            handles.append(stack.embed_tokens.register_forward_hook(keep(f"{side}.token")))
            handles.append(stack.embed_positions.register_forward_hook(keep(f"{side}.position")))
        for i, layer in enumerate(layers):
            handles.append(layer.register_forward_hook(keep(name(stack_name, i, "resid_post"))))
            for trace_name, module in _residual_modules(hf, stack_name, i, layer):
                handles.append(module.register_forward_hook(keep(trace_name)))
            handles.append(_ffn_output(hf, layer).register_forward_pre_hook(
                keep_input(name(stack_name, i, "ffn", "hidden")), with_kwargs=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, L, H·Dh) -> (B, H, L, Dh)"""
    batch, length, _ = x.shape
    return x.view(batch, length, n_heads, -1).transpose(1, 2)


def _position_bias(hf: HFModel, stack_name: str, q_len: int, k_len: int) -> torch.Tensor:
    """T5's learned relative position bias of a stack's self-attention: (1, H, q_len, k_len)."""
    first = _layers(_stacks(hf)[stack_name])[0].layer[0].SelfAttention
    with torch.no_grad():
        return first.compute_bias(q_len, k_len)


def _attention(hf: HFModel, tensors: dict[str, torch.Tensor], prefix: str, mask: torch.Tensor,
               bias: torch.Tensor | None, own_weights: torch.Tensor) -> None:
    """Record q, k, v per head and the scores, mask, masked scores and weights recomputed from them; check the
    weights against the model's own."""
    config = hf.config
    q, k, v = (_heads(tensors[f"{prefix}.{leaf}"], config.n_heads) for leaf in "qkv")  # (B, H, L, Dh)
    scores = q @ k.transpose(-2, -1) / config.score_scale  # (B, H, Lq, Lk)
    if bias is not None:
        scores = scores + bias
    masked, weights = masked_softmax(scores, mask, config.mask_value, config.empty_rows_even)  # (B, H, Lq, Lk) each
    check_weights(prefix, weights, own_weights)
    tensors.update({f"{prefix}.q": q, f"{prefix}.k": k, f"{prefix}.v": v, f"{prefix}.scores": scores,
                    f"{prefix}.mask": mask, f"{prefix}.masked_scores": masked, f"{prefix}.weights": weights})


def check_weights(prefix: str, weights: torch.Tensor, own_weights: torch.Tensor) -> None:
    """RuntimeError unless the recomputed `weights` (B, H, Lq, Lk) are the model's own on every query row."""
    difference = (weights - own_weights).abs().max().item()
    if not difference <= WEIGHTS_TOLERANCE:
        raise RuntimeError(f"{prefix}: the weights recomputed from q and k differ from the model's own by "
                           f"{difference:.2g}; this model is not traced correctly.")


def run_with_trace(hf: HFModel, src_ids: torch.Tensor, tgt_ids: torch.Tensor, src_mask: torch.Tensor | None = None,
                   tgt_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, Trace]:
    """One teacher-forced pass: (logits (B, T, vocab), its Trace). `src_ids` (B, S), `tgt_ids` (B, T) are the
    encoder's and decoder's inputs; the masks (B, S) / (B, T) are 1 for a real token (default: all)."""
    src_mask = torch.ones_like(src_ids) if src_mask is None else src_mask
    tgt_mask = torch.ones_like(tgt_ids) if tgt_mask is None else tgt_mask
    tensors: dict[str, torch.Tensor] = {}
    with torch.no_grad(), _hooks(hf, tensors):
        output = hf.model(input_ids=src_ids, attention_mask=src_mask, decoder_input_ids=tgt_ids,
                          decoder_attention_mask=tgt_mask, output_attentions=True, use_cache=False, return_dict=True)
    source_len, target_len = src_ids.shape[1], tgt_ids.shape[1]
    # The attention masks are 1 for a real token: as token ids with pad id 0, they give the model's own masks.
    src_keys = padding_mask(src_mask, pad_id=0)  # (B, 1, 1, S)
    masks = {
        "encoder_self": src_keys.expand(-1, 1, source_len, source_len),
        "decoder_self": decoder_self_mask(tgt_mask, pad_id=0),  # (B, 1, T, T)
        "cross": src_keys.expand(-1, 1, target_len, source_len),
    }
    biases = {"encoder_self": None, "decoder_self": None, "cross": None}
    if hf.family == "t5":
        biases["encoder_self"] = _position_bias(hf, "encoder", source_len, source_len)
        biases["decoder_self"] = _position_bias(hf, "decoder", target_len, target_len)
    own = {"encoder_self": output.encoder_attentions, "decoder_self": output.decoder_attentions,
           "cross": output.cross_attentions}
    for kind, stack, sublayer in (("encoder_self", "encoder", "self_attn"), ("decoder_self", "decoder", "self_attn"),
                                  ("cross", "decoder", "cross_attn")):
        n_layers = hf.config.n_encoder_layers if stack == "encoder" else hf.config.n_decoder_layers
        for i in range(n_layers):
            _attention(hf, tensors, name(stack, i, sublayer), masks[kind], biases[kind], own[kind][i])
    for side in ("src_embed", "tgt_embed"):
        _embeddings(hf, tensors, side)
    tensors["encoder.out"] = output.encoder_last_hidden_state
    tensors["decoder.out"] = tensors.pop("decoder.out")  # recorded by a hook; listed after encoder.out, as before
    tensors["logits"] = output.logits
    return output.logits, Trace(tensors, config=hf.config)


def _embeddings(hf: HFModel, tensors: dict[str, torch.Tensor], side: str) -> None:
    """token and position of one side as the views define them: token·scale + position = what is summed."""
    if hf.family == "t5":  # the shared table, unscaled, and no positions: what enters the first layer is the token
        tensors[f"{side}.token"] = tensors[f"{side}.out"]
        return
    position = tensors[f"{side}.position"]
    tensors[f"{side}.position"] = position[0] if position.dim() == 3 else position  # (L, D)
    stack = _stacks(hf)["encoder" if side == "src_embed" else "decoder"]
    token = tensors[f"{side}.token"] * getattr(stack, "embed_scale", 1.0)  # (B, L, D); BART's table scales itself
    tensors[f"{side}.token"] = token
    if not hf.config.embed_norm and not torch.allclose(token + tensors[f"{side}.position"], tensors[f"{side}.out"],
                                                       atol=1e-5):
        raise RuntimeError(f"{side}: token + position is not what enters the first layer; not traced correctly.")


def _tokens(hf: HFModel, ids: torch.Tensor) -> tuple[str, ...]:
    """The tokenizer's pieces of `ids`; an id past the tokenizer's table (T5's model has 28 more) as "[id]"."""
    pieces = hf.tokenizer.convert_ids_to_tokens(ids.tolist())
    return tuple(piece if isinstance(piece, str) else f"[{i}]" for i, piece in zip(ids.tolist(), pieces, strict=True))


def encode(hf: HFModel, text: str, max_len: int, target: bool = False) -> torch.Tensor:
    """(1, L) ids of `text` as the model's tokenizer encodes it (with its end token); ValueError if empty or
    longer than `max_len`."""
    if not isinstance(text, str) or not text.strip():
        raise _error("empty")
    encoded = hf.tokenizer(text_target=text) if target else hf.tokenizer(text)
    ids = torch.tensor([encoded["input_ids"]], dtype=torch.long)  # (1, L)
    if ids.shape[1] == 0:  # text that tokenizes to nothing (only characters the tokenizer drops)
        raise _error("empty")
    if ids.shape[1] > max_len:
        raise _error("too_long", count=ids.shape[1], limit=max_len)
    return ids


def greedy(hf: HFModel, src_ids: torch.Tensor, src_mask: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding as the Decoding page explains it: each step appends the most likely next token (the model's
    own logits, no generation rules), until the end token. -> (1, 1 + answer) decoder ids from the start token."""
    ids = torch.tensor([[hf.model.config.decoder_start_token_id]])
    with torch.no_grad():
        encoded = hf.model.get_encoder()(input_ids=src_ids, attention_mask=src_mask)
        for _ in range(max_new_tokens):
            logits = hf.model(encoder_outputs=encoded, attention_mask=src_mask, decoder_input_ids=ids,
                              use_cache=False).logits  # (1, len, vocab)
            ids = torch.cat([ids, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            if ids[0, -1].item() == hf.tokenizer.eos_token_id:
                break
    return ids


def run_text(hf: HFModel, src_text: str, tgt_text: str | None = None, max_new_tokens: int = 32, pad_to: int = 0,
             max_len: int = 64) -> TextRun:
    """`src_text` (and `tgt_text`, teacher-forced, if given) through the model with a trace, as
    inference.run_text does for the toy models: without a target, greedy decoding of up to `max_new_tokens`,
    `run.step(k)` being what step k computed. `pad_to` right-pads the source (and a teacher-forced target) with the
    pad token, as a batch would."""
    src_ids = encode(hf, src_text, max_len)
    src_mask = torch.ones_like(src_ids)
    extra = max(0, min(pad_to, max_len) - src_ids.shape[1])
    if extra:
        src_ids = torch.nn.functional.pad(src_ids, (0, extra), value=hf.config.pad_id)
        src_mask = torch.nn.functional.pad(src_mask, (0, extra), value=0)
    start = hf.model.config.decoder_start_token_id
    if tgt_text:
        answer = encode(hf, tgt_text, max_len - 1, target=True)[:, :-1]  # the decoder reads start + answer
        tgt_ids = torch.cat([torch.tensor([[start]]), answer], dim=1)
        tgt_mask = torch.ones_like(tgt_ids)
        extra = max(0, min(pad_to, max_len) - tgt_ids.shape[1])
        tgt_ids = torch.nn.functional.pad(tgt_ids, (0, extra), value=hf.config.pad_id)
        tgt_mask = torch.nn.functional.pad(tgt_mask, (0, extra), value=0)
        _, trace = run_with_trace(hf, src_ids, tgt_ids, src_mask, tgt_mask)
        return TextRun(trace.with_tokens(_tokens(hf, src_ids[0]), _tokens(hf, tgt_ids[0])), None, (), 0, ())
    generated = greedy(hf, src_ids, src_mask, max_new_tokens)  # (1, 1 + answer)
    tokens = _tokens(hf, generated[0])
    eos = hf.tokenizer.eos_token_id
    answer_ids = generated[0, 1:]
    answer_ids = answer_ids[:-1] if len(answer_ids) and answer_ids[-1].item() == eos else answer_ids
    n_steps = generated.shape[1] - 1
    _, trace = run_with_trace(hf, src_ids, generated[:, :n_steps], src_mask)  # the last step read all but the last
    output = hf.tokenizer.decode(answer_ids, skip_special_tokens=True)
    return TextRun(trace.with_tokens(_tokens(hf, src_ids[0]), tokens[:n_steps]), output, tokens[1:], n_steps, ())


def readout(hf: HFModel, stream: torch.Tensor) -> torch.Tensor:
    """The model's own readout of a decoder residual stream (..., d_model) -> logits (..., vocab): T5's final norm
    (and its d_model^-0.5 when the head is tied), BART's and Marian's final logits bias."""
    model = hf.model
    if hf.family == "t5":
        stream = model.decoder.final_layer_norm(stream)
        if model.config.tie_word_embeddings:
            stream = stream * model.config.d_model ** -0.5
        return model.lm_head(stream)
    return model.lm_head(stream) + model.final_logits_bias


def logit_lens(hf: HFModel, trace: Trace):
    """analysis.logit_lens for a Hugging Face model: each decoder layer's stream through the model's readout.
    T5's embeddings row reads the token embedding itself (it has no positions)."""
    from transformer_viz.analysis.measures import LogitLens

    names = ["tgt_embed.out", *(name("decoder", layer, "resid_post") for layer in range(hf.config.n_decoder_layers))]
    with torch.no_grad():
        streams = torch.stack([trace[n][0] for n in names])  # (layers + 1, tgt_len, d_model)
        probabilities = readout(hf, streams).softmax(-1)  # (layers + 1, tgt_len, vocab)
        top, ids = probabilities.max(-1)  # (layers + 1, tgt_len)
    tokens = tuple(_tokens(hf, row) for row in ids)
    return LogitLens(ids.numpy(), top.double().numpy(), tokens, trace.tgt_tokens)


# HF parameter paths as the toy model's blocks (model/summary.py), first match wins: BART and Marian keep theirs
# under "model.", T5 calls a layer a block and numbers its sublayers.
TOY_PATHS = [
    (r"^model\.", ""),
    (r"^(encoder|decoder)\.block\.", r"\1.layers."),
    (r"^shared\.", "src_embed.token_table."),
    (r"^encoder\.embed_tokens\.", "src_embed.token_table."),
    (r"^decoder\.embed_tokens\.", "tgt_embed.token_table."),
    (r"^encoder\.embed_positions\.", "src_embed.position_table."),
    (r"^decoder\.embed_positions\.", "tgt_embed.position_table."),
    (r"^encoder\.layernorm_embedding\.", "src_embed.norm."),
    (r"^decoder\.layernorm_embedding\.", "tgt_embed.norm."),
    (r"^(encoder|decoder)\.(layer_norm|final_layer_norm)\.", r"\1.norm."),
    (r"^lm_head\.", "output_proj."),
    (r"\.layers\.(\d+)\.(self_attn|layer\.0\.SelfAttention)\.", r".layers.\1.self_attn."),
    (r"\.layers\.(\d+)\.(encoder_attn|layer\.1\.EncDecAttention)\.", r".layers.\1.cross_attn."),
    (r"\.layers\.(\d+)\.(fc1|fc2|layer\.\d\.DenseReluDense)\.", r".layers.\1.ffn."),
    (r"\.layers\.(\d+)\.(self_attn_layer_norm|layer\.0\.layer_norm)\.", r".layers.\1.norm1."),
    (r"^decoder\.layers\.(\d+)\.(encoder_attn_layer_norm|layer\.1\.layer_norm)\.", r"decoder.layers.\1.norm2."),
    (r"^encoder\.layers\.(\d+)\.(final_layer_norm|layer\.1\.layer_norm)\.", r"encoder.layers.\1.norm2."),
    (r"^decoder\.layers\.(\d+)\.(final_layer_norm|layer\.2\.layer_norm)\.", r"decoder.layers.\1.norm3."),
]


def toy_path(path: str) -> str:
    """A Hugging Face parameter path under the toy model's block names, e.g. BART's
    "model.encoder.layers.0.fc1.weight" -> "encoder.layers.0.ffn.weight"."""
    path = re.sub(TOY_PATHS[0][0], TOY_PATHS[0][1], path)
    path = re.sub(TOY_PATHS[1][0], TOY_PATHS[1][1], path)
    for pattern, replacement in TOY_PATHS[2:]:
        renamed = re.sub(pattern, replacement, path, count=1)
        if renamed != path:
            return renamed
    return path


def parameter_counts(hf: HFModel) -> dict[str, int]:
    """summary.parameter_counts's blocks for a Hugging Face model (a table shared by encoder, decoder and readout
    is counted once, under the source embedding)."""
    from transformer_viz.model.summary import block_keys

    counts: dict[str, int] = {}
    for path, parameter in hf.model.named_parameters():
        counts["total"] = counts.get("total", 0) + parameter.numel()
        for key in block_keys(toy_path(path)):
            counts[key] = counts.get(key, 0) + parameter.numel()
    return counts


def head_walkthrough(hf: HFModel, trace: Trace, kind: str, layer: int, head: int):
    """walkthrough.head_walkthrough for a Hugging Face model: one head recomputed from what entered the attention
    and the model's own projections, checked against the trace. T5's self-attention adds its learned relative
    position bias to the scores (a step of its own); its cross-attention has none."""
    from transformer_viz.analysis.walkthrough import AttentionProjections, attention_input, walk_head
    from transformer_viz.trace.names import check_index, check_kind

    check_kind(kind)
    config = hf.config
    stack = ATTENTION_KINDS[kind].stack
    layer = check_index(layer, config.n_encoder_layers if stack == "encoder" else config.n_decoder_layers,
                        f"{stack} layer")
    head = check_index(head, config.n_heads, "head")
    prefix = name(stack, layer, ATTENTION_KINDS[kind].sublayer)
    attention, projection_names = next((module, names) for trace_name, module, names in _attention_modules(hf)
                                       if trace_name == prefix)
    q, k, v, out = (getattr(attention, projection) for projection in projection_names)
    block = _layers(_stacks(hf)[stack])[layer]
    source = attention_input(kind, layer, config.norm_first)  # pre-LN (T5): the sublayer's own norm first
    x = trace[source.recorded][0].float()  # (q_len, d_model)
    position_bias = None
    if source.norm:
        with torch.no_grad():
            x = block.layer[1 if kind == "cross" else 0].layer_norm(x)  # (q_len, d_model)
    if hf.family == "t5" and kind != "cross":
        position_bias = _position_bias(hf, stack, len(x), len(x))[0]  # (H, q_len, k_len)
    projections = AttentionProjections(q, k, v, out, config.n_heads, config.d_head, config.score_scale,
                                       config.mask_value, config.empty_rows_even)
    return walk_head(projections, trace, kind, layer, head, (x, source), config.norm_first, position_bias)
