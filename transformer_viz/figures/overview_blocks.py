"""What the overview diagram says: its blocks, bottom to top, with live shapes and parameter counts.

`column_rows` gives the tokens, embedding and positional add below a stack; `layer_rows` one
encoder or decoder layer, its LayerNorms placed by the config (pre-LN or post-LN) and its
residual connections as index pairs. `overview` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from transformer_viz.i18n import text
from transformer_viz.trace.form import form_of
from transformer_viz.trace.names import ATTENTION_KINDS

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


def params(counts: Mapping[str, int], key: str, lang: str = "en") -> str:
    """"16,640 params" for a block of parameter_counts; "" when it has none."""
    return text("diagram.params", lang, n=counts[key]) if key in counts else ""


def join(*parts: str) -> str:
    """The non-empty parts, separated by " · "."""
    return " · ".join(p for p in parts if p)


def layer_rows(config, counts, shapes, stack: str, lang: str = "en") -> tuple[list[Row], list[tuple[int, int]]]:
    """The rows of one encoder or decoder layer, bottom to top, and (branch start, add row) index pairs."""
    prefix = f"{stack}.layers.0"
    form = form_of(config)
    # Its attentions in the model's order, each with the page that shows it best: the decoder's masked
    # self-attention the Masks page, unless it is the attention that reads the input (a decoder-only model's).
    sublayers = [(attention.sublayer, f"{stack}.{attention.sublayer}",
                  "masks" if kind == "decoder_self" and kind != form.aligning_kind else "attention")
                 for kind, attention in ATTENTION_KINDS.items() if attention.stack == stack and form.has_kind(kind)]
    if not getattr(config, "attention_only", False):
        sublayers.append(("ffn", "ffn", None))
    rows, residuals = [], []
    for index, (name, diagram_key, page) in enumerate(sublayers, start=1):
        shape = shapes.get(f"{stack}.{name}", "")
        is_attn = name != "ffn"
        what = shape if is_attn else text("diagram.hidden", lang, shape=shape)
        hover = text(f"diagram.{diagram_key}.hover", lang)
        if is_attn:
            hover += "<br>" + text("diagram.weights_shape", lang, shape=shape)
        sub = Row(f"{stack}.{name}", "attn" if is_attn else "ffn", text(f"diagram.{diagram_key}", lang),
                  join(what, params(counts, f"{prefix}.{name}", lang)), page=page, hover=hover,
                  heads=config.n_heads if is_attn else 0)
        norm_key, norm_params = f"{stack}.norm{index}", params(counts, f"{prefix}.norm{index}", lang)
        layer_shape = shapes.get(f"{stack}.layer", "")
        start = len(rows)
        if config.norm_first:
            rows += [Row(norm_key, "norm", "LayerNorm", norm_params, THIN, hover=text("diagram.pre_norm.hover", lang)),
                     sub, Row(f"{stack}.add{index}", "norm", "+", "", THIN, add=True,
                              hover=text("diagram.pre_add.hover", lang, shape=layer_shape))]
        else:
            rows += [sub, Row(norm_key, "norm", text("diagram.add_norm", lang), join(layer_shape, norm_params), THIN,
                              hover=text("diagram.add_norm.hover", lang))]
        residuals.append((start, len(rows) - 1))
    return rows, residuals


def column_rows(config, counts, shapes, side: str, lang: str = "en") -> list[Row]:
    """Rows before a layer stack, bottom to top: tokens, embedding, + positions, optional LayerNorm."""
    embed = f"{side}_embed"
    scale = f" × √{config.d_model}" if config.scale_embeddings else ""
    tokens = shapes.get(f"{side}_tokens", "")
    name = form_of(config).side_names[side]  # a decoder-only model reads the prompt and its answer so far
    rows = [Row(f"{side}.tokens", "tokens", text(f"diagram.{name}_tokens", lang),
                tokens if name != "tgt" else text("diagram.shifted", lang, shape=tokens), 0.46, page="embeddings",
                hover=text(f"diagram.{name}_tokens.hover", lang)),
            Row(f"{side}.embed", "embed", text("diagram.embed", lang) + scale,
                join(shapes.get(embed, ""), params(counts, f"{embed}.token_table", lang)), page="embeddings",
                hover=text("diagram.embed.hover", lang)
                + (text("diagram.scaled", lang, d_model=config.d_model) if scale else "")),
            Row(f"{side}.add_position", "norm", "+", "", THIN, page="embeddings", add=True,
                hover=text("diagram.add_position.hover", lang,
                            positional=text(f"encoding.{config.positional}", lang)))]
    if config.positional == "rotary":  # nothing is added to the embeddings: self-attention turns q and k
        rows.pop()
    if config.embed_norm:
        rows.append(Row(f"{side}.embed_norm", "norm", "LayerNorm", params(counts, f"{embed}.norm", lang), THIN,
                        page="embeddings", hover=text("diagram.embed_norm.hover", lang)))
    return rows
