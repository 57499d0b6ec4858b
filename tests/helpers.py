"""Small models, inputs and traces shared by the tests, and what an AppTest session shows."""

import shutil
from contextlib import contextmanager

import numpy as np
import torch
from plotly.colors import hex_to_rgb, sample_colorscale

from transformer_viz import ModelConfig, Trace, Transformer
from transformer_viz.app.server.state import View
from transformer_viz.trace.names import attention_name


def make_model(**overrides) -> Transformer:
    settings = dict(src_vocab_size=20, tgt_vocab_size=22, d_model=16, n_heads=4, n_encoder_layers=2,
                    n_decoder_layers=2, d_ff=32, max_len=24)
    settings.update(overrides)
    return Transformer(ModelConfig(**settings)).eval()


def random_ids(batch: int, length: int, vocab: int, pad_tail: list[int] | None = None) -> torch.Tensor:
    """Random non-pad ids; row b ends with pad_tail[b] pads (pad id 0)."""
    ids = torch.randint(1, vocab, (batch, length))
    for row, n_pad in enumerate(pad_tail or []):
        if n_pad:
            ids[row, length - n_pad:] = 0
    return ids


SRC = ["the", "cat", "sat", "on", "the", "mat", "<pad>", "<pad>"]  # "the" twice, two pads
TGT = ["<bos>", "le", "chat", "sur", "le", "<pad>"]


def real_trace(layers=2, heads=4, src=SRC, tgt=TGT, mask_value=-1e9) -> Trace:
    """A traced forward pass of a tiny random model; "<pad>" tokens get the pad id 0."""
    config = ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=4 * heads, n_heads=heads,
                         n_encoder_layers=layers, n_decoder_layers=layers, d_ff=16, max_len=32, mask_value=mask_value)
    model = Transformer(config).eval()

    def ids(tokens):
        return torch.tensor([[0 if t == "<pad>" else 1 + i % 11 for i, t in enumerate(tokens)]])

    _, trace = model.run_with_trace(ids(src), ids(tgt))
    return trace.with_tokens(src, tgt)


def hand_trace(weights, mask=None, scores=None, masked_scores=None, kind="encoder_self") -> Trace:
    """A one-layer trace built by hand: weights, scores, masked_scores (heads, q_len, k_len), mask (q_len, k_len)."""
    weights = torch.as_tensor(np.asarray(weights, np.float32))[None]  # (1, heads, q_len, k_len)
    tensors = {attention_name(kind, 0, "weights"): weights,
               attention_name(kind, 0, "scores"): torch.zeros_like(weights) if scores is None
               else torch.as_tensor(scores)[None],
               attention_name(kind, 0, "mask"): torch.ones(weights.shape[2:], dtype=torch.bool)[None, None]
               if mask is None else torch.as_tensor(np.asarray(mask, bool))[None, None]}
    if masked_scores is not None:
        tensors[attention_name(kind, 0, "masked_scores")] = torch.as_tensor(masked_scores)[None]
    return Trace(tensors)


def layered_trace(kind, layers, masks=None, **context) -> Trace:
    """A trace of attention `kind` built by hand: one (heads, q_len, k_len) weights array per layer, and
    optionally one (q_len, k_len) mask per layer (True = may attend). `context`: Trace fields (tokens)."""
    tensors = {}
    for layer, weights in enumerate(layers):
        tensors[attention_name(kind, layer, "weights")] = torch.as_tensor(np.asarray(weights, np.float32))[None]
        if masks is not None:
            tensors[attention_name(kind, layer, "mask")] = torch.as_tensor(np.asarray(masks[layer], bool))[None, None]
    return Trace(tensors, **context)


def recorded(trace, kind_prefix, leaf):
    return trace[f"{kind_prefix}.{leaf}"][0].numpy()


def tile(z, layer, head, q_len, k_len, gap):
    return z[layer * (q_len + gap): layer * (q_len + gap) + q_len, head * (k_len + gap): head * (k_len + gap) + k_len]


def rgb(colour: str) -> tuple[float, ...]:
    """"#c8c8c8", "rgb(1, 2, 3)" or "rgba(1, 2, 3, 0.5)" -> (r, g, b) or (r, g, b, alpha)."""
    if colour.startswith("#"):
        return tuple(hex_to_rgb(colour))
    return tuple(float(value) for value in colour[colour.index("(") + 1:-1].split(","))


def drawn_alpha(scatter) -> float:
    """How opaque a scatter's markers are drawn at most: as plotted, selected or unselected."""
    colour = rgb(scatter.marker.color)
    alpha = colour[3] if len(colour) == 4 else 1.0
    plain = 1.0 if scatter.marker.opacity is None else scatter.marker.opacity
    states = [s.marker.opacity for s in (scatter.selected, scatter.unselected) if s.marker.opacity is not None]
    return (1.0 if scatter.opacity is None else scatter.opacity) * alpha * max([plain, *states])


def scale_colours(colorscale, fractions) -> list[tuple[float, ...]]:
    """The (r, g, b) a heatmap's colour scale draws at these fractions of its range (0 = zmin, 1 = zmax)."""
    return [rgb(c) for c in sample_colorscale([list(step) for step in colorscale], list(fractions))]



@contextmanager
def corrupt_reverse_checkpoint(folder, monkeypatch):
    """While inside: the shipped checkpoints are read from `folder`, whose reverse weights are not a safetensors file
    (its metadata is the real one). Streamlit's resource caches are cleared on the way in and out."""
    import streamlit as st

    import transformer_viz.weights.pretrained as pretrained

    shutil.copy(pretrained.CHECKPOINT_DIR / "reverse.json", folder / "reverse.json")
    (folder / "reverse.safetensors").write_bytes(b"\x00not a safetensors file")
    monkeypatch.setattr(pretrained, "CHECKPOINT_DIR", folder)
    st.cache_resource.clear()
    try:
        yield
    finally:
        st.cache_resource.clear()


def shown(at, field: str):
    """A view field as an AppTest session's page used it: the session's value, or the default of a widget never
    drawn (the sidebar's folded shape and variants)."""
    return at.session_state[field] if field in at.session_state else getattr(View, field)


# A Hugging Face model of each kind, built from a config (devtools/hf_tiny.py): its family, and its weights.
HF_FAMILIES = {"HuggingFaceEncoderDecoder": "bart", "HuggingFaceCausal": "gpt2"}
