"""What the architecture diagram labels each block with: parameter counts and live tensor shapes."""

from __future__ import annotations

from collections import defaultdict

from torch import nn

from transformer_viz.config import ModelConfig


def block_keys(path: str) -> list[str]:
    """The diagram blocks a parameter belongs to, outermost first.

    "encoder.layers.1.self_attn.q_proj.weight" -> ["encoder", "encoder.layers.1", "encoder.layers.1.self_attn"];
    "src_embed.token_table.weight" -> ["src_embed", "src_embed.token_table"]; "output_proj.bias" -> ["output_proj"].
    """
    parts = path.split(".")
    keys = [parts[0]]
    if len(parts) > 3 and parts[1] == "layers":
        keys += [".".join(parts[:3]), ".".join(parts[:4])]
    elif len(parts) > 2:
        keys.append(".".join(parts[:2]))
    return keys


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Trainable numbers per block: "total", top-level modules ("src_embed", "encoder", "output_proj", ...),
    each layer ("encoder.layers.0") and its sublayers ("encoder.layers.0.self_attn", ".cross_attn", ".ffn",
    ".norm1", ...), the final norms ("encoder.norm", pre-LN only) and embedding parts ("src_embed.token_table").

    Every level sums to the one above it; "total" equals sum(p.numel() for p in model.parameters()).
    """
    counts: dict[str, int] = defaultdict(int)
    for path, parameter in model.named_parameters():
        counts["total"] += parameter.numel()
        for key in block_keys(path):
            counts[key] += parameter.numel()
    return dict(counts)


def block_shapes(config: ModelConfig, src_len: int, tgt_len: int, batch: int = 1) -> dict[str, str]:
    """The shape text of what each diagram block produces, e.g. {"src_embed": "(1, 7, 64)", ...}.

    Attention blocks show their weights (batch, heads, q_len, k_len); feed-forward blocks their hidden
    activation (batch, seq_len, d_ff); everything else the residual stream (batch, seq_len, d_model).
    """
    b, s, t, d, h = batch, src_len, tgt_len, config.d_model, config.n_heads

    def text(*dims: int) -> str:
        return f"({', '.join(str(n) for n in dims)})"

    return {
        "src_tokens": text(b, s),
        "src_embed": text(b, s, d),
        "encoder.self_attn": text(b, h, s, s),
        "encoder.ffn": text(b, s, config.d_ff),
        "encoder.layer": text(b, s, d),
        "memory": text(b, s, d),
        "tgt_tokens": text(b, t),
        "tgt_embed": text(b, t, d),
        "decoder.self_attn": text(b, h, t, t),
        "decoder.cross_attn": text(b, h, t, s),
        "decoder.ffn": text(b, t, config.d_ff),
        "decoder.layer": text(b, t, d),
        "logits": text(b, t, config.tgt_vocab_size),
        "probabilities": text(b, config.tgt_vocab_size),
    }
