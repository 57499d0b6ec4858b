"""head_walkthrough: every step of one head recomputed, checked against the trace, and refused when it disagrees."""

import copy
import dataclasses
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import make_model, random_ids

from transformer_viz import ModelConfig, Trace, Transformer
from transformer_viz.analysis.walkthrough import TraceMismatchError, cell_numbers, head_walkthrough
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name

D_MODEL, N_HEADS, D_HEAD, LENGTH = 8, 2, 4, 4


def tiny(norm_first: bool, **overrides):
    """A d_model 8, 2-head model and a traced batch of 2 (item 0's source ends with a pad, item 1 differs)."""
    model = make_model(d_model=D_MODEL, n_heads=N_HEADS, norm_first=norm_first, **overrides)
    src = random_ids(2, LENGTH, 20, pad_tail=[1, 0])
    tgt = random_ids(2, LENGTH, 22, pad_tail=[0, 2])
    _, trace = model.run_with_trace(src, tgt)
    return model, trace


def cases():
    return [(norm_first, kind, layer) for norm_first in (True, False) for kind in ATTENTION_KINDS for layer in (0, 1)]


@pytest.mark.parametrize("norm_first, kind, layer", cases())
def test_every_field_has_its_shape(norm_first, kind, layer):
    model, trace = tiny(norm_first)
    w = head_walkthrough(model, trace, kind, layer, 1)
    q_len = k_len = LENGTH
    expected = {"x_query": (q_len, D_MODEL), "x_key": (k_len, D_MODEL),
                "w_q": (D_MODEL, D_HEAD), "w_k": (D_MODEL, D_HEAD), "w_v": (D_MODEL, D_HEAD),
                "b_q": (D_HEAD,), "b_k": (D_HEAD,), "b_v": (D_HEAD,),
                "q": (q_len, D_HEAD), "k": (k_len, D_HEAD), "v": (k_len, D_HEAD),
                "qk": (q_len, k_len), "scores": (q_len, k_len), "mask": (q_len, k_len),
                "masked_scores": (q_len, k_len), "weights": (q_len, k_len), "head_output": (q_len, D_HEAD),
                "all_heads": (q_len, D_MODEL), "w_o": (D_MODEL, D_MODEL), "b_o": (D_MODEL,),
                "output": (q_len, D_MODEL)}
    assert {f: getattr(w, f).shape for f in expected} == expected
    assert w.mask.dtype == bool
    assert (w.kind, w.layer, w.head, w.n_heads, w.norm_first) == (kind, layer, 1, N_HEADS, norm_first)
    assert (w.d_model, w.d_head, w.scale) == (D_MODEL, D_HEAD, 2.0)
    assert len(w.query_tokens) == q_len and len(w.key_tokens) == k_len


def torch_attention(model, kind: str, layer: int, x_query, x_key, mask):
    """torch.nn.MultiheadAttention with the weights of attention `kind` in `layer`, on one sentence: (output
    (q_len, d_model), per-head weights (heads, q_len, k_len)). An implementation independent of ours."""
    attention = ATTENTION_KINDS[kind]
    ours = getattr(getattr(model, attention.stack).layers[layer], attention.sublayer)
    reference = torch.nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True).eval()
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        reference.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        reference.out_proj.weight.copy_(ours.out_proj.weight)
        reference.out_proj.bias.copy_(ours.out_proj.bias)
        query, key = torch.tensor(x_query)[None], torch.tensor(x_key)[None]  # (1, len, d_model)
        blocked = ~torch.tensor(mask)  # (q_len, k_len): nn.MultiheadAttention's True means "may not attend"
        output, weights = reference(query, key, key, attn_mask=blocked, need_weights=True,
                                    average_attn_weights=False)
    return output[0].numpy(), weights[0].numpy()


@pytest.mark.parametrize("norm_first, kind, layer", cases())
@pytest.mark.parametrize("head", range(N_HEADS))
def test_each_step_agrees_with_torch_multihead_attention_for_batch_item_0(norm_first, kind, layer, head):
    model, trace = tiny(norm_first)
    w = head_walkthrough(model, trace, kind, layer, head)
    output, weights = torch_attention(model, kind, layer, w.x_query, w.x_key, w.mask)
    np.testing.assert_allclose(w.weights, weights[head], atol=1e-5)
    np.testing.assert_allclose(w.output, output, atol=1e-5)
    # Item 1 of the batch is a different sentence: the walkthrough must not have read it.
    assert not np.allclose(w.output, trace[attention_name(kind, layer, "out")][1].numpy(), atol=1e-3)


@pytest.mark.parametrize("norm_first, kind, layer", cases())
def test_concatenated_heads_times_w_o_give_the_recorded_out(norm_first, kind, layer):
    model, trace = tiny(norm_first)
    walks = [head_walkthrough(model, trace, kind, layer, h) for h in range(N_HEADS)]
    concat = np.concatenate([w.head_output for w in walks], axis=-1)  # (q_len, d_model)
    np.testing.assert_allclose(walks[0].all_heads, concat, atol=1e-6)
    np.testing.assert_allclose(concat @ walks[0].w_o + walks[0].b_o, trace[attention_name(kind, layer, "out")][0],
                               atol=1e-5)
    np.testing.assert_allclose(walks[0].head_output, walks[0].weights @ walks[0].v, atol=1e-6)


@pytest.mark.parametrize("norm_first, kind, layer", cases())
def test_inputs_are_what_the_attention_module_reads(norm_first, kind, layer):
    """Feeding x_query / x_key and the mask to the model's own attention module reproduces the recorded out."""
    model, trace = tiny(norm_first)
    w = head_walkthrough(model, trace, kind, layer, 0)
    attention = ATTENTION_KINDS[kind]
    attn = getattr(getattr(model, attention.stack).layers[layer], attention.sublayer)
    with torch.no_grad():
        out = attn(torch.tensor(w.x_query)[None], torch.tensor(w.x_key)[None], torch.tensor(w.mask)[None, None])
    np.testing.assert_allclose(out[0].numpy(), trace[attention_name(kind, layer, "out")][0].numpy(), atol=1e-5)
    if kind == "cross":
        np.testing.assert_array_equal(w.x_key, trace["encoder.out"][0].numpy())


def test_input_sources_follow_pre_and_post_ln():
    model, trace = tiny(True)
    assert str(head_walkthrough(model, trace, "encoder_self", 0, 0).x_query_source) == "norm1(src_embed.out)"
    decoder = head_walkthrough(model, trace, "decoder_self", 1, 0)
    assert str(decoder.x_query_source) == "norm1(decoder.layers.0.resid_post)"
    cross = head_walkthrough(model, trace, "cross", 0, 0)
    assert (str(cross.x_query_source), str(cross.x_key_source)) == ("norm2(decoder.layers.0.resid_mid)", "encoder.out")
    model, trace = tiny(False)
    w = head_walkthrough(model, trace, "encoder_self", 1, 0)
    assert str(w.x_query_source) == "encoder.layers.0.resid_post"
    np.testing.assert_array_equal(w.x_query, trace["encoder.layers.0.resid_post"][0].numpy())


def perturb(model, path: str):
    """A copy of the model with one parameter nudged."""
    altered = copy.deepcopy(model)
    with torch.no_grad():
        altered.get_parameter(path).view(-1)[0] += 0.05
    return altered


@pytest.mark.parametrize("kind, path, leaf", [
    ("encoder_self", "encoder.layers.0.self_attn.q_proj.weight", "q"),
    ("encoder_self", "encoder.layers.0.self_attn.k_proj.bias", "k"),
    ("decoder_self", "decoder.layers.1.self_attn.v_proj.weight", "v"),
    ("cross", "decoder.layers.0.cross_attn.out_proj.weight", "out"),
    ("cross", "decoder.layers.0.norm2.weight", "q"),
])
def test_a_trace_from_altered_weights_is_refused(kind, path, leaf):
    model, _ = tiny(True)
    src, tgt = random_ids(1, LENGTH, 20), random_ids(1, LENGTH, 22)
    _, altered_trace = perturb(model, path).run_with_trace(src, tgt)
    layer = int(path.split(".")[2])
    with pytest.raises(TraceMismatchError, match=rf"^Recomputed {leaf} of"):
        head_walkthrough(model, altered_trace, kind, layer, 0)
    _, own_trace = model.run_with_trace(src, tgt)
    head_walkthrough(model, own_trace, kind, layer, 0)  # the same input with the model's own weights passes


@pytest.mark.parametrize("leaf", ["q", "k", "v", "scores", "masked_scores", "weights", "out"])
def test_a_tampered_trace_tensor_is_refused(leaf):
    model, trace = tiny(False)
    name = f"decoder.layers.1.cross_attn.{leaf}"
    tensors = dict(trace.tensors)
    tensors[name] = tensors[name].contiguous().clone()
    # A value of the last head (every head is checked), not of the last key: that one is a pad, and
    # -1e9 + 0.01 is still -1e9 in float32.
    tensors[name][0].view(-1)[-2] += 0.01
    with pytest.raises(TraceMismatchError, match=rf"{leaf} of decoder layer 2"):
        head_walkthrough(model, Trace(tensors, config=trace.config), "cross", 1, 0)


def test_a_trace_from_another_configuration_is_refused():
    _, trace = tiny(True)
    other = make_model(d_model=D_MODEL, n_heads=4, norm_first=True)
    with pytest.raises(TraceMismatchError, match="different configuration"):
        head_walkthrough(other, trace, "encoder_self", 0, 0)


@pytest.mark.parametrize("kind, layer, head, message", [
    ("self", 0, 0, "Unknown attention kind"),
    ("encoder_self", 2, 0, r"encoder layer must be a whole number from 0 to 1 \(counting from 0\), got 2"),
    ("cross", -1, 0, "decoder layer must be a whole number from 0 to 1 .*, got -1"),
    ("decoder_self", 0, 2, "head must be a whole number from 0 to 1 .*, got 2"),
])
def test_impossible_choices_raise_value_error(kind, layer, head, message):
    model, trace = tiny(True)
    with pytest.raises(ValueError, match=message):
        head_walkthrough(model, trace, kind, layer, head)


def test_the_model_is_left_untouched():
    model, trace = tiny(True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    head_walkthrough(model, trace, "cross", 1, 1)
    assert model.training and all(p.requires_grad for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_walkthrough_is_frozen_read_only_and_pickles():
    model, trace = tiny(True)
    w = head_walkthrough(model, trace, "encoder_self", 0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.q = None
    with pytest.raises(ValueError, match="read-only"):
        w.weights[0, 0] = 1.0
    copy_ = pickle.loads(pickle.dumps(w))  # so a page can keep it in st.cache_data
    np.testing.assert_array_equal(copy_.masked_scores, w.masked_scores)
    assert copy_.query_tokens == w.query_tokens


@pytest.mark.parametrize("mask_value", [-1e9, float("-inf")])
def test_blocked_keys_and_a_fully_blocked_row(mask_value):
    """A target starting with a pad: its first query may attend to nothing (all-zero row, no NaN)."""
    model = make_model(d_model=D_MODEL, n_heads=N_HEADS, mask_value=mask_value)
    src = torch.tensor([[3, 4, 5, 0]])
    tgt = torch.tensor([[0, 6, 7, 8]])
    _, trace = model.run_with_trace(src, tgt)
    w = head_walkthrough(model, trace, "decoder_self", 0, 1)
    assert not w.mask[0].any() and np.all(w.weights[0] == 0)
    assert np.all(w.masked_scores[~w.mask] == mask_value)
    np.testing.assert_array_equal(w.masked_scores[w.mask], w.scores[w.mask])
    np.testing.assert_allclose(w.weights[1:].sum(axis=1), 1.0, atol=1e-6)
    assert w.mask_value == mask_value
    cross = head_walkthrough(model, trace, "cross", 0, 0)
    assert not cross.mask[:, 3].any() and np.all(cross.weights[:, 3] == 0)


def test_token_labels_follow_the_attention_kind():
    model, trace = tiny(True)
    trace = trace.with_tokens(["a", "b", "c", "<pad>"], ["<bos>", "x", "y", "z"])
    cross = head_walkthrough(model, trace, "cross", 0, 0)
    assert cross.query_tokens == ("<bos>", "x", "y", "z") and cross.key_tokens == ("a", "b", "c", "<pad>")
    assert head_walkthrough(model, trace, "encoder_self", 0, 0).query_tokens == ("a", "b", "c", "<pad>")
    model, bare = tiny(True)
    assert head_walkthrough(model, bare, "decoder_self", 0, 0).key_tokens == ("0", "1", "2", "3")


def test_cell_numbers_recompute_the_recorded_score_and_weight():
    _, trace = tiny(True)
    trace = trace.with_tokens(["a", "b", "c", "<pad>"], ["<bos>", "x", "y", "z"])
    numbers = cell_numbers(trace, "cross", 1, 1, 2, 1)

    def recorded(leaf):
        return trace[attention_name("cross", 1, leaf)][0, 1]  # (q_len, ...) of head 1

    q = recorded("q")[2].numpy()
    assert numbers.q == pytest.approx(q.tolist()) and len(numbers.k) == numbers.d_head == D_HEAD
    assert numbers.dot == pytest.approx(float(np.dot(q, recorded("k")[1].numpy())), rel=1e-5)
    assert numbers.scale == 2.0 and numbers.position_bias is None and not numbers.unscaled
    assert numbers.score == pytest.approx(numbers.recorded_score, rel=1e-5, abs=1e-6)
    assert numbers.recorded_score == pytest.approx(float(recorded("scores")[2, 1]))
    assert numbers.allowed and numbers.masked_score == pytest.approx(numbers.recorded_score)
    assert numbers.row_softmax[1] == pytest.approx(numbers.weight, abs=1e-6)
    assert numbers.row_softmax == pytest.approx(recorded("weights")[2].tolist(), abs=1e-6)
    assert (numbers.query_token, numbers.key_token) == ("y", "b")


def test_cell_numbers_of_a_blocked_cell():
    _, trace = tiny(True)  # item 0's source ends with a pad
    numbers = cell_numbers(trace.with_tokens(["a", "b", "c", "<pad>"], None), "encoder_self", 0, 0, 1, 3)
    assert not numbers.allowed and numbers.key_token == "<pad>"
    assert numbers.masked_score == -1e9 == numbers.mask_value
    assert numbers.weight == 0.0 and numbers.row_softmax[3] == 0.0
    assert sum(numbers.row_softmax) == pytest.approx(1.0)


def test_cell_numbers_read_the_recorded_masked_row():
    # A recorded fill of -7 instead of the config's -1e9: the row shown is the recorded one.
    _, trace = tiny(True)
    name = attention_name("encoder_self", 0, "masked_scores")
    tensors = dict(trace.tensors)
    tensors[name] = tensors[name].clamp(min=-7.0)
    numbers = cell_numbers(Trace(tensors, config=trace.config), "encoder_self", 0, 0, 1, 3)
    assert numbers.masked_score == numbers.row_masked_scores[3] == -7.0
    with pytest.raises(ValueError, match="Unknown attention kind"):
        cell_numbers(trace, "self", 0, 0, 0, 0)


def hand_model() -> Transformer:
    """d_model 2, one head, post-LN; W_Q = W_K = I, W_V = [[1, 2], [3, 4]], W_O = I, zero biases."""
    config = ModelConfig(src_vocab_size=4, tgt_vocab_size=4, d_model=2, n_heads=1, n_encoder_layers=1,
                         n_decoder_layers=1, d_ff=4, max_len=4, norm_first=False)
    model = Transformer(config).eval()
    attn = model.encoder.layers[0].self_attn
    with torch.no_grad():
        for proj, used in ((attn.q_proj, torch.eye(2)), (attn.k_proj, torch.eye(2)),
                           (attn.v_proj, torch.tensor([[1.0, 2.0], [3.0, 4.0]])), (attn.out_proj, torch.eye(2))):
            proj.weight.copy_(used.T)  # nn.Linear computes x·Wᵀ; W as used is x·W
            proj.bias.zero_()
    return model


def hand_trace(config, weights_high: float) -> Trace:
    """Two tokens X = I, worked out by hand: scores [[s, 0], [0, s]] with s = 1/√2, V = W_V."""
    s = 1 / math.sqrt(2)
    p = weights_high
    weights = torch.tensor([[p, 1 - p], [1 - p, p]])
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    prefix = "encoder.layers.0.self_attn"
    tensors = {"src_embed.out": torch.eye(2)[None], f"{prefix}.q": torch.eye(2)[None, None],
               f"{prefix}.k": torch.eye(2)[None, None], f"{prefix}.v": v[None, None],
               f"{prefix}.mask": torch.ones(1, 1, 2, 2, dtype=torch.bool),
               f"{prefix}.scores": torch.tensor([[s, 0.0], [0.0, s]])[None, None],
               f"{prefix}.masked_scores": torch.tensor([[s, 0.0], [0.0, s]])[None, None],
               f"{prefix}.weights": weights[None, None], f"{prefix}.out": (weights @ v)[None]}
    return Trace(tensors, config=config)


def test_two_token_case_worked_out_by_hand():
    model = hand_model()
    s = 1 / math.sqrt(2)
    p = math.exp(s) / (math.exp(s) + 1)
    w = head_walkthrough(model, hand_trace(model.config, p), "encoder_self", 0, 0)
    np.testing.assert_allclose(w.qk, [[1.0, 0.0], [0.0, 1.0]], atol=1e-6)
    np.testing.assert_allclose(w.scores, [[s, 0.0], [0.0, s]], atol=1e-6)
    np.testing.assert_allclose(w.weights, [[p, 1 - p], [1 - p, p]], atol=1e-6)
    np.testing.assert_allclose(w.output, [[p * 1 + (1 - p) * 3, p * 2 + (1 - p) * 4],
                                          [(1 - p) * 1 + p * 3, (1 - p) * 2 + p * 4]], atol=1e-6)
    with pytest.raises(TraceMismatchError, match="weights"):
        head_walkthrough(model, hand_trace(model.config, 0.6), "encoder_self", 0, 0)


def test_walkthrough_imports_no_plotly():
    code = "import sys, transformer_viz.analysis.walkthrough; print('plotly' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_run_without_the_scale_is_walked_and_its_cells_divide_by_one():
    from transformer_viz.trace.intervention import Intervention

    model = make_model(d_model=D_MODEL, n_heads=N_HEADS)
    _, trace = model.run_with_trace(random_ids(1, LENGTH, 20), random_ids(1, LENGTH, 22),
                                    intervention=Intervention(scale=False))
    walk = head_walkthrough(model, trace, "encoder_self", 1, 1)  # checked step by step against what ran
    assert walk.scale == 1.0 and np.allclose(walk.scores, walk.qk)
    numbers = cell_numbers(trace, "encoder_self", 1, 1, 2, 0)
    assert numbers.scale == 1.0 and numbers.unscaled and walk.unscaled
    assert numbers.score == pytest.approx(numbers.recorded_score, abs=1e-5)
