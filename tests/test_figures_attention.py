"""Attention and mask figures as data: z values, tiles, click targets, hover data, masks, entropy."""

import json
import math
import re

import numpy as np
import pytest
import torch

from transformer_viz import ModelConfig, Trace, Transformer
from transformer_viz.figures.attention import (
    attention_grid,
    attention_heatmap,
    attention_lines,
    cell_selection,
    entropy_bits,
    grid_selection,
    head_entropy,
    mask_figures,
    mask_heatmap,
    masking_steps,
    query_selection,
)
from transformer_viz.figures.common import MASK_COLOURS, format_number

SRC = ["the", "cat", "sat", "on", "the", "mat", "<pad>", "<pad>"]  # "the" twice, two pads
TGT = ["<bos>", "le", "chat", "sur", "le", "<pad>"]


def real_trace(layers=2, heads=4, src=SRC, tgt=TGT, mask_value=-1e9) -> Trace:
    """A traced forward pass of a tiny random model; "<pad>" tokens get the pad id 0."""
    config = ModelConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=4 * heads, n_heads=heads,
                         n_encoder_layers=layers, n_decoder_layers=layers, d_ff=16, max_len=32, mask_value=mask_value)
    model = Transformer(config).eval()

    def ids(tokens):
        return torch.tensor([[0 if t == "<pad>" else 1 + i % 11 for i, t in enumerate(tokens)]])

    _, trace = model.run_with_trace(ids(src), ids(tgt))
    return trace.with_tokens(src, tgt)


def hand_trace(weights, mask=None, scores=None, masked_scores=None, kind="encoder_self") -> Trace:
    """A one-layer trace built by hand: weights, scores, masked_scores (heads, q_len, k_len), mask (q_len, k_len)."""
    weights = torch.as_tensor(np.asarray(weights, np.float32))[None]  # (1, heads, q_len, k_len)
    stack, sublayer = {"encoder_self": ("encoder", "self_attn"), "decoder_self": ("decoder", "self_attn")}[kind]
    prefix = f"{stack}.layers.0.{sublayer}"
    tensors = {f"{prefix}.weights": weights,
               f"{prefix}.scores": torch.zeros_like(weights) if scores is None else torch.as_tensor(scores)[None],
               f"{prefix}.mask": torch.ones(weights.shape[2:], dtype=torch.bool)[None, None] if mask is None
               else torch.as_tensor(np.asarray(mask, bool))[None, None]}
    if masked_scores is not None:
        tensors[f"{prefix}.masked_scores"] = torch.as_tensor(masked_scores)[None]
    return Trace(tensors)


def recorded(trace, kind_prefix, leaf):
    return trace[f"{kind_prefix}.{leaf}"][0].numpy()


def tile(z, layer, head, q_len, k_len, gap):
    return z[layer * (q_len + gap): layer * (q_len + gap) + q_len, head * (k_len + gap): head * (k_len + gap) + k_len]


def gap_of(fig, q_len, layers):
    rows = np.asarray(fig.data[0].z).shape[0]
    return (rows - layers * q_len) // (layers - 1) if layers > 1 else 1


def path_cells(path: str) -> set[tuple[int, int]]:
    """The (row, col) cells covered by a path made of "M x0,y0 H x1 V y1 H x0 Z" rectangles."""
    cells = set()
    for x0, y0, x1, y1 in re.findall(r"M([-\d.]+),([-\d.]+)H([-\d.]+)V([-\d.]+)H[-\d.]+Z", path):
        rows = range(round(float(y0) + 0.5), round(float(y1) + 0.5))
        cols = range(round(float(x0) + 0.5), round(float(x1) + 0.5))
        cells |= {(r, c) for r in rows for c in cols}
    return cells


# attention_grid -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,q_tokens,k_tokens", [("encoder_self", SRC, SRC), ("cross", TGT, SRC)])
def test_grid_z_holds_each_heads_weights_at_its_tile_with_nan_gutters(kind, q_tokens, k_tokens):
    trace = real_trace()
    fig = attention_grid(trace, kind)
    z = np.asarray(fig.data[0].z, dtype=float)
    q_len, k_len, gap = len(q_tokens), len(k_tokens), 1
    assert z.shape == (2 * (q_len + gap) - gap, 4 * (k_len + gap) - gap)
    sublayer = "cross_attn" if kind == "cross" else "self_attn"
    stack = "decoder" if kind == "cross" else "encoder"
    for layer in range(2):
        weights = recorded(trace, f"{stack}.layers.{layer}.{sublayer}", "weights")
        for head in range(4):
            np.testing.assert_allclose(tile(z, layer, head, q_len, k_len, gap), weights[head], atol=1e-6)
    assert np.isnan(z[q_len]).all()  # the gutter row between the layers
    assert all(np.isnan(z[:, (head + 1) * (k_len + gap) - 1]).all() for head in range(3))
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)
    assert fig.data[0].colorscale is not None


@pytest.mark.parametrize("layers,heads,length", [(1, 1, 5), (2, 4, 8), (6, 8, 32)])
def test_grid_is_one_heatmap_with_one_click_target_per_tile(layers, heads, length):
    tokens = [f"t{i % 7}" for i in range(length)]
    fig = attention_grid(real_trace(layers, heads, tokens, tokens), "decoder_self")
    assert [trace.type for trace in fig.data] == ["heatmap", "scatter"]
    targets = fig.data[1]
    assert sorted(map(tuple, targets.customdata)) == [(lay, h) for lay in range(layers) for h in range(heads)]
    assert len(targets.x) == len(targets.y) == layers * heads
    assert targets.marker.opacity <= 0.05 and targets.hoverinfo != "skip"
    assert targets.marker.size >= 20  # large enough to click
    headers = [a.text for a in fig.layout.annotations]
    assert headers == [f"Head {h + 1}" for h in range(heads)] + [f"Layer {lay + 1}" for lay in range(layers)]
    # Each target sits at the centre cell of its own tile.
    x_names, y_names = list(fig.data[0].x), list(fig.data[0].y)
    gap = (len(x_names) - heads * length) // max(heads - 1, 1) if heads > 1 else 1
    for (layer, head), x, y in zip(targets.customdata, targets.x, targets.y, strict=True):
        assert x_names.index(x) == head * (length + gap) + length // 2
        assert y_names.index(y) == layer * (length + gap) + length // 2
    if layers == 6:
        assert len(fig.to_json()) < 900_000  # no per-cell strings: two float32 planes and a path
        assert fig.layout.height > attention_grid(real_trace(2, heads, tokens, tokens), "decoder_self").layout.height


def test_grid_hover_names_layer_head_and_distinct_duplicate_tokens():
    trace = real_trace()
    fig = attention_grid(trace, "encoder_self")
    heatmap = fig.data[0]
    y_names, x_names = list(heatmap.y), list(heatmap.x)
    assert len(set(y_names)) == len(y_names) and len(set(x_names)) == len(x_names)
    assert y_names[0] == "Layer 1 · query 0 “the”" and y_names[4] == "Layer 1 · query 4 “the”"
    assert x_names[9 + 4] == "Head 2 · key 4 “the”" and x_names[9 + 6] == "Head 2 · key 6 “&lt;pad&gt;”"
    custom = np.asarray(heatmap.customdata, dtype=float)
    scores = recorded(trace, "encoder.layers.1.self_attn", "scores")
    np.testing.assert_allclose(tile(custom, 1, 3, 8, 8, 1), scores[3], atol=1e-6)
    template = heatmap.hovertemplate
    assert "%{y}" in template and "%{x}" in template and "%{z:.3f}" in template and "%{customdata:.3f}" in template
    # Tokens along the edges as tick text, placed at the tile cells (the gutters get none).
    pad = "&lt;pad&gt;"
    assert list(fig.layout.yaxis.ticktext[:8]) == ["the", "cat", "sat", "on", "the", "mat", pad, pad]
    assert list(fig.layout.yaxis.tickvals) == [n for n in y_names if not n.startswith("gap")]


def test_grid_scores_use_a_symmetric_diverging_range_and_masked_scores_keep_the_fill_out_of_it():
    trace = real_trace()
    scores = np.stack([recorded(trace, f"decoder.layers.{i}.self_attn", "scores") for i in range(2)])
    raw = attention_grid(trace, "decoder_self", "scores").data[0]
    assert raw.zmin == -raw.zmax and raw.zmax == pytest.approx(np.abs(scores).max(), rel=1e-6)
    assert raw.colorscale[0][1] != attention_grid(trace, "decoder_self").data[0].colorscale[0][1]

    fig = attention_grid(trace, "decoder_self", "masked_scores")
    masked = fig.data[0]
    mask = recorded(trace, "decoder.layers.0.self_attn", "mask")[0]
    allowed = np.broadcast_to(mask, scores.shape)
    assert masked.zmin == -masked.zmax and masked.zmax == pytest.approx(np.abs(scores[allowed]).max(), rel=1e-6)
    assert masked.zmax < 1e3
    z = np.asarray(masked.z, dtype=float)
    np.testing.assert_array_equal(tile(z, 0, 0, 6, 6, 1)[~mask], -1e9)
    custom = np.asarray(masked.customdata, dtype=float)  # (rows, cols, [weight, raw score])
    np.testing.assert_allclose(tile(custom[..., 1], 1, 2, 6, 6, 1), scores[1, 2], atol=1e-6)
    assert "masked score" in masked.hovertemplate and "%{customdata[0]" in masked.hovertemplate


def test_grid_greys_exactly_the_blocked_cells_including_rows_with_no_allowed_key():
    mask = np.ones((4, 4), bool)
    mask[:, 3] = False  # a padded key
    mask[2] = False  # a query with no allowed key at all: all its weights are 0
    weights = np.where(mask, 1 / 3, 0.0)[None].repeat(2, 0)  # (heads, q_len, k_len)
    fig = attention_grid(hand_trace(weights, mask), "encoder_self")
    (shape,) = fig.layout.shapes
    assert shape.layer == "above" and shape.fillcolor is not None
    expected = {(i, head * 5 + j) for head in range(2) for i, j in zip(*np.nonzero(~mask), strict=True)}
    assert path_cells(shape.path) == expected
    assert not attention_grid(hand_trace(weights, mask), "encoder_self", "scores").layout.shapes


def test_grid_outlines_the_highlighted_tile_and_titles_its_size():
    fig = attention_grid(real_trace(2, 4), "encoder_self", highlight=(1, 2))
    (outline,) = fig.layout.shapes[1:]  # after the grey of the padded keys
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (17.5, 25.5, 8.5, 16.5)  # 8 tokens, gutters of 1
    assert fig.layout.title.text == "Encoder self-attention · weights · 2 layers × 4 heads"


def test_grid_selection_reads_layer_and_head_and_tolerates_empty_events():
    event = {"selection": {"points": [{"curve_number": 1, "point_number": 6, "point_index": 6,
                                       "x": "Head 3 · key 4 “the”", "y": "Layer 2 · query 4 “the”",
                                       "customdata": [1, 2]}],
                           "point_indices": [6], "box": [], "lasso": []}}
    assert grid_selection(event) == (1, 2)
    assert grid_selection({"selection": {"points": [{"customdata": {"0": 3, "1": 0}}]}}) == (3, 0)
    for empty in (None, {}, {"selection": None}, {"selection": {"points": []}},
                  {"selection": {"points": [{"x": 1, "y": 2}]}}, {"selection": {"points": [{"customdata": [0.5]}]}},
                  {"selection": {"points": [{"customdata": None}]}}, "not an event"):
        assert grid_selection(empty) is None


# attention_heatmap ----------------------------------------------------------------------------------------------

def test_heatmap_keeps_duplicate_tokens_apart_and_draws_the_recorded_weights():
    trace = real_trace()
    fig = attention_heatmap(trace, "encoder_self", 1, 2)
    heatmap = fig.data[0]
    np.testing.assert_allclose(np.asarray(heatmap.z, float), recorded(trace, "encoder.layers.1.self_attn",
                                                                      "weights")[2], atol=1e-6)
    assert list(fig.layout.xaxis.tickvals) == list(range(8)) and list(fig.layout.yaxis.tickvals) == list(range(8))
    assert list(fig.layout.xaxis.ticktext).count("the") == 2
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # first query at the top
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0)
    assert fig.layout.title.text.endswith("Layer 2 · Head 3")
    assert heatmap.text is not None  # 8 tokens: values written in the cells


def test_heatmap_greys_blocked_cells_and_its_click_targets_carry_query_and_key():
    trace = real_trace()
    fig = attention_heatmap(trace, "decoder_self", 0, 1, highlight=(3, 1))
    mask = recorded(trace, "decoder.layers.0.self_attn", "mask")[0]
    grey = fig.data[1]
    np.testing.assert_array_equal(~np.isnan(np.asarray(grey.z, float)), ~mask)
    assert grey.hoverinfo == "skip" and grey.showscale is False
    targets = fig.data[2]
    assert [tuple(c) for c in targets.customdata] == [(i, j) for i in range(6) for j in range(6)]
    assert targets.marker.opacity <= 0.05 and targets.hoverinfo != "skip"
    weights = recorded(trace, "decoder.layers.0.self_attn", "weights")[1]
    scores = recorded(trace, "decoder.layers.0.self_attn", "scores")[1]
    hover = targets.hovertext[2 * 6 + 4]  # query 2 "chat" may not see key 4 "le"
    assert "query 2 “chat” → key 4 “le”" in hover and "blocked" in hover and "−1e9" in hover
    assert f"raw score {scores[2, 4]:.3f}" in hover and "weight 0.000" in hover
    assert f"weight {weights[2, 1]:.3f}" in targets.hovertext[2 * 6 + 1] and "may attend" in targets.hovertext[13]
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.y0) == (0.5, 2.5)
    assert cell_selection({"selection": {"points": [{"curve_number": 2, "customdata": [4, 2]}]}}) == (4, 2)
    assert cell_selection({"selection": {"points": []}}) is None


def test_heatmap_masked_scores_keep_the_fill_out_of_the_colour_range():
    trace = real_trace(mask_value=float("-inf"))
    fig = attention_heatmap(trace, "decoder_self", 1, 0, "masked_scores")
    heatmap = fig.data[0]
    assert heatmap.zmin == -heatmap.zmax and np.isfinite(heatmap.zmax) and heatmap.zmax < 1e3
    mask = recorded(trace, "decoder.layers.1.self_attn", "mask")[0]
    assert np.isneginf(np.asarray(heatmap.z, float)[~mask]).all()
    assert set(np.asarray(fig.data[1].text)[~mask]) == {"−∞"}
    assert "−∞" in fig.data[2].hovertext[1]


def test_heatmap_writes_values_only_when_they_fit():
    tokens = [f"w{i}" for i in range(20)]
    trace = real_trace(1, 2, tokens, tokens)
    assert attention_heatmap(trace, "encoder_self", 0, 0).data[0].text is None
    assert attention_heatmap(trace, "encoder_self", 0, 0, show_values=True).data[0].text is not None


def test_masked_scores_are_drawn_as_recorded_not_recomputed():
    # The recorded fill (-7) is not the default mask value (-1e9): a figure that recomputed the
    # masked scores from scores, mask and a mask value would draw -1e9.
    mask = np.tril(np.ones((3, 3), bool))
    scores = np.arange(2 * 9, dtype=np.float32).reshape(2, 3, 3) / 10  # (heads, q_len, k_len)
    masked = np.where(mask, scores, np.float32(-7.0))
    trace = hand_trace(np.where(mask, 0.5, 0.0)[None].repeat(2, 0), mask, scores, masked)
    grid = np.asarray(attention_grid(trace, "encoder_self", "masked_scores").data[0].z, float)
    np.testing.assert_allclose(tile(grid, 0, 1, 3, 3, 1), masked[1])
    heatmap = attention_heatmap(trace, "encoder_self", 0, 1, "masked_scores").data[0]
    np.testing.assert_allclose(np.asarray(heatmap.z, float), masked[1])
    steps = masking_steps(trace, "encoder_self", 0, 1).data[1]
    np.testing.assert_allclose(np.asarray(steps.z, float), masked[1])


# attention_lines ------------------------------------------------------------------------------------------------

def segments(trace):
    """(query, key) pairs drawn by a line trace of None-separated segments."""
    return [(trace.y[i], trace.y[i + 1]) for i in range(0, len(trace.y), 3)]


def test_lines_draw_every_visible_weight_once_in_a_few_opacity_bins():
    trace = real_trace()
    fig = attention_lines(trace, "cross", 1, 3)
    weights = recorded(trace, "decoder.layers.1.cross_attn", "weights")[3]
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(fig.data) <= 10 and len(lines) == 5
    drawn = sorted(pair for t in lines for pair in segments(t))
    assert drawn == sorted(zip(*np.nonzero(weights >= 0.02), strict=True))
    opacities = [t.opacity for t in lines]
    assert opacities == sorted(opacities)  # heavier bins are more opaque
    for t in lines:
        assert all(x in (0, 1, None) for x in t.x)


def test_lines_for_one_query_draw_only_its_lines_strongly():
    trace = real_trace()
    fig = attention_lines(trace, "encoder_self", 0, 0, query=2)
    strong = [t for t in fig.data if t.mode == "lines" and t.name != "other queries"]
    assert {q for t in strong for q, _ in segments(t)} <= {2}
    (faint,) = [t for t in fig.data if t.name == "other queries"]
    assert faint.opacity < min(t.opacity for t in strong)
    assert 2 not in {q for q, _ in segments(faint)}
    (queries,) = [t for t in fig.data if t.name == "queries"]
    assert [c[0] for c in queries.customdata] == list(range(8))
    assert queries.textfont.color[2] != queries.textfont.color[1]  # the chosen query stands out
    assert query_selection({"selection": {"points": [{"curve_number": 6, "customdata": [5]}]}}) == 5
    assert query_selection({"selection": {"points": [{"curve_number": 7, "x": 1, "y": 3}]}}) is None


# head_entropy ---------------------------------------------------------------------------------------------------

def test_entropy_of_a_uniform_head_is_log2_n_and_of_a_one_hot_head_zero():
    n = 5
    uniform = np.full((n, n), 1 / n)
    one_hot = np.eye(n)
    fig = head_entropy(hand_trace(np.stack([uniform, one_hot])), "encoder_self")
    assert [bar.type for bar in fig.data] == ["bar", "bar"]
    assert fig.data[0].y[0] == pytest.approx(math.log2(n))
    assert fig.data[1].y[0] == pytest.approx(0.0)
    (line,) = fig.layout.shapes
    assert line.y0 == pytest.approx(math.log2(n)) and line.line.dash == "dash"


def test_entropy_ignores_rows_with_no_allowed_key_and_uses_the_mean_number_of_allowed_keys():
    mask = np.tril(np.ones((4, 4), bool))
    mask[0] = False  # no allowed key: left out of the mean
    weights = np.where(mask, 1 / np.maximum(mask.sum(1, keepdims=True), 1), 0.0)  # uniform over allowed keys
    expected = np.mean([math.log2(k) for k in (2, 3, 4)])
    assert entropy_bits(weights[None], mask)[0] == pytest.approx(expected)
    fig = head_entropy(hand_trace(weights[None], mask), "encoder_self")
    assert fig.layout.shapes[0].y0 == pytest.approx(math.log2(3.0))  # mean of 2, 3 and 4 allowed keys


# masks ----------------------------------------------------------------------------------------------------------

def test_mask_heatmap_draws_the_mask_with_a_may_attend_and_blocked_legend():
    mask = np.array([[True, False, False], [True, True, False]])
    fig = mask_heatmap(mask, ["a", "b"], ["a", "b", "<pad>"], "Look-ahead")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), mask.astype(int))
    assert {t.name: t.marker.color for t in fig.data[1:]} == {"may attend": MASK_COLOURS[-1][1],
                                                              "blocked": MASK_COLOURS[0][1]}
    assert fig.data[0].colorscale[0][1] == MASK_COLOURS[0][1] and fig.data[0].colorscale[-1][1] == MASK_COLOURS[-1][1]
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "&lt;pad&gt;"]
    assert "blocked" in fig.data[0].hovertext[0][2] and "may attend" in fig.data[0].hovertext[1][1]


def test_mask_figures_come_from_the_recorded_masks():
    trace = real_trace()
    figures = mask_figures(trace)
    assert list(figures) == ["source_padding", "target_padding", "look_ahead", "decoder_self"]
    source = recorded(trace, "encoder.layers.0.self_attn", "mask")[0]
    combined = recorded(trace, "decoder.layers.0.self_attn", "mask")[0]
    z = {name: np.asarray(fig.data[0].z, bool) for name, fig in figures.items()}
    np.testing.assert_array_equal(z["source_padding"], source)
    np.testing.assert_array_equal(z["decoder_self"], combined)
    np.testing.assert_array_equal(z["look_ahead"], np.tril(np.ones((6, 6), bool)))
    np.testing.assert_array_equal(z["target_padding"], np.broadcast_to([True] * 5 + [False], (6, 6)))
    assert not source[:, 6:].any() and source[:, :6].all()
    np.testing.assert_array_equal(z["look_ahead"] & z["target_padding"], combined)


def test_masking_steps_turn_the_fill_into_zero_weight():
    trace = real_trace()
    fig = masking_steps(trace, "decoder_self", 1, 2)
    prefix = "decoder.layers.1.self_attn"
    scores, weights = recorded(trace, prefix, "scores")[2], recorded(trace, prefix, "weights")[2]
    mask = recorded(trace, prefix, "mask")[0]
    raw, masked, masked_grey, weight, weight_grey = fig.data
    np.testing.assert_allclose(np.asarray(raw.z, float), scores, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(masked.z, float)[~mask], -1e9)
    np.testing.assert_allclose(np.asarray(masked.z, float)[mask], scores[mask], atol=1e-6)
    np.testing.assert_allclose(np.asarray(weight.z, float), weights, atol=1e-6)
    assert (raw.zmin, raw.zmax) == (masked.zmin, masked.zmax) and masked.zmax < 1e3
    assert (weight.zmin, weight.zmax) == (0.0, 1.0)
    assert set(np.asarray(masked_grey.text)[~mask]) == {"−1e9"} and set(np.asarray(weight_grey.text)[~mask]) == {"0"}
    assert "−1e9 (blocked)" in masked.hovertext[0][3] and "≈ 0" in weight.hovertext[0][3]
    assert [a.text for a in fig.layout.annotations][:3] == [
        "① raw scores q·k / √d_k", "② masked: blocked → −1e9", "③ softmax → weights"]


# shared ---------------------------------------------------------------------------------------------------------

def test_unknown_kind_or_value_is_a_clear_error():
    trace = real_trace(1, 1)
    with pytest.raises(ValueError, match="kind must be one of"):
        attention_grid(trace, "self")
    with pytest.raises(ValueError, match="value must be one of"):
        attention_heatmap(trace, "cross", 0, 0, value="probabilities")


@pytest.mark.parametrize("value, text", [
    (-1e9, "−1e9"), (float("-inf"), "−∞"), (-1e4, "−1e4"), (-2.5e9, "−2.5e9"), (12345.0, "1.23e4"),
    (99_999.99, "1e5"), (1.234, "1.23"), (0.5, "0.50"), (-2.345, "−2.35"), (-0.5, "−0.50"), (-0.004, "0.00"),
    (0.0, "0.00"),
])
def test_numbers_read_as_a_student_writes_them(value, text):
    assert format_number(value) == text


def test_figures_serialise_to_json():
    trace = real_trace()
    for fig in (attention_grid(trace, "cross", "masked_scores"), attention_heatmap(trace, "cross", 0, 0),
                attention_lines(trace, "cross", 0, 0, query=1), head_entropy(trace, "cross"),
                masking_steps(trace, "encoder_self", 0, 0), *mask_figures(trace).values()):
        assert json.loads(fig.to_json())["data"]
