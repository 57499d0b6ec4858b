"""One-head attention figures as data: z values, click targets, hover data, lines, entropy."""

import json
import math

import numpy as np
import pytest
from helpers import drawn_alpha, hand_trace, real_trace, recorded, tile

from transformer_viz.figures.attention import (
    attention_heatmap,
    attention_lines,
    cell_selection,
    entropy_bits,
    head_entropy,
    query_selection,
)
from transformer_viz.figures.grid import attention_grid
from transformer_viz.figures.masks import mask_figures, masking_steps
from transformer_viz.figures.numbers import format_number

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
    assert drawn_alpha(targets) < 0.02 and targets.hoverinfo != "skip"  # invisible, yet hovered and clicked
    weights = recorded(trace, "decoder.layers.0.self_attn", "weights")[1]
    scores = recorded(trace, "decoder.layers.0.self_attn", "scores")[1]
    hover = targets.hovertext[2 * 6 + 4]  # query 2 "chat" may not see key 4 "le"
    assert "query 2 “chat” → key 4 “le”" in hover and "blocked" in hover and "−1e9" in hover
    assert f"scaled score {scores[2, 4]:.3f}" in hover and "weight 0.000" in hover
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


def test_entropy_ignores_rows_with_no_allowed_key_and_its_line_is_what_uniform_attention_gives():
    mask = np.tril(np.ones((4, 4), bool))
    mask[0] = False  # no allowed key: left out of the mean
    weights = np.where(mask, 1 / np.maximum(mask.sum(1, keepdims=True), 1), 0.0)  # uniform over allowed keys
    expected = np.mean([math.log2(k) for k in (2, 3, 4)])
    assert entropy_bits(weights[None], mask)[0] == pytest.approx(expected)
    fig = head_entropy(hand_trace(weights[None], mask), "encoder_self")
    assert fig.layout.shapes[0].y0 == pytest.approx(expected)  # the bar of this uniform head, on the line


def test_entropy_line_under_look_ahead_is_the_mean_of_log2_not_log2_of_the_mean():
    """The issue: 7 decoder tokens showed 2.00 bits (log2 of the mean 4 keys); uniform attention gives 1.76."""
    n = 7
    mask = np.tril(np.ones((n, n), bool))
    uniform = np.where(mask, 1 / mask.sum(1, keepdims=True), 0.0)  # each query spreads evenly over its keys
    fig = head_entropy(hand_trace(uniform[None], mask, kind="decoder_self"), "decoder_self")
    assert fig.data[0].y[0] == pytest.approx(np.mean(np.log2(np.arange(1, n + 1))))
    assert fig.layout.shapes[0].y0 == pytest.approx(fig.data[0].y[0]) == pytest.approx(1.757, abs=1e-3)
    assert fig.layout.annotations[0].text == "uniform attention: 1.76 bits"
    zh = head_entropy(hand_trace(uniform[None], mask, kind="decoder_self"), "decoder_self", lang="zh")
    assert zh.layout.annotations[0].text == "均匀注意力：1.76 比特"




# shared ---------------------------------------------------------------------------------------------------------

def test_unknown_kind_or_value_is_a_clear_error():
    trace = real_trace(1, 1)
    with pytest.raises(ValueError, match=r"Unknown attention kind .* choose one of encoder_self"):
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
