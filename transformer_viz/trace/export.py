"""A trace outside the app: a .npz file, a tidy pandas table of the attention weights, BertViz's arguments.

Reached through the `Trace`'s methods (`to_npz`, `Trace.from_npz`, `to_dataframe`, `to_bertviz`).
The .npz file holds every tensor under "tensor/<name>" and one JSON string "meta" (tokens,
config, intervention); it loads without pickles, so a file from elsewhere cannot run code.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np
import torch
from numpy.lib.npyio import NpzFile

from transformer_viz.config import ModelConfig
from transformer_viz.trace.intervention import Intervention
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name, token_labels

FORMAT = "transformer_viz.trace"
VERSION = 1
TENSOR_PREFIX = "tensor/"


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
    arrays = {f"{TENSOR_PREFIX}{key}": tensor.numpy() for key, tensor in trace.items()}
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)


def _read(path) -> dict[str, np.ndarray]:
    """Every array of the .npz file at `path`, loaded without pickles; ValueError for anything but such a file."""
    unreadable = (OSError, ValueError, EOFError, zipfile.BadZipFile)
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except unreadable as error:
        raise ValueError(f"{path} is not a trace saved by Trace.to_npz: {error}") from None
    if not isinstance(data, NpzFile):
        raise ValueError(f"{path} is not a trace saved by Trace.to_npz: it holds one array, not an .npz archive.")
    with data:
        try:
            return {key: data[key] for key in data.files}
        except unreadable as error:
            raise ValueError(f"{path} is not a trace saved by Trace.to_npz: {error}") from None


def load_npz(path) -> dict:
    """The fields of the Trace saved by `save_npz` at `path`; ValueError for a file that is not one."""
    arrays = _read(path)
    try:
        meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else None
    except json.JSONDecodeError:
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
    (the positions as text where the trace has no tokens). BertViz 1.4 applies the encoder's layer list to
    the decoder too, so its views fail (IndexError) when the encoder has more layers than the decoder.
    """
    layers = {kind: tuple(w[:1] for w in _kind_layers(trace, kind)) for kind in ATTENTION_KINDS}
    if not all(layers.values()):
        raise ValueError("BertViz's encoder-decoder view needs every kind of attention; this trace lacks "
                         f"{', '.join(kind for kind, found in layers.items() if not found)}.")
    src_len, tgt_len = layers["encoder_self"][0].shape[-1], layers["decoder_self"][0].shape[-1]
    return {
        "encoder_attention": layers["encoder_self"],
        "decoder_attention": layers["decoder_self"],
        "cross_attention": layers["cross"],
        "encoder_tokens": token_labels(trace.src_tokens, src_len),
        "decoder_tokens": token_labels(trace.tgt_tokens, tgt_len),
    }
