"""A trace outside the app: .npz round trip, the tidy attention table, BertViz's and CircuitsVis's arguments,
TransformerLens's names."""

import json
import warnings

import numpy as np
import pytest
import torch
from helpers import SRC, TGT, hand_trace, layered_trace, make_model, random_ids, real_trace

from transformer_viz import Intervention, ModelConfig, Trace
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.model import DecoderOnlyTransformer
from transformer_viz.trace.export import circuitsvis_arguments, transformerlens_cache, transformerlens_names
from transformer_viz.trace.names import attention_name

# to_npz / from_npz -------------------------------------------------------------------------------------------------

def assert_same_trace(loaded: Trace, trace: Trace) -> None:
    assert list(loaded) == list(trace)
    for key, tensor in trace.items():
        assert loaded[key].dtype == tensor.dtype and torch.equal(loaded[key], tensor), key
    assert (loaded.config, loaded.src_tokens, loaded.tgt_tokens, loaded.intervention) == (
        trace.config, trace.src_tokens, trace.tgt_tokens, trace.intervention)


def test_npz_round_trip_keeps_tensors_dtypes_tokens_config_and_intervention(tmp_path):
    model = make_model(mask_value=float("-inf"), norm_first=False, positional="learned")
    intervention = Intervention(ablate_heads={("cross", 1, 2), ("encoder_self", 0, 0)}, ablation="mean", scale=False)
    _, trace = model.run_with_trace(random_ids(1, 7, 20, [2]), random_ids(1, 5, 22), intervention)
    trace = trace.with_tokens(["a", "<b>", "a", "“c”", "中", "<pad>", "<pad>"], ["<bos>", "x", "y", "z", "w"])
    path = tmp_path / "trace.npz"
    trace.to_npz(path)
    loaded = Trace.from_npz(path)
    assert_same_trace(loaded, trace)
    assert loaded[attention_name("decoder_self", 0, "mask")].dtype == torch.bool
    assert np.isneginf(loaded.config.mask_value)
    attention_heatmap(loaded, "cross", 1, 2)  # a loaded trace draws like the original


def test_npz_round_trip_of_a_hand_built_trace_and_of_a_greedy_steps_prefix(tmp_path):
    hand = hand_trace(np.eye(3)[None])
    hand.to_npz(tmp_path / "hand.npz")
    assert_same_trace(Trace.from_npz(tmp_path / "hand.npz"), hand)
    prefix = real_trace().target_prefix(3)  # views into the full pass, not contiguous
    prefix.to_npz(tmp_path / "prefix.npz")
    assert_same_trace(Trace.from_npz(tmp_path / "prefix.npz"), prefix)


def test_from_npz_refuses_files_it_did_not_write(tmp_path):
    np.savez(tmp_path / "other.npz", weights=np.ones(3))
    (tmp_path / "text.npz").write_text("not a zip file")
    for path in (tmp_path / "other.npz", tmp_path / "text.npz"):
        with pytest.raises(ValueError, match=r"not a trace saved by Trace\.to_npz"):
            Trace.from_npz(path)
    with pytest.raises(FileNotFoundError):
        Trace.from_npz(tmp_path / "missing.npz")
    hand_trace(np.eye(2)[None]).to_npz(tmp_path / "hand.npz")
    with np.load(tmp_path / "hand.npz") as data:
        arrays = dict(data)
    meta = json.loads(str(arrays["meta"]))
    for change, message in (({"intervention": {"scale": "yes"}}, "intervention"), ({"names": ["x"]}, "other tensors"),
                            ({"version": 2}, "version 1")):
        arrays["meta"] = np.array(json.dumps({**meta, **change}))
        np.savez(tmp_path / "changed.npz", **arrays)
        with pytest.raises(ValueError, match=message):
            Trace.from_npz(tmp_path / "changed.npz")


# to_dataframe ------------------------------------------------------------------------------------------------------

def test_dataframe_is_one_row_per_weight_with_positions_tokens_and_the_recorded_value():
    trace = real_trace()  # 2 layers, 4 heads; 8 source and 6 target positions
    table = trace.to_dataframe()
    assert list(table.columns) == ["name", "kind", "layer", "head", "query", "key", "query_token", "key_token",
                                   "value"]
    assert len(table) == 2 * 4 * (8 * 8 + 6 * 6 + 6 * 8)
    # table["head"], not table.head (DataFrame.head, a method; so is DataFrame.query)
    row = table[(table["kind"] == "cross") & (table["layer"] == 1) & (table["head"] == 3) & (table["query"] == 2)
                & (table["key"] == 4)].iloc[0]
    assert row["name"] == "decoder.layers.1.cross_attn.weights"
    assert (row["query_token"], row["key_token"]) == (TGT[2], SRC[4])
    assert row["value"] == trace["decoder.layers.1.cross_attn.weights"][0, 3, 2, 4].item()
    # Every query's weights sum to 1 (the target <pad> query too: it sees the earlier tokens).
    sums = table.groupby(["kind", "layer", "head", "query"])["value"].sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-5)
    encoder = table[(table["kind"] == "encoder_self") & (table["layer"] == 0) & (table["head"] == 0)]
    assert list(encoder["key_token"][:8]) == SRC  # "the" twice, in its own place


def test_dataframe_of_a_trace_without_tokens_has_no_token_strings():
    table = layered_trace("decoder_self", [np.eye(3)[None]]).to_dataframe()
    assert len(table) == 9 and table["query_token"].isna().all() and table["key_token"].isna().all()
    assert table["value"].sum() == 3.0


# to_bertviz --------------------------------------------------------------------------------------------------------

def test_bertviz_arguments_are_per_layer_batches_of_one_and_the_tokens():
    trace = real_trace(layers=3)
    arguments = trace.to_bertviz()
    assert set(arguments) == {"encoder_attention", "decoder_attention", "cross_attention", "encoder_tokens",
                              "decoder_tokens", "include_layers"}
    assert arguments["include_layers"] == [0, 1, 2]
    for key, kind, shape in (("encoder_attention", "encoder_self", (1, 4, 8, 8)),
                             ("decoder_attention", "decoder_self", (1, 4, 6, 6)),
                             ("cross_attention", "cross", (1, 4, 6, 8))):
        assert isinstance(arguments[key], tuple) and len(arguments[key]) == 3
        for layer, weights in enumerate(arguments[key]):
            assert weights.shape == shape
            assert torch.equal(weights, trace[attention_name(kind, layer, "weights")][:1])
    assert arguments["encoder_tokens"] == SRC and arguments["decoder_tokens"] == TGT
    untokened = real_trace().with_tokens(None, None).to_bertviz()
    assert untokened["encoder_tokens"] == [str(i) for i in range(8)]


def test_bertviz_needs_every_kind_of_attention():
    with pytest.raises(ValueError, match="lacks decoder_self, cross"):
        layered_trace("encoder_self", [np.eye(2)[None]]).to_bertviz()


def test_bertviz_draws_a_trace():
    bertviz = pytest.importorskip("bertviz", reason="bertviz is optional (pip install '.[bertviz]'): not installed")
    trace = real_trace()
    page = bertviz.head_view(**trace.to_bertviz(), html_action="return")
    assert "bertviz" in page.data and '"mat"' in page.data and '"chat"' in page.data
    page = bertviz.model_view(**trace.to_bertviz(), html_action="return")
    assert '"Cross"' in page.data


def uneven_trace(encoder_layers: int, decoder_layers: int) -> Trace:
    model = make_model(n_encoder_layers=encoder_layers, n_decoder_layers=decoder_layers)
    _, trace = model.run_with_trace(random_ids(1, 5, 20), random_ids(1, 4, 22))
    return trace.with_tokens(["a", "b", "c", "d", "<eos>"], ["<bos>", "w", "x", "y"])


@pytest.mark.parametrize(("encoder", "decoder", "left_out"), [
    (3, 1, "left out: encoder_self layers 1-2."), (1, 3, "left out: decoder_self layers 1-2, cross layers 1-2.")])
def test_bertviz_of_an_encoder_and_a_decoder_of_different_depths_draws_the_layers_both_have(encoder, decoder,
                                                                                          left_out):
    trace = uneven_trace(encoder, decoder)
    with pytest.warns(UserWarning, match="one list of layers") as warned:
        arguments = trace.to_bertviz()
    assert str(warned[0].message).endswith(left_out) and warned[0].filename == __file__  # points at the caller
    assert arguments["include_layers"] == [0]
    assert (len(arguments["encoder_attention"]), len(arguments["decoder_attention"])) == (encoder, decoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        real_trace().to_bertviz()  # equal depths: nothing to say


def test_bertviz_draws_a_trace_whose_encoder_is_deeper():
    """BertViz 1.4 took the encoder's layer list for all three kinds: an IndexError in a shallower decoder."""
    bertviz = pytest.importorskip("bertviz", reason="bertviz is optional (pip install '.[bertviz]'): not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test above reads it
        arguments = uneven_trace(3, 1).to_bertviz()
    assert '"Cross"' in bertviz.head_view(**arguments, html_action="return").data
    assert '"Cross"' in bertviz.model_view(**arguments, html_action="return").data


# CircuitsVis -------------------------------------------------------------------------------------------------------

def test_circuitsvis_arguments_are_one_layer_of_self_attention_with_its_tokens():
    trace = real_trace(layers=2, heads=4)
    arguments = circuitsvis_arguments(trace, "encoder_self", 1)
    assert torch.equal(arguments["attention"], trace[attention_name("encoder_self", 1, "weights")][0])  # (4, 8, 8)
    assert arguments["tokens"] == SRC and arguments["attention_head_names"] == ["L1H0", "L1H1", "L1H2", "L1H3"]
    decoder = circuitsvis_arguments(trace, "decoder_self", 0)
    assert decoder["attention"].shape == (4, 6, 6) and decoder["tokens"] == TGT
    with pytest.raises(ValueError, match="one token list for queries and keys"):
        circuitsvis_arguments(trace, "cross", 0)
    with pytest.raises(ValueError, match="from 0 to 1"):
        circuitsvis_arguments(trace, "encoder_self", 2)


# TransformerLens ---------------------------------------------------------------------------------------------------

def gpt_trace(**overrides) -> Trace:
    config = ModelConfig(**{**dict(src_vocab_size=20, tgt_vocab_size=20, architecture="decoder_only", d_model=16,
                                   n_heads=4, d_ff=32, n_decoder_layers=2), **overrides})
    _, trace = DecoderOnlyTransformer(config).eval().run_with_trace(random_ids(2, 6, 20))  # batch 2, 6 positions
    return trace


def test_transformerlens_names_of_a_decoder_only_trace():
    trace = gpt_trace()
    names = transformerlens_names(trace)
    assert names["blocks.0.attn.hook_pattern"] == "decoder.layers.0.self_attn.weights"
    assert names["blocks.1.attn.hook_attn_scores"] == "decoder.layers.1.self_attn.masked_scores"
    assert names["blocks.0.hook_resid_pre"] == "tgt_embed.out"
    assert names["blocks.1.hook_resid_pre"] == "decoder.layers.0.resid_post"
    assert (names["hook_embed"], names["ln_final.hook_normalized"]) == ("tgt_embed.token", "decoder.out")
    assert set(names.values()) <= set(trace) and len(names) == 3 + 2 * 10
    cache = transformerlens_cache(trace)
    q = trace["decoder.layers.1.self_attn.q"]  # (batch, heads, tgt_len, d_head)
    assert cache["blocks.1.attn.hook_q"].shape == (2, 6, 4, 4)  # TransformerLens: (batch, pos, head_index, d_head)
    assert torch.equal(cache["blocks.1.attn.hook_q"][:, 3, 2], q[:, 2, 3])
    assert cache["hook_pos_embed"].shape == (2, 6, 16)
    # What the names mean: in a pre-LN block, resid_mid = resid_pre + attn_out (TransformerLens's own identity).
    for layer in (0, 1):
        block = f"blocks.{layer}"
        torch.testing.assert_close(cache[f"{block}.hook_resid_mid"],
                                   cache[f"{block}.hook_resid_pre"] + cache[f"{block}.hook_attn_out"])


def test_transformerlens_names_follow_the_model_variant():
    rotary = transformerlens_names(gpt_trace(positional="rotary", attention_only=True))
    assert "hook_pos_embed" not in rotary and "blocks.0.hook_resid_mid" not in rotary  # as TransformerLens's own
    assert rotary["blocks.0.attn.hook_rot_k"] == "decoder.layers.0.self_attn.k_rot"
    assert "blocks.0.mlp.hook_post" not in rotary
    assert "ln_final.hook_normalized" not in transformerlens_names(gpt_trace(norm_first=False))  # no final norm
    with pytest.raises(ValueError, match="decoder-only"):
        transformerlens_names(real_trace())
