"""Inside one head for Hugging Face decoder-only models (hf_causal_views.head_walkthrough): tiny GPT-2, Llama
(4 query heads sharing 2 key/value heads) and Qwen2 (biased q, k, v) built offline. Every head's steps are the
trace's and the model's own weights; the Llama layout turns pairs (i, i + d_head/2) by the model's own angles."""

import dataclasses

import numpy as np
import pytest
import torch

from transformer_viz.analysis.walkthrough import TraceMismatchError
from transformer_viz.errors import TranslatableError
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.weights import hf, hf_causal, hf_causal_views

missing = hf.missing_reason()
pytestmark = pytest.mark.hf
FAMILIES = ["gpt2", "llama", "qwen2"]
PROMPT = "the cat sat on the mat"
ATOL = 1e-5


def _load(family, folder, **options):
    if missing is not None:
        pytest.skip(missing)
    from devtools.hf_tiny import save_tiny

    model = hf_causal.load(str(save_tiny(family, folder, **options)))
    if family == "qwen2":  # its q, k and v biases start at zero: drawn so that a bias left out shows
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for layer in model.model.model.layers:
                for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    projection.bias.copy_(torch.randn(projection.bias.shape, generator=generator))
    return model


@pytest.fixture(scope="module", params=FAMILIES)
def tiny(request, tmp_path_factory):
    return _load(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return _load("llama", tmp_path_factory.mktemp("llama"))


def _run(model):
    return hf_causal.run_text(model, PROMPT, max_new_tokens=4)


def _own_weights(model, layer, head):
    """(W_Q, W_K, W_V, b_Q, b_K, b_V) of query head `head` read off the model's modules, rows = input dimensions:
    GPT-2's packed Conv1D columns, the Llama layout's rows of the key/value head the query head reads."""
    d_model, d_head = model.config.d_model, model.config.d_head
    if model.family == "gpt2":
        attention = model.model.transformer.h[layer].attn.c_attn
        columns = [slice(part * d_model + head * d_head, part * d_model + (head + 1) * d_head) for part in range(3)]
        return (*(attention.weight[:, c] for c in columns), *(attention.bias[c] for c in columns))
    attention = model.model.model.layers[layer].self_attn
    kv = model.config.kv_head_of_query_head[head]
    rows = [slice(head * d_head, (head + 1) * d_head), *[slice(kv * d_head, (kv + 1) * d_head)] * 2]
    projections = (attention.q_proj, attention.k_proj, attention.v_proj)
    biases = [torch.zeros(d_head) if p.bias is None else p.bias[r] for p, r in zip(projections, rows, strict=True)]
    return (*(p.weight[r].T for p, r in zip(projections, rows, strict=True)), *biases)


def _close(walked: np.ndarray, expected: torch.Tensor) -> None:
    np.testing.assert_allclose(walked, expected.detach().numpy(), atol=ATOL, rtol=1e-4)


def test_every_heads_walkthrough_is_the_trace_and_the_models_own_weights(tiny):
    """GPT-2's packed c_attn split per head; Llama's query heads 0, 1 read key/value head 0 and 2, 3 head 1 (W_K,
    k and v shared); Qwen2's biases are its own."""
    trace = _run(tiny).trace
    config = tiny.config
    for layer in range(config.n_decoder_layers):
        prefix = f"decoder.layers.{layer}.self_attn"
        for head in range(config.n_heads):
            walk = hf_causal_views.head_walkthrough(tiny, trace, "decoder_self", layer, head)
            kv = config.kv_head_of_query_head[head]
            for walked, own in zip((walk.w_q, walk.w_k, walk.w_v, walk.b_q, walk.b_k, walk.b_v),
                                   _own_weights(tiny, layer, head), strict=True):
                _close(walked, own)
            _close(walk.q, trace[f"{prefix}.q"][0, head])
            _close(walk.k, trace[f"{prefix}.k"][0, kv])
            _close(walk.v, trace[f"{prefix}.v"][0, kv])
            _close(walk.scores, trace[f"{prefix}.scores"][0, head])
            _close(walk.weights, trace[f"{prefix}.weights"][0, head])
            _close(walk.output, trace[f"{prefix}.out"][0])
            assert walk.scale == pytest.approx(config.d_head ** 0.5) and walk.n_heads == config.n_heads
            assert (walk.q_rot is None) == (tiny.family == "gpt2") == (walk.angles is None)
    if tiny.family == "qwen2":
        assert np.abs(walk.b_k).min() > 0  # the drawn biases, not zeros


@pytest.mark.parametrize("theta", [10_000.0, 500_000.0])
def test_the_llama_layout_turns_pairs_i_and_i_plus_half_by_its_own_rope_theta(tmp_path, theta):
    """Worked out by hand: position p turns dimensions (i, i + d_head/2) by p · theta^(−2i/d_head)."""
    model = _load("llama", tmp_path, rope_parameters={"rope_type": "default", "rope_theta": theta})
    trace = _run(model).trace
    walk = hf_causal_views.head_walkthrough(model, trace, "decoder_self", 1, 3)
    d_head, length = model.config.d_head, len(walk.query_tokens)
    angles = torch.arange(length, dtype=torch.float64)[:, None] * theta ** (
        -torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (T, d_head / 2)
    np.testing.assert_allclose(walk.angles, angles.numpy(), rtol=1e-5, atol=1e-5)
    q = torch.from_numpy(walk.q.copy()).double()  # (T, d_head)
    first, second = q[:, : d_head // 2], q[:, d_head // 2:]
    turned = torch.cat((first * angles.cos() - second * angles.sin(), second * angles.cos() + first * angles.sin()), -1)
    np.testing.assert_allclose(walk.q_rot, turned.numpy(), atol=ATOL)
    _close(walk.q_rot, trace["decoder.layers.1.self_attn.q_rot"][0, 3])
    _close(walk.k_rot, trace["decoder.layers.1.self_attn.k_rot"][0, 1])  # query head 3 reads key/value head 1
    assert walk.rotary_halves
    titles = {step: fig.layout.title.text for step, fig in walkthrough_figures(walk)}
    assert "(i, i + d_head/2)" in titles["rotate"] and "(2i, 2i+1)" not in titles["rotate"]


def test_a_right_padded_row_turns_its_padding_as_position_zero(llama):
    """run_text pads a typed answer on the right; the model numbers a padding position 0 (its real tokens counted)."""
    trace = hf_causal.run_text(llama, "the cat", tgt_text="sat on", pad_to=12).trace
    walk = hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 0, 2)
    padding = np.array([token == "<pad>" for token in walk.query_tokens])
    assert padding.any() and not walk.angles[padding].any()
    _close(walk.q_rot, trace["decoder.layers.0.self_attn.q_rot"][0, 2])


@pytest.mark.parametrize("family, window", [("qwen2", 4), ("mistral", 3)])
def test_a_padding_query_outside_every_real_keys_window_is_what_the_model_computes(tmp_path, family, window):
    """A right-padded answer whose last queries' sliding window holds only padding: the model's softmax of equal
    fills gives each key 1/T there; the trace records that, and the walkthrough recomputes it (it raised, off by
    up to 6 in `out`, while the trace said 0)."""
    window_options = {"use_sliding_window": True, "max_window_layers": 0} if family == "qwen2" else {}
    model = _load(family, tmp_path, sliding_window=window, **window_options)
    trace = hf_causal.run_text(model, "the cat", tgt_text="sat", pad_to=14).trace
    mask = trace["decoder.layers.0.self_attn.mask"][0, 0]  # (T, T)
    empty = ~mask.any(dim=-1)  # (T,) queries that may attend to no key
    assert empty.sum() >= 2
    for layer in range(model.config.n_decoder_layers):
        weights = trace[f"decoder.layers.{layer}.self_attn.weights"][0]  # (heads, T, T)
        torch.testing.assert_close(weights[:, empty], torch.full_like(weights[:, empty], 1 / len(mask)))
        for head in range(model.config.n_heads):
            walk = hf_causal_views.head_walkthrough(model, trace, "decoder_self", layer, head)
            _close(walk.weights, weights[head])
        _close(walk.output, trace[f"decoder.layers.{layer}.self_attn.out"][0])


def test_the_dot_product_adds_the_turned_q_and_k_and_ends_at_the_recorded_score(llama):
    trace = _run(llama).trace
    walk = hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 1, 2)
    fig = dot_product_figure(walk, 5, 3)
    total = sum(fig.data[0].y[:-1])  # the products, before the Σ bar
    recorded = float(trace["decoder.layers.1.self_attn.scores"][0, 2, 5, 3])
    assert total / walk.scale == pytest.approx(recorded, abs=1e-5)
    assert "q′·k′" in fig.layout.title.text and fig.data[0].x[0].startswith("q′0·k′0")


@pytest.mark.parametrize("module, role", [("q_proj", "q of"), ("k_proj", "k of"), ("o_proj", "out of")])
def test_a_trace_the_models_weights_did_not_make_raises_instead_of_showing(llama, module, role):
    """One weight of key/value head 1 (read by query heads 2 and 3 only) changed after the run."""
    trace = _run(llama).trace
    weight = getattr(llama.model.model.layers[1].self_attn, module).weight
    row = weight.shape[0] - 1  # the last key/value head's (k_proj), the last query head's (q_proj)
    with torch.no_grad():
        weight[row, 0] += 1.0
    try:
        with pytest.raises(TraceMismatchError, match=role):
            hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 1, 0)
    finally:
        with torch.no_grad():
            weight[row, 0] -= 1.0
    hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 1, 0)


def test_a_choice_the_model_lacks_or_another_models_trace_is_a_sentence(llama, tmp_path):
    trace = _run(llama).trace
    with pytest.raises(ValueError, match="has no Cross-attention"):
        hf_causal_views.head_walkthrough(llama, trace, "cross", 0, 0)
    with pytest.raises(ValueError, match="head"):
        hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 0, llama.config.n_heads)
    with pytest.raises(ValueError, match="layer"):
        hf_causal_views.head_walkthrough(llama, trace, "decoder_self", 2, 0)
    other = dataclasses.replace(trace, config=dataclasses.replace(llama.config, name="another"))
    with pytest.raises(TraceMismatchError, match="another model"):
        hf_causal_views.head_walkthrough(llama, other, "decoder_self", 0, 0)


def test_a_rotation_that_also_scales_q_and_k_is_refused_with_a_reason(tmp_path):
    """YaRN multiplies cos and sin by its attention_scaling: not a turn the walkthrough draws."""
    model = _load("llama", tmp_path, rope_parameters={"rope_type": "yarn", "factor": 2.0, "rope_theta": 10_000.0,
                                                      "original_max_position_embeddings": 32})
    with pytest.raises(TranslatableError, match=r"attention_scaling 1\.0693") as refused:
        hf_causal_views.head_walkthrough(model, _run(model).trace, "decoder_self", 0, 0)
    assert refused.value.key == "hf.walk_rotary"
