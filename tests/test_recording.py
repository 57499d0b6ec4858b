"""The recording contract: names, shapes, no effect on results, per-call isolation across threads."""

import pickle
import threading
from pathlib import Path

import pytest
import torch
from helpers import make_model, random_ids

from transformer_viz import Trace, name
from transformer_viz.model.hooks import _active_recorder, recording
from transformer_viz.trace.names import ATTENTION_KINDS, attention_name

ROOT = Path(__file__).resolve().parents[1]


def contract_shapes(cfg, batch: int, src_len: int, tgt_len: int) -> dict[str, tuple]:
    """DESIGN.md's table, written out independently of the model code."""
    B, S, T, H, D = batch, src_len, tgt_len, cfg.n_heads, cfg.d_model
    Dh = D // H
    shapes = {"src_embed.token": (B, S, D), "src_embed.position": (S, D), "src_embed.out": (B, S, D),
              "tgt_embed.token": (B, T, D), "tgt_embed.position": (T, D), "tgt_embed.out": (B, T, D),
              "encoder.out": (B, S, D), "decoder.out": (B, T, D), "logits": (B, T, cfg.tgt_vocab_size)}

    def attention(prefix, q_len, k_len):
        return {f"{prefix}.q": (B, H, q_len, Dh), f"{prefix}.k": (B, H, k_len, Dh), f"{prefix}.v": (B, H, k_len, Dh),
                f"{prefix}.scores": (B, H, q_len, k_len), f"{prefix}.masked_scores": (B, H, q_len, k_len),
                f"{prefix}.weights": (B, H, q_len, k_len),
                f"{prefix}.mask": (B, 1, q_len, k_len), f"{prefix}.out": (B, q_len, D)}

    for i in range(cfg.n_encoder_layers):
        p = f"encoder.layers.{i}"
        shapes |= attention(f"{p}.self_attn", S, S)
        shapes |= {f"{p}.ffn.hidden": (B, S, cfg.d_ff), f"{p}.resid_mid": (B, S, D), f"{p}.resid_post": (B, S, D)}
    for i in range(cfg.n_decoder_layers):
        p = f"decoder.layers.{i}"
        shapes |= attention(f"{p}.self_attn", T, T) | attention(f"{p}.cross_attn", T, S)
        shapes |= {f"{p}.ffn.hidden": (B, T, cfg.d_ff), f"{p}.resid_mid": (B, T, D),
                   f"{p}.resid_cross": (B, T, D), f"{p}.resid_post": (B, T, D)}
    return shapes


@pytest.mark.parametrize("n_layers, n_heads", [(1, 1), (2, 4), (3, 2), (6, 8)])
def test_every_contract_name_has_its_shape(n_layers, n_heads):
    model = make_model(n_encoder_layers=n_layers, n_decoder_layers=7 - n_layers, n_heads=n_heads)
    _, trace = model.run_with_trace(random_ids(2, 5, 20), random_ids(2, 3, 22))
    expected = contract_shapes(model.config, 2, 5, 3)
    assert {k: tuple(v.shape) for k, v in trace.items()} == expected
    assert all(trace[k].dtype == torch.bool for k in expected if k.endswith(".mask"))
    assert not any(torch.isnan(t).any() for t in trace.values() if t.is_floating_point())


def test_golden_order_of_names_for_one_layer_each():
    model = make_model(n_encoder_layers=1, n_decoder_layers=1)
    _, trace = model.run_with_trace(random_ids(1, 3, 20), random_ids(1, 2, 22))
    attention = ["q", "k", "v", "mask", "scores", "masked_scores", "weights", "out"]
    golden = (["src_embed.token", "src_embed.position", "src_embed.out"]
              + [f"encoder.layers.0.self_attn.{leaf}" for leaf in attention]
              + ["encoder.layers.0.resid_mid", "encoder.layers.0.ffn.hidden", "encoder.layers.0.resid_post",
                 "encoder.out", "tgt_embed.token", "tgt_embed.position", "tgt_embed.out"]
              + [f"decoder.layers.0.self_attn.{leaf}" for leaf in attention] + ["decoder.layers.0.resid_mid"]
              + [f"decoder.layers.0.cross_attn.{leaf}" for leaf in attention]
              + ["decoder.layers.0.resid_cross", "decoder.layers.0.ffn.hidden", "decoder.layers.0.resid_post",
                 "decoder.out", "logits"])
    assert list(trace) == golden


def test_name_helper_builds_contract_names():
    assert name("decoder", 1, "cross_attn", "weights") == "decoder.layers.1.cross_attn.weights"
    assert name("src_embed", "position") == "src_embed.position"
    assert name("logits") == "logits"


def test_attention_kinds_name_their_tensors_and_tokens():
    model = make_model(n_encoder_layers=3, n_decoder_layers=2)
    _, trace = model.run_with_trace(random_ids(1, 5, 20), random_ids(1, 3, 22))
    trace = trace.with_tokens("abcde", "xyz")
    lengths = {"src": 5, "tgt": 3}
    assert list(ATTENTION_KINDS) == ["encoder_self", "decoder_self", "cross"]
    assert attention_name("cross", 1, "weights") == "decoder.layers.1.cross_attn.weights"
    for kind, attention in ATTENTION_KINDS.items():
        layer = getattr(model, attention.stack).layers[0]
        assert isinstance(getattr(layer, attention.norm), torch.nn.LayerNorm) and attention.title
        rows, cols = trace[attention_name(kind, 0, "weights")].shape[-2:]
        assert (rows, cols) == (lengths[attention.query_side], lengths[attention.key_side])
        query_tokens, key_tokens = trace.attention_tokens(kind)
        assert (len(query_tokens), len(key_tokens)) == (rows, cols)
    assert trace.attention_tokens("cross") == (tuple("xyz"), tuple("abcde"))
    assert [trace.n_layers(kind) for kind in ATTENTION_KINDS] == [3, 2, 2]
    # Without a config, the layers are counted from the recorded names.
    bare = Trace({k: v for k, v in trace.items() if not k.startswith("decoder.layers.1")})
    assert [bare.n_layers(kind) for kind in ATTENTION_KINDS] == [3, 1, 1]


@pytest.mark.parametrize("norm_first", [True, False])
def test_recording_changes_nothing(norm_first):
    model = make_model(norm_first=norm_first)
    src, tgt = random_ids(2, 6, 20, pad_tail=[0, 2]), random_ids(2, 5, 22, pad_tail=[1, 0])
    logits, trace = model.run_with_trace(src, tgt)
    assert torch.equal(logits, model(src, tgt))
    assert torch.equal(trace["logits"], logits)
    with recording() as first:
        model(src, tgt)
    model(src[:, :3], tgt[:, :2])  # after the context: nothing may record into it any more
    assert list(first) == list(trace) and all(torch.equal(first[k], trace[k]) for k in trace)
    assert _active_recorder.get() is None  # run_with_trace and recording() leave no recorder behind


def test_weights_are_softmax_of_masked_scores():
    model = make_model()
    _, trace = model.run_with_trace(random_ids(2, 6, 20, pad_tail=[0, 3]), random_ids(2, 5, 22, pad_tail=[2, 0]))
    for key in trace:
        if key.endswith(".weights"):
            prefix = key.removesuffix(".weights")
            mask = trace[f"{prefix}.mask"]
            masked = trace[f"{prefix}.scores"].masked_fill(~mask, model.config.mask_value)
            assert torch.equal(trace[f"{prefix}.masked_scores"], masked), key
            expected = trace[f"{prefix}.scores"].masked_fill(~mask, float("-inf")).softmax(-1)
            assert torch.allclose(trace[key], expected, atol=1e-6), key


def test_concurrent_traces_on_one_shared_model_never_mix():
    model = make_model(n_encoder_layers=3, n_decoder_layers=3)
    inputs = [(random_ids(1, 4 + i, 20), random_ids(1, 3 + i, 22)) for i in range(6)]
    expected = [model.run_with_trace(src, tgt)[1] for src, tgt in inputs]
    start = threading.Barrier(len(inputs))
    failures = []

    def worker(index: int) -> None:
        src, tgt = inputs[index]
        start.wait()
        for _ in range(15):
            _, trace = model.run_with_trace(src, tgt)
            if list(trace) != list(expected[index]) or any(
                not torch.equal(trace[k], expected[index][k]) for k in trace
            ):
                failures.append(index)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_trace_is_a_read_only_mapping_that_pickles():
    model = make_model()
    _, trace = model.run_with_trace(random_ids(1, 3, 20), random_ids(1, 2, 22))
    trace = trace.with_tokens(["a", "b", "a"], ["<bos>", "x"])
    with pytest.raises(TypeError):
        trace["logits"] = None
    with pytest.raises(KeyError, match="was not recorded"):
        trace["encoder.layers.9.self_attn.weights"]
    copy = pickle.loads(pickle.dumps(trace))
    assert isinstance(copy, Trace) and copy.src_tokens == ("a", "b", "a") and copy.config == model.config
    assert torch.equal(copy["logits"], trace["logits"])


def test_trace_can_be_built_by_hand():
    trace = Trace({"logits": torch.zeros(1, 2, 3)}, src_tokens=("x",))
    assert "logits" in trace and len(trace) == 1 and trace.get("missing") is None
