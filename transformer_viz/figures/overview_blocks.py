"""What the overview diagram says: its blocks, bottom to top, with live shapes and parameter counts.

`column_rows` gives the tokens, embedding and positional add below a stack; `layer_rows` one
encoder or decoder layer, its LayerNorms placed by the config (pre-LN or post-LN) and its
residual connections as index pairs. `overview` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ROW, THIN = 0.64, 0.36  # sublayer height, norm / add height (data units)


@dataclass
class Row:
    """One block of a column: `key` names its shape (e.g. "encoder.norm1"), `page` the app page or None."""

    key: str
    style: str
    label: str
    detail: str = ""
    height: float = ROW
    page: str | None = None
    hover: str = ""
    heads: int = 0
    add: bool = False  # drawn as a ⊕ circle


def params(counts: Mapping[str, int], key: str) -> str:
    """"16,640 params" for a block of parameter_counts; "" when it has none."""
    return f"{counts[key]:,} params" if key in counts else ""


def join(*parts: str) -> str:
    """The non-empty parts, separated by " · "."""
    return " · ".join(p for p in parts if p)


def layer_rows(config, counts, shapes, stack: str) -> tuple[list[Row], list[tuple[int, int]]]:
    """The rows of one encoder or decoder layer, bottom to top, and (branch start, add row) index pairs."""
    prefix = f"{stack}.layers.0"
    sublayers = [("self_attn", "Self-attention", "attention",
                  "Every source token looks at every source token.")]
    if stack == "decoder":
        sublayers = [("self_attn", "Masked self-attention", "masks",
                      "Each target token looks at itself and earlier target tokens only."),
                     ("cross_attn", "Cross-attention", "attention",
                      "Queries from the target, keys and values from the encoder's memory.")]
    sublayers.append(("ffn", "Feed-forward", None, "The same two-layer MLP at every position (ReLU)."))
    rows, residuals = [], []
    for index, (name, label, page, hover) in enumerate(sublayers, start=1):
        shape = shapes.get(f"{stack}.{name}", "")
        is_attn = name != "ffn"
        what = shape if is_attn else f"hidden {shape}"
        if is_attn:
            hover += f"<br>weights (batch, heads, queries, keys) = {shape}"
        sub = Row(f"{stack}.{name}", "attn" if is_attn else "ffn", label,
                  join(what, params(counts, f"{prefix}.{name}")), page=page, hover=hover,
                  heads=config.n_heads if is_attn else 0)
        norm_key, norm_params = f"{stack}.norm{index}", params(counts, f"{prefix}.norm{index}")
        layer_shape = shapes.get(f"{stack}.layer", "")
        start = len(rows)
        if config.norm_first:
            rows += [Row(norm_key, "norm", "LayerNorm", norm_params, THIN,
                         hover="Normalise each token vector before the sublayer (pre-LN)."),
                     sub, Row(f"{stack}.add{index}", "norm", "+", "", THIN, add=True,
                              hover=f"Residual add: x + sublayer(LayerNorm(x)) {layer_shape}")]
        else:
            rows += [sub, Row(norm_key, "norm", "Add & Norm", join(layer_shape, norm_params), THIN,
                              hover="Residual add, then LayerNorm: LayerNorm(x + sublayer(x)) (post-LN).")]
        residuals.append((start, len(rows) - 1))
    return rows, residuals


def column_rows(config, counts, shapes, side: str) -> list[Row]:
    """Rows before a layer stack, bottom to top: tokens, embedding, + positions, optional LayerNorm."""
    embed = f"{side}_embed"
    scale = f" × √{config.d_model}" if config.scale_embeddings else ""
    rows = [Row(f"{side}.tokens", "tokens", "Source tokens" if side == "src" else "Target tokens",
                shapes.get(f"{side}_tokens", "") + ("" if side == "src" else " shifted right"), 0.46, page="embeddings",
                hover="Token ids, one per position." if side == "src" else
                "The decoder reads &lt;bos&gt; + the answer so far and predicts the next token at every position."),
            Row(f"{side}.embed", "embed", f"Token embedding{scale}",
                join(shapes.get(embed, ""), params(counts, f"{embed}.token_table")), page="embeddings",
                hover="Each token id selects one learned row of d_model numbers."
                + (f" Scaled by √{config.d_model}." if scale else "")),
            Row(f"{side}.add_position", "norm", "+", "", THIN, page="embeddings", add=True,
                hover=f"Add the positional encoding ({config.positional}).")]
    if config.embed_norm:
        rows.append(Row(f"{side}.embed_norm", "norm", "LayerNorm", params(counts, f"{embed}.norm"), THIN,
                        page="embeddings", hover="LayerNorm on the embedding sum (BERT style, seed 000)."))
    return rows
