"""A trace outside the app: .npz round trip, the tidy attention table, BertViz's arguments."""

import json

import numpy as np
import pytest
import torch
from helpers import SRC, TGT, hand_trace, layered_trace, make_model, random_ids, real_trace

from transformer_viz import Intervention, Trace
from transformer_viz.figures.attention import attention_heatmap
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
                              "decoder_tokens"}
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
    bertviz = pytest.importorskip("bertviz", reason="bertviz is optional (pip install bertviz): not installed here")
    trace = real_trace()
    page = bertviz.head_view(**trace.to_bertviz(), html_action="return")
    assert "bertviz" in page.data and '"mat"' in page.data and '"chat"' in page.data
    page = bertviz.model_view(**trace.to_bertviz(), html_action="return")
    assert '"Cross"' in page.data
