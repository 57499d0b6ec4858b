"""A trace outside the app: a .npz file, a tidy pandas table of the attention weights, the arguments of BertViz's
and CircuitsVis's views, and TransformerLens's names for a decoder-only trace.

Reached through the `Trace`'s methods (`to_npz`, `Trace.from_npz`, `to_dataframe`, `to_bertviz`) and the functions
`circuitsvis_arguments`, `transformerlens_names` and `transformerlens_cache` here (none of those libraries needed).
The .npz file holds every tensor under "tensor/<name>" and one JSON string "meta" (tokens,
config, intervention); it loads without pickles, so a file from elsewhere cannot run code.
"""

from __future__ import annotations

import json
import math
import os
import warnings
import zipfile
import zlib
from contextlib import nullcontext

import numpy as np
import torch

from transformer_viz.config import ModelConfig
from transformer_viz.trace.archive import entry_count, npy_header, read_exactly
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name, check_index, check_kind, name, token_labels

FORMAT = "transformer_viz.trace"
VERSION = 1
TENSOR_PREFIX = "tensor/"
# What a trace file may hold, checked in each .npy header before any array is read. A trace of a model at
# SIZE_LIMITS (6 + 6 layers, d_model 512, 64 tokens, 10,000 words) on one sentence holds 195 tensors, 36 MiB.
MAX_TENSORS = 2048
MAX_FILE_BYTES = 256 * 2**20  # the arrays together, as loaded
MAX_DIMS = 4  # (batch, heads, q_len, k_len)
MAX_META_CHARS = 2**20  # the JSON of tokens, config and names
TENSOR_DTYPES = frozenset(np.dtype(t) for t in ("bool", "float16", "float32", "float64", "int8", "int16", "int32",
                                                "int64", "uint8"))


def _intervention_dict(intervention: Intervention | None) -> dict | None:
    if intervention is None:
        return None
    return {"ablate_heads": sorted(list(h) for h in intervention.ablate_heads), "ablation": intervention.ablation,
            "positions": intervention.positions, "scale": intervention.scale, "look_ahead": intervention.look_ahead}


def _intervention_from(saved, path) -> Intervention:
    """The Intervention `_intervention_dict` wrote; ValueError (naming the file) for anything else."""
    fields = {"ablate_heads", "ablation", "positions", "scale", "look_ahead"}
    if not isinstance(saved, dict) or set(saved) != fields or not isinstance(saved["ablate_heads"], list) or not all(
            isinstance(head, list) for head in saved["ablate_heads"]):
        raise ValueError(f"{path} holds an intervention Trace.to_npz does not write: {saved!r}.")
    return Intervention(**{**saved, "ablate_heads": frozenset(tuple(head) for head in saved["ablate_heads"])})


def save_npz(trace, path) -> None:
    """Write `trace` to `path` (.npz): tensors as recorded (dtype kept), tokens, config and intervention as JSON."""
    if trace.config is not None and not isinstance(trace.config, ModelConfig):
        raise ValueError(f"Only a trace whose config is a ModelConfig can be saved, got {type(trace.config).__name__}.")
    meta = {
        "format": FORMAT, "version": VERSION,
        "config": None if trace.config is None else trace.config.to_dict(),
        "src_tokens": None if trace.src_tokens is None else list(trace.src_tokens),
        "tgt_tokens": None if trace.tgt_tokens is None else list(trace.tgt_tokens),
        "intervention": _intervention_dict(trace.intervention),
        "names": list(trace),
    }
    arrays = {f"{TENSOR_PREFIX}{key}": _saved(tensor) for key, tensor in trace.items()}
    text = json.dumps(meta)

    def refuse(reason: str) -> ValueError:  # what from_npz would not load is not written
        return ValueError(f"This trace cannot be saved as a trace file: {reason}.")

    if len(arrays) > MAX_TENSORS or len(text) > MAX_META_CHARS:
        raise refuse(f"it holds more than {MAX_TENSORS:,} tensors or {MAX_META_CHARS:,} characters of tokens")
    if any("\x00" in key for key in arrays):  # a zip entry's name ends at its first NUL
        raise refuse("a tensor's name holds a NUL character")
    budget = MAX_FILE_BYTES
    for key, array in arrays.items():
        budget -= _checked_size(key, array.shape, array.dtype, budget, refuse)
    np.savez(path, meta=np.array(text), **arrays)


def _saved(tensor: torch.Tensor) -> np.ndarray:
    """A tensor as numpy stores it: on the CPU, out of autograd; a float numpy lacks (bfloat16) as float32."""
    tensor = tensor.detach().cpu()
    try:
        return tensor.numpy()
    except TypeError:  # "Got unsupported ScalarType BFloat16"
        return tensor.float().numpy()


def _read(path) -> dict[str, np.ndarray]:
    """Every array of the .npz file at `path` (or a binary file object), no pickles, each .npy header checked
    against the limits above before its data is read; ValueError for anything but such a file."""

    shown = path if isinstance(path, (str, os.PathLike)) else getattr(path, "name", "This file")

    def refuse(reason: str) -> ValueError:
        return ValueError(f"{shown} is not a trace saved by Trace.to_npz: {reason}.")

    with open(path, "rb") if isinstance(path, (str, os.PathLike)) else nullcontext(path) as file:
        count = entry_count(file)
        if count is None:
            raise refuse("it is not an .npz archive")
        if count > MAX_TENSORS + 1:
            raise refuse(f"it holds {count:,} entries; a trace holds at most {MAX_TENSORS:,} tensors")
        try:
            with zipfile.ZipFile(file) as archive:
                return _arrays(archive, refuse)
        except (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError) as error:
            raise refuse(str(error) or type(error).__name__) from None


def _arrays(archive: zipfile.ZipFile, refuse) -> dict[str, np.ndarray]:
    """The arrays of an open .npz archive, by name; each within its own entry's size and the file's budget."""
    infos = archive.infolist()
    if len({info.filename for info in infos}) != len(infos):
        raise refuse("two of its entries have the same name")
    arrays, budget = {}, MAX_FILE_BYTES
    for info in infos:
        if not info.filename.endswith(".npy"):
            raise refuse(f"its entry {info.filename!r} is not an .npy array")
        key = info.filename.removesuffix(".npy")
        with archive.open(info) as member:
            try:
                shape, fortran, dtype = npy_header(member)
            except ValueError as error:
                raise refuse(f"{key}: {error}") from None
            size = _checked_size(key, shape, dtype, budget, refuse)
            if member.tell() + size != info.file_size:  # the header lies about the data that follows it
                raise refuse(f"the header of {key} announces {shape} {dtype} ({size:,} bytes), but its entry holds "
                             f"{info.file_size - member.tell():,} bytes of data")
            try:
                data = read_exactly(member, size)
            except ValueError as error:
                raise refuse(f"{key}: {error}") from None
        budget -= size
        array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        arrays[key] = array if dtype.isnative else array.astype(dtype.newbyteorder("="))
    return arrays


def _checked_size(key: str, shape: tuple[int, ...], dtype: np.dtype, budget: int, refuse) -> int:
    """The bytes of an array of `shape` and `dtype`, if a trace file may hold it within `budget` bytes."""
    if key == "meta":
        allowed = dtype.kind == "U" and shape == () and dtype.itemsize <= 4 * MAX_META_CHARS
    else:
        allowed = dtype.newbyteorder("=") in TENSOR_DTYPES and len(shape) <= MAX_DIMS
    if not allowed or any(n < 0 for n in shape):
        raise refuse(f"{key} is an array of {dtype} of shape {shape}, which a trace does not hold")
    size = math.prod(shape) * dtype.itemsize
    if size > budget:
        raise refuse(f"its arrays would take more than {MAX_FILE_BYTES // 2**20} MiB, the most a trace file holds "
                     f"({key}: {shape} {dtype})")
    return size


def load_npz(path) -> dict:
    """The fields of the Trace saved by `save_npz` at `path`; ValueError for a file that is not one."""
    arrays = _read(path)
    try:
        meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else None
    except (json.JSONDecodeError, RecursionError):  # nesting deeper than json recurses
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{path} is not a trace saved by Trace.to_npz (format {FORMAT}, version {VERSION}).")
    names = meta.get("names")
    if not isinstance(names, list) or sorted(f"{TENSOR_PREFIX}{n}" for n in names) != sorted(arrays):
        raise ValueError(f"{path} lists other tensors than it holds: it is not a trace saved by Trace.to_npz.")
    tensors = {n: torch.from_numpy(arrays[f"{TENSOR_PREFIX}{n}"]) for n in names}
    config = None if meta.get("config") is None else ModelConfig.from_dict(meta["config"])
    intervention = None if meta.get("intervention") is None else _intervention_from(meta["intervention"], path)
    src, tgt = meta.get("src_tokens"), meta.get("tgt_tokens")
    return dict(tensors=tensors, config=config, src_tokens=None if src is None else tuple(map(str, src)),
                 tgt_tokens=None if tgt is None else tuple(map(str, tgt)), intervention=intervention)


def _kind_layers(trace, kind: str) -> list[torch.Tensor]:
    """Every recorded weights tensor of `kind`, first layer to last: (batch, heads, q_len, k_len) each."""
    return [trace[attention_name(kind, layer, "weights")] for layer in range(trace.n_layers(kind))
            if attention_name(kind, layer, "weights") in trace]


def attention_table(trace):
    """Every attention weight of batch item 0 as a tidy pandas DataFrame, one row per weight.

    Columns: name (the trace name), kind, layer, head, query, key (all counting from 0, as the trace
    does), query_token, key_token (display strings; None where the trace has none) and value.
    """
    import pandas as pd

    frames = []
    for kind in ATTENTION_KINDS:
        q_tokens, k_tokens = trace.attention_tokens(kind)
        for layer, weights in enumerate(_kind_layers(trace, kind)):
            heads, q_len, k_len = weights.shape[1:]
            head, query, key = (a.ravel() for a in np.indices((heads, q_len, k_len)))
            frames.append(pd.DataFrame({
                "name": attention_name(kind, layer, "weights"), "kind": kind, "layer": layer, "head": head,
                "query": query, "key": key,
                "query_token": _tokens_at(q_tokens, query), "key_token": _tokens_at(k_tokens, key),
                "value": weights[0].numpy().ravel(),
            }))
    columns = ["name", "kind", "layer", "head", "query", "key", "query_token", "key_token", "value"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _tokens_at(tokens, positions: np.ndarray) -> np.ndarray:
    """The display string at each position (object array); None where the tokens are unknown or too few."""
    table = np.array([*(tokens or ()), None], dtype=object)
    return table[np.where(positions < len(table) - 1, positions, len(table) - 1)]


def bertviz_arguments(trace) -> dict:
    """Keyword arguments for `bertviz.head_view(**...)` or `bertviz.model_view(**...)`, batch item 0.

    encoder_attention, decoder_attention, cross_attention: tuples of per-layer (1, heads, q_len, k_len)
    tensors (BertViz wants a batch of one); encoder_tokens, decoder_tokens: lists of display strings
    (the positions as text where the trace has no tokens); include_layers: the layers drawn. BertViz has one
    list of layers for the three kinds (version 1.4 takes the encoder's and fails with an IndexError in a
    shallower decoder), so an encoder and a decoder of different depths show the layers both have, with a
    UserWarning naming those left out.

    BertViz's HTML loads require.js, d3 and jQuery from a CDN (cdnjs.cloudflare.com) when it opens: it needs
    the internet and tells that site who looks. The app's own take-home HTML has plotly.js inside and does not.
    """
    layers = {kind: tuple(w[:1] for w in _kind_layers(trace, kind)) for kind in ATTENTION_KINDS}
    if not all(layers.values()):
        raise ValueError("BertViz's encoder-decoder view needs every kind of attention; this trace lacks "
                         f"{', '.join(kind for kind, found in layers.items() if not found)}.")
    shared = min(len(found) for found in layers.values())
    left_out = [f"{kind} layers {shared}-{len(found) - 1}" for kind, found in layers.items() if len(found) > shared]
    if left_out:
        warnings.warn(f"BertViz draws one list of layers for every kind of attention: layers 0-{shared - 1} "
                      f"(counting from 0); left out: {', '.join(left_out)}.", UserWarning, stacklevel=3)
    src_len, tgt_len = layers["encoder_self"][0].shape[-1], layers["decoder_self"][0].shape[-1]
    return {
        "encoder_attention": layers["encoder_self"],
        "decoder_attention": layers["decoder_self"],
        "cross_attention": layers["cross"],
        "encoder_tokens": token_labels(trace.src_tokens, src_len),
        "decoder_tokens": token_labels(trace.tgt_tokens, tgt_len),
        "include_layers": list(range(shared)),
    }


def circuitsvis_arguments(trace, kind: str, layer: int) -> dict:
    """Keyword arguments for CircuitsVis's `circuitsvis.attention.attention_heads(**...)`: every head of one layer
    of self-attention (`kind` "encoder_self" or "decoder_self"; layers count from 0), batch item 0.

    attention: (heads, q_len, k_len) weights; tokens: display strings; attention_head_names: "L0H3" as
    TransformerLens names heads. Cross-attention raises ValueError: attention_heads labels the rows and the
    columns with one token list, so the target's tokens would stand on the source's columns.
    """
    check_kind(kind)
    attention = ATTENTION_KINDS[kind]
    if attention.query_side != attention.key_side:
        raise ValueError(f"CircuitsVis's attention_heads takes one token list for queries and keys, but {kind} "
                         "attention reads the source from the target: its labels would be wrong. Use to_bertviz() "
                         "(cross-attention in its own slot) or the app's Attention page.")
    layer = check_index(layer, trace.n_layers(kind), "layer")
    weights = trace[attention_name(kind, layer, "weights")][0]  # (heads, q_len, k_len)
    tokens, _ = trace.attention_tokens(kind)
    return {"attention": weights, "tokens": token_labels(tokens, weights.shape[-1]),
            "attention_head_names": [f"L{layer}H{head}" for head in range(weights.shape[0])]}


# TransformerLens's hook names (HookedTransformer, run_with_cache) -> this project's trace names, for a decoder-only
# trace ({i}: the layer, from 0). Shapes agree but for q, k, v, rot_q, rot_k: (batch, pos, head_index, d_head) in
# TransformerLens, (batch, heads, pos, d_head) here (transpose(1, 2)); and hook_pos_embed: (batch, pos, d_model)
# there, (pos, d_model) here. hook_attn_scores is TransformerLens's masked scores (blocked ones -inf; here the
# config's mask_value). Not recorded here: hook_z, hook_result, mlp.hook_pre, hook_mlp_out, ln*.hook_scale.
TRANSFORMERLENS_NAMES = {
    "hook_embed": "tgt_embed.token",  # (batch, tgt_len, d_model)
    "hook_pos_embed": "tgt_embed.position",  # not with rotary positions, which add nothing to the stream
    "blocks.{i}.attn.hook_q": "decoder.layers.{i}.self_attn.q",
    "blocks.{i}.attn.hook_k": "decoder.layers.{i}.self_attn.k",
    "blocks.{i}.attn.hook_v": "decoder.layers.{i}.self_attn.v",
    "blocks.{i}.attn.hook_rot_q": "decoder.layers.{i}.self_attn.q_rot",
    "blocks.{i}.attn.hook_rot_k": "decoder.layers.{i}.self_attn.k_rot",
    "blocks.{i}.attn.hook_attn_scores": "decoder.layers.{i}.self_attn.masked_scores",  # (batch, heads, q_len, k_len)
    "blocks.{i}.attn.hook_pattern": "decoder.layers.{i}.self_attn.weights",  # (batch, heads, q_len, k_len)
    "blocks.{i}.hook_attn_out": "decoder.layers.{i}.self_attn.out",  # (batch, tgt_len, d_model)
    "blocks.{i}.hook_resid_mid": "decoder.layers.{i}.resid_mid",  # not in attention-only models
    "blocks.{i}.mlp.hook_post": "decoder.layers.{i}.ffn.hidden",  # (batch, tgt_len, d_ff): after the activation
    "blocks.{i}.hook_resid_post": "decoder.layers.{i}.resid_post",  # (batch, tgt_len, d_model)
    "ln_final.hook_normalized": "decoder.out",  # pre-LN: after the final LayerNorm
}
HEAD_SPLIT_HOOKS = ("hook_q", "hook_k", "hook_v", "hook_rot_q", "hook_rot_k")


def transformerlens_names(trace) -> dict[str, str]:
    """TransformerLens hook name -> trace name, for every tensor of this decoder-only trace that both have.

    blocks.{i}.hook_resid_pre is what enters layer i: `tgt_embed.out` for layer 0, then layer i - 1's
    resid_post. TransformerLens's models are pre-LN: in a post-LN trace (norm_first=False) every
    resid_* here is after its LayerNorm. Layouts: TRANSFORMERLENS_NAMES; `transformerlens_cache` converts.
    """
    if "encoder" in trace.form.stacks:
        raise ValueError("TransformerLens's HookedTransformer is decoder-only (GPT's form): its names fit a "
                         "decoder-only trace, not an encoder-decoder one.")
    config = trace.config
    skip = {"hook_pos_embed"} if getattr(config, "positional", None) == "rotary" else set()
    skip |= {"blocks.{i}.hook_resid_mid"} if getattr(config, "attention_only", False) else set()
    skip |= {"ln_final.hook_normalized"} if getattr(config, "norm_first", True) is False else set()  # no final norm
    table = {hook: ours for hook, ours in TRANSFORMERLENS_NAMES.items() if hook not in skip}
    names = {hook: ours for hook, ours in table.items() if hook.startswith("hook_")}
    for layer in range(trace.n_layers("decoder_self")):
        names[f"blocks.{layer}.hook_resid_pre"] = name("decoder", layer - 1, "resid_post") if layer else "tgt_embed.out"
        names.update((hook.format(i=layer), ours.format(i=layer)) for hook, ours in table.items() if "{i}" in hook)
    names.update((hook, ours) for hook, ours in table.items() if hook.startswith("ln_final."))
    return {hook: ours for hook, ours in names.items() if ours in trace}


def transformerlens_cache(trace) -> dict[str, torch.Tensor]:
    """The tensors of `transformerlens_names(trace)` under TransformerLens's names and in its layout: q, k, v
    (turned or not) as (batch, pos, head_index, d_head), hook_pos_embed as (batch, pos, d_model); views, no copies."""
    cache = {}
    for hook, ours in transformerlens_names(trace).items():
        tensor = trace[ours]
        if hook.endswith(HEAD_SPLIT_HOOKS):
            tensor = tensor.transpose(1, 2)  # (batch, tgt_len, heads, d_head)
        elif hook == "hook_pos_embed":
            tensor = tensor.expand(trace["tgt_embed.token"].shape[0], -1, -1)  # (batch, tgt_len, d_model)
        cache[hook] = tensor
    return cache
