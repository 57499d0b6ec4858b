"""How large a Hugging Face model is, from its config alone: every size within bounds, parameters counted.

`hf.load` reads the config, checks it here and only then builds anything: a 300-byte config.json can ask for
20,000 layers of width 2, which passes a parameter cap but takes gigabytes and minutes to build (even on the meta
device). The counts follow the modules of transformers 5 (`T5Stack`/`T5Block`/`T5Attention`, `UMT5Attention`,
`BartEncoderLayer`/`BartDecoderLayer`, `MarianMTModel`), tables tied together counted once;
tests/test_hf.py compares them with `sum(p.numel())` of small models of each family.
"""

from __future__ import annotations

from types import MappingProxyType

from transformer_viz.i18n import translatable_error

# What one size of a Hugging Face config may be, whatever the parameter cap. Above the largest checkpoints of
# the families traced here (T5-11B: 24 layers, 128 heads of 128, d_ff 65,536; mT5: 250,112 pieces; BART: 1,024
# positions), far below what would take a server down: building one layer costs ~30 modules whatever its width.
HF_SIZE_LIMITS = MappingProxyType({
    "layers": 48,  # a stack's layers
    "heads": 128,
    "d_model": 8192,
    "d_head": 1024,  # T5's d_kv
    "d_ff": 65_536,
    "vocab": 262_144,
    "positions": 4096,  # BART's learned, Marian's sinusoidal table
    "buckets": 1024,  # T5's relative-position buckets
})
# Marian computes its sinusoidal tables cell by cell in Python (~1 µs a cell) when it loads: positions × d_model
# of each stack at most this (Marian big: 1,024 × 1,024; BART large: 1,026 × 1,024).
MAX_POSITION_CELLS = 2**21

# Each family's config fields and the limit each one has.
T5_FIELDS = {"vocab_size": "vocab", "d_model": "d_model", "d_kv": "d_head", "d_ff": "d_ff", "num_layers": "layers",
             "num_decoder_layers": "layers", "num_heads": "heads", "relative_attention_num_buckets": "buckets"}
BART_FIELDS = {"vocab_size": "vocab", "d_model": "d_model", "encoder_layers": "layers", "decoder_layers": "layers",
               "encoder_attention_heads": "heads", "decoder_attention_heads": "heads", "encoder_ffn_dim": "d_ff",
               "decoder_ffn_dim": "d_ff", "max_position_embeddings": "positions"}
MARIAN_FIELDS = {**BART_FIELDS, "decoder_vocab_size": "vocab"}


def _error(kind: str, **values):
    return translatable_error(f"hf.{kind}", **values)


def checked_sizes(config, name: str) -> dict[str, int]:
    """The sizes of a Hugging Face config (a transformers PretrainedConfig of model_type t5, mt5, umt5, bart or
    marian), each a whole number from 1 to its HF_SIZE_LIMITS; TranslatableError "hf.size" / "hf.config"."""
    model_type = getattr(config, "model_type", "")
    fields = {"bart": BART_FIELDS, "marian": MARIAN_FIELDS}.get(model_type, T5_FIELDS)
    sizes = {}
    for field, limit_name in fields.items():
        value = getattr(config, field, None)
        limit = HF_SIZE_LIMITS[limit_name]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise _error("size", name=name, field=field, value=value, limit=limit)
        sizes[field] = value
    if model_type in ("bart", "marian"):
        _check_attention_shape(config, sizes, name)
    return sizes


def _check_attention_shape(config, sizes: dict[str, int], name: str) -> None:
    """BART and Marian: heads split d_model evenly, the pad id is a row of every table, the position tables are
    within MAX_POSITION_CELLS."""
    d_model = sizes["d_model"]
    for field in ("encoder_attention_heads", "decoder_attention_heads"):
        if d_model % sizes[field]:
            raise _error("config", name=name, reason=f"d_model = {d_model} cannot be split into {field} = "
                                                     f"{sizes[field]} equal heads")
    cells = sizes["max_position_embeddings"] * d_model
    if cells > MAX_POSITION_CELLS:
        raise _error("size", name=name, field="max_position_embeddings × d_model", value=cells,
                     limit=MAX_POSITION_CELLS)
    pad = getattr(config, "pad_token_id", None)
    rows = min(sizes["vocab_size"], sizes.get("decoder_vocab_size", sizes["vocab_size"]))
    if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < rows):
        raise _error("config", name=name, reason=f"pad_token_id = {pad!r} is not a token of its {rows} tokens")


def parameter_count(config, name: str = "") -> int:
    """How many parameters transformers builds for `config` (sizes checked first), counted without building it."""
    sizes = checked_sizes(config, name)
    if config.model_type in ("bart", "marian"):
        return _bart_like(config, sizes)
    return _t5_like(config, sizes)


def _t5_like(config, s: dict[str, int]) -> int:
    """T5, mT5, UMT5: q, k, v, o without biases, RMS norms of d_model, a (gated) FFN without biases, relative
    bias tables (buckets × heads) in the first self-attention of a stack (UMT5: in each), one shared table."""
    d, inner, d_ff = s["d_model"], s["num_heads"] * s["d_kv"], s["d_ff"]
    attention = 4 * d * inner
    ffn = (3 if getattr(config, "is_gated_act", False) else 2) * d * d_ff
    encoder_layer = attention + ffn + 2 * d
    decoder_layer = 2 * attention + ffn + 3 * d
    encoder, decoder = s["num_layers"], s["num_decoder_layers"]
    bias_tables = encoder + decoder if config.model_type == "umt5" else 2
    table = s["vocab_size"] * d
    tables = table if config.tie_word_embeddings else 4 * table  # shared, both stacks' and the readout's
    return (encoder * encoder_layer + decoder * decoder_layer + bias_tables * s["relative_attention_num_buckets"]
            * s["num_heads"] + 2 * d + tables)


def _bart_like(config, s: dict[str, int]) -> int:
    """BART and Marian: q, k, v, out with biases, LayerNorms (weight and bias), FFNs with biases; BART's learned
    positions (2 extra rows) and embedding norms, Marian's sinusoidal tables (parameters too, frozen)."""
    d = s["d_model"]
    attention, norm = 4 * (d * d + d), 2 * d

    def ffn(d_ff: int) -> int:
        return 2 * d * d_ff + d_ff + d

    layers = (s["encoder_layers"] * (attention + ffn(s["encoder_ffn_dim"]) + 2 * norm)
              + s["decoder_layers"] * (2 * attention + ffn(s["decoder_ffn_dim"]) + 3 * norm))
    source, tie = s["vocab_size"] * d, bool(config.tie_word_embeddings)
    if config.model_type == "bart":
        positions = 2 * (s["max_position_embeddings"] + 2) * d + 2 * norm
        return layers + positions + (source if tie else 4 * source)  # shared, both stacks' and the readout's
    positions = 2 * s["max_position_embeddings"] * d
    target = s["decoder_vocab_size"] * d
    if config.share_encoder_decoder_embeddings:  # shared, encoder, decoder, readout (of the source vocabulary)
        tables = source if tie else 3 * source + target
    else:  # encoder, decoder, readout (of the target vocabulary), the readout tied to the decoder's
        tables = source + target if tie else source + 2 * target
    return layers + positions + tables
