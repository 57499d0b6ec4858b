"""How large a Hugging Face decoder-only model is, from its config alone: GPT-2 and the Llama layout.

The companion of hf_limits.py (whose HF_SIZE_LIMITS bound every size here too) for `hf_causal.load`: each size is
checked and the parameters are counted before anything is built. The counts follow the modules of
transformers 5 (`GPT2LMHeadModel`, `LlamaForCausalLM`, `Qwen2ForCausalLM`, `MistralForCausalLM`), a readout tied
to the token table counted once; tests/test_hf_causal.py compares them with `sum(p.numel())` of small models.
"""

from __future__ import annotations

from transformer_viz.i18n import translatable_error
from transformer_viz.weights.hf_limits import HF_SIZE_LIMITS

GPT2_FIELDS = {"vocab_size": "vocab", "n_embd": "d_model", "n_layer": "layers", "n_head": "heads",
               "n_positions": "positions"}
LLAMA_FIELDS = {"vocab_size": "vocab", "hidden_size": "d_model", "num_hidden_layers": "layers",
                "num_attention_heads": "heads", "num_key_value_heads": "heads", "intermediate_size": "d_ff"}
LLAMA_LIKE = ("llama", "qwen2", "mistral")  # one layout: the same module names, RoPE, RMSNorm, SwiGLU, GQA
# RoPE variants this app traces and recomputes; "longrope" divides by lengths a config may leave out, "proportional"
# and others are newer than the walkthrough: refused in a sentence before anything is built
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")
MAX_POSITIONS = 1_048_576  # a Llama-layout model's max_position_embeddings (RoPE has no table: only a number)
MAX_ROPE_THETA, MAX_ROPE_FACTOR = 1e9, 1e4


def _error(kind: str, **values):
    return translatable_error(f"hf.{kind}", **values)


def _checked(name: str, field: str, value, limit_name: str) -> int:
    limit = HF_SIZE_LIMITS[limit_name]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise _error("size", name=name, field=field, value=value, limit=limit)
    return value


def checked_sizes(config, name: str) -> dict[str, int]:
    """The sizes of a GPT-2 or Llama-layout config, each a whole number from 1 to its HF_SIZE_LIMITS, with the
    derived ones filled in (GPT-2's n_inner, Llama's head_dim); TranslatableError "hf.size" / "hf.config"."""
    gpt2 = config.model_type == "gpt2"
    fields = GPT2_FIELDS if gpt2 else LLAMA_FIELDS
    sizes = {field: _checked(name, field, getattr(config, field, None), limit)
             for field, limit in fields.items()}
    d_model, heads = sizes["n_embd" if gpt2 else "hidden_size"], sizes["n_head" if gpt2 else "num_attention_heads"]
    if gpt2:
        inner = getattr(config, "n_inner", None)
        sizes["n_inner"] = _checked(name, "n_inner", 4 * d_model if inner is None else inner, "d_ff")
        if d_model % heads:
            raise _error("config", name=name, reason=f"n_embd = {d_model} cannot be split into n_head = {heads} "
                                                     "equal heads")
        check_numbers(config, name)
        return sizes
    head_dim = getattr(config, "head_dim", None)
    sizes["head_dim"] = _checked(name, "head_dim", d_model // heads if head_dim is None else head_dim,
                                 "d_head")
    check_numbers(config, name)
    if heads % sizes["num_key_value_heads"]:
        raise _error("config", name=name, reason=f"num_attention_heads = {heads} is not a multiple of "
                                                 f"num_key_value_heads = {sizes['num_key_value_heads']}")
    if sizes["head_dim"] % 2:
        raise _error("config", name=name, reason=f"head_dim = {sizes['head_dim']} is odd: RoPE turns pairs")
    return sizes


def _number(name: str, field: str, value, low: float, high: float) -> float:
    """A config's number that is no size: finite, above `low` and at most `high` ("hf.config" otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
        raise _error("config", name=name, reason=f"{field} = {value!r} is not a number above {low:g} and at most "
                                                 f"{high:g}")
    return float(value)


def check_numbers(config, name: str) -> None:
    """The numbers a model is built from besides its sizes: the activation, the norms' epsilon, the positions and
    RoPE's (theta, its variant and factor), each known or finite and within reason; "hf.config" otherwise."""
    if config.model_type == "gpt2":
        from transformers.activations import ACT2FN

        activation = getattr(config, "activation_function", "gelu_new")
        if not isinstance(activation, str) or activation not in ACT2FN:
            raise _error("config", name=name, reason=f"activation_function = {activation!r} is not one transformers "
                                                     "knows")
        _number(name, "layer_norm_epsilon", getattr(config, "layer_norm_epsilon", 1e-5), 0, 1)
        return
    _number(name, "rms_norm_eps", getattr(config, "rms_norm_eps", 1e-6), 0, 1)
    _number(name, "max_position_embeddings", getattr(config, "max_position_embeddings", 2048), 0, MAX_POSITIONS)
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    if not isinstance(rope, dict):
        raise _error("config", name=name, reason=f"rope_scaling = {rope!r} is not a table of RoPE's settings")
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise _error("config", name=name, reason=f"RoPE variant {rope_type!r} is not one traced here "
                                                 f"({', '.join(ROPE_TYPES)})")
    _number(name, "rope_theta", rope.get("rope_theta", getattr(config, "rope_theta", None) or 10000.0), 0,
            MAX_ROPE_THETA)
    if "factor" in rope:
        _number(name, "rope factor", rope["factor"], 0, MAX_ROPE_FACTOR)


def parameter_count(config, name: str = "") -> int:
    """How many parameters transformers builds for a GPT-2 or Llama-layout `config` (sizes checked first),
    counted without building it."""
    sizes = checked_sizes(config, name)
    if config.model_type == "gpt2":
        return _gpt2(config, sizes)
    return _llama_like(config, sizes)


def _gpt2(config, s: dict[str, int]) -> int:
    """GPT-2: token and learned position tables, per block two LayerNorms, c_attn (q, k, v packed) and c_proj,
    the MLP's c_fc and c_proj, all with biases; a final LayerNorm; the readout tied to the token table or not."""
    d, inner = s["n_embd"], s["n_inner"]
    block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (d * inner + inner) + (inner * d + d)
    table = s["vocab_size"] * d
    readout = 0 if config.tie_word_embeddings else table
    return table + s["n_positions"] * d + s["n_layer"] * block + 2 * d + readout


def _llama_like(config, s: dict[str, int]) -> int:
    """Llama, Qwen2, Mistral: q, k, v, o (biases as the family has them), a SwiGLU MLP (gate, up, down), two RMS
    norms per layer and a final one (weights only), the token table and a readout tied to it or not."""
    d, d_ff = s["hidden_size"], s["intermediate_size"]
    q_width, kv_width = s["num_attention_heads"] * s["head_dim"], s["num_key_value_heads"] * s["head_dim"]
    attention = d * q_width + 2 * d * kv_width + q_width * d
    if config.model_type == "qwen2":  # biases on q, k and v only
        attention += q_width + 2 * kv_width
    elif getattr(config, "attention_bias", False):
        attention += q_width + 2 * kv_width + d
    mlp = 3 * d * d_ff + (2 * d_ff + d if getattr(config, "mlp_bias", False) else 0)
    table = s["vocab_size"] * d
    readout = 0 if config.tie_word_embeddings else table
    return table + s["num_hidden_layers"] * (attention + mlp + 2 * d) + d + readout
