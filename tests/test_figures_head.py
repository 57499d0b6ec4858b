"""Figures of one head, checked as data: values, cell text, masked cells, titles, outlines."""

import dataclasses
import json

import numpy as np
import pytest
from helpers import make_model, random_ids

from transformer_viz.analysis.walkthrough import head_walkthrough
from transformer_viz.figures.attention import attention_heatmap
from transformer_viz.figures.colours import BLOCKED_GREY
from transformer_viz.figures.head import STEP_KEYS, dot_product_figure, walkthrough_figures
from transformer_viz.figures.numbers import format_number
from transformer_viz.figures.panels import matrix_heatmap


def traced(d_model=8, n_heads=2, length=4, mask_value=-1e9):
    """A tiny model and its trace of a source that ends with a pad (so some keys are blocked)."""
    model = make_model(d_model=d_model, n_heads=n_heads, mask_value=mask_value)
    _, trace = model.run_with_trace(random_ids(1, length, 20, pad_tail=[1]), random_ids(1, length, 22))
    return model, trace


def walk(kind="encoder_self", layer=0, head=1, **shape):
    """A walkthrough of one head of `traced`."""
    return head_walkthrough(*traced(**shape), kind, layer, head)


def z(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


def is_overlay(trace) -> bool:
    return trace.colorscale[0][1] == BLOCKED_GREY


def panels(fig) -> list:
    """The main heatmap of every panel, in the order the panels were laid out."""
    return [t for t in fig.data if not is_overlay(t)]


def has_text(trace) -> bool:
    return bool(trace.texttemplate) and trace.text is not None


def subplot_titles(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations]


def test_small_matrix_has_values_in_cells_and_first_row_on_top():
    matrix = np.array([[0.5, -1.25, 0.0], [2.0, 0.125, -0.75]])
    fig = matrix_heatmap(matrix, ["a", "b"], ["x", "y", "x"], "M (2 × 3)")
    (main,) = fig.data
    np.testing.assert_array_equal(z(main), matrix)
    assert has_text(main) and [list(row) for row in main.text] == [["0.50", "−1.25", "0.00"], ["2.00", "0.12", "−0.75"]]
    assert (main.zmin, main.zmax, main.zmid) == (-2.0, 2.0, 0.0)
    assert fig.layout.title.text == "M (2 × 3)"
    assert fig.layout.yaxis.autorange == "reversed" and list(fig.layout.yaxis.ticktext) == ["a", "b"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2] and list(fig.layout.xaxis.ticktext) == ["x", "y", "x"]
    assert not main.showscale  # the numbers are in the cells
    assert not fig.layout.shapes


def test_tokens_show_as_written_on_axes_and_in_hover():
    fig = matrix_heatmap(np.zeros((2, 2)), ["<s>", "a"], ["<pad>", "b"], "t")
    assert list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "a"]
    assert list(fig.layout.xaxis.ticktext) == ["&lt;pad&gt;", "b"]
    assert fig.data[0].hovertext[0][0].startswith("&lt;s&gt; · &lt;pad&gt;")


def test_large_matrix_has_colours_only_and_a_colour_bar():
    matrix = np.linspace(-1, 1, 20 * 20).reshape(20, 20)
    (main,) = matrix_heatmap(matrix, list("abcdefghijklmnopqrst"), [str(i) for i in range(20)], "big").data
    assert not has_text(main) and main.showscale
    np.testing.assert_allclose(z(main), matrix)


@pytest.mark.parametrize("shape, show_values", [((2, 2), False), ((13, 17), True)])
def test_show_values_overrides_the_size_rule(shape, show_values):
    matrix = np.ones(shape)
    rows, cols = [str(i) for i in range(shape[0])], [str(i) for i in range(shape[1])]
    (main,) = matrix_heatmap(matrix, rows, cols, "t", show_values=show_values).data
    assert has_text(main) == show_values


def test_masked_cells_are_grey_text_outside_the_colour_range():
    scores = np.array([[0.5, -1e9], [-0.25, 0.1]])
    blocked = np.array([[False, True], [False, False]])
    main, overlay = matrix_heatmap(scores, ["a", "b"], ["a", "b"], "masked", blocked=blocked).data
    assert np.isnan(z(main)[0, 1]) and (main.zmin, main.zmax) == (-0.5, 0.5)
    assert is_overlay(overlay) and np.array_equal(~np.isnan(z(overlay)), blocked)
    assert [list(row) for row in overlay.text] == [["", "−1e9"], ["", ""]]
    # Plotly writes a NaN cell's text too: the main heatmap leaves the blocked cell to the grey layer's, or it would
    # be written twice
    assert [list(row) for row in main.text] == [["0.50", ""], ["−0.25", "0.10"]]


def test_minus_infinity_is_treated_as_blocked_even_unannounced():
    scores = np.array([[0.3, float("-inf")], [float("-inf"), -0.6]])
    main, overlay = matrix_heatmap(scores, ["a", "b"], ["a", "b"], "masked").data
    assert (main.zmin, main.zmax) == (-0.6, 0.6)
    assert overlay.text[0][1] == "−∞" and overlay.text[1][0] == "−∞"
    json.loads(matrix_heatmap(scores, ["a", "b"], ["a", "b"], "masked").to_json())  # no infinities leak


def test_weights_use_a_fixed_0_to_1_range():
    (main,) = matrix_heatmap(np.array([[0.2, 0.3]]), ["q"], ["a", "b"], "A", signed=False).data
    assert (main.zmin, main.zmax) == (0.0, 1.0)
    signed = matrix_heatmap(np.array([[0.2, -0.3]]), ["q"], ["a", "b"], "S").data[0]
    assert main.colorscale != signed.colorscale and signed.zmid == 0.0


def test_highlight_outlines_one_cell():
    fig = matrix_heatmap(np.zeros((3, 4)), list("abc"), list("wxyz"), "t", highlight=(1, 2))
    (shape,) = fig.layout.shapes
    assert (shape.x0, shape.x1, shape.y0, shape.y1) == (1.5, 2.5, 0.5, 1.5)


def test_steps_come_in_order_with_1_based_context():
    steps = walkthrough_figures(walk(layer=1, head=1))
    assert [key for key, _ in steps] == [key for key in STEP_KEYS if key != "rotate"]  # no rotary positions
    for _, fig in steps:
        assert fig.layout.title.text
        assert fig.layout.title.subtitle.text == "Encoder self-attention · layer 2 · head 2 of 2"


def test_projection_panels_show_the_weights_and_results():
    w = walk()
    fig = dict(walkthrough_figures(w))["projections"]
    expected = [w.w_q, w.w_k, w.w_v, w.b_q[None], w.b_k[None], w.b_v[None], w.q, w.k, w.v]
    for panel, matrix in zip(panels(fig), expected, strict=True):
        np.testing.assert_allclose(z(panel), matrix)
    assert {"W_Q (8 × 4)", "b_Q", "Q = X·W_Q + b_Q (4 × 4)", "V = X·W_V + b_V (4 × 4)"} <= set(subplot_titles(fig))
    cross = dict(walkthrough_figures(walk("cross")))
    assert "K = M·W_K + b_K (4 × 4)" in subplot_titles(cross["projections"])
    assert subplot_titles(cross["x"]) == ["X = norm2(decoder.layers.0.resid_mid) (4 × 8)", "M = encoder.out (4 × 8)"]
    assert dict(walkthrough_figures(w))["x"].layout.title.text.startswith("X = norm1(src_embed.out) (4 × 8)")


def test_score_steps_carry_the_walkthrough_numbers():
    w = walk()
    figs = dict(walkthrough_figures(w))
    assert figs["qk"].layout.title.text == "QKᵀ = Q·Kᵀ (4 × 4)"
    np.testing.assert_allclose(z(panels(figs["qk"])[1]), w.k.T)
    np.testing.assert_allclose(z(panels(figs["qk"])[2]), w.qk)
    assert "/ 2.00" in figs["scale"].layout.title.text
    np.testing.assert_allclose(z(figs["scale"].data[0]), w.scores)
    softmax = figs["softmax"].data[0]
    np.testing.assert_allclose(z(softmax)[w.mask], w.weights[w.mask])  # blocked: the grey layer's "0"
    assert (softmax.zmin, softmax.zmax) == (0.0, 1.0)
    np.testing.assert_allclose(z(panels(figs["weighted_sum"])[2]), w.head_output)
    assert "= head 2 (4 × 4)" in subplot_titles(figs["weighted_sum"])
    concat, w_o, b_o, output = panels(figs["output"])  # stacked: three 8-wide matrices with numbers do not fit
    for panel, matrix in ((concat, w.all_heads), (w_o, w.w_o), (output, w.output), (b_o, w.b_o[None])):
        np.testing.assert_allclose(z(panel), matrix)
    assert "W_O (8 × 8)" in subplot_titles(figs["output"])
    narrow = walk(d_model=4)
    concat, w_o, output, b_o = panels(dict(walkthrough_figures(narrow))["output"])  # side by side, b_O under W_O
    np.testing.assert_allclose(z(output), narrow.output)
    assert output.xaxis == "x3" and b_o.yaxis == "y4"


@pytest.mark.parametrize("mask_value, text", [(-1e9, "−1e9"), (float("-inf"), "−∞")])
def test_mask_step_greys_blocked_keys_without_stretching_colours(mask_value, text):
    w = walk(mask_value=mask_value)
    assert not w.mask.all()  # the pad key is blocked
    fig = dict(walkthrough_figures(w))["mask"]
    _, mask_panel, masked = panels(fig)
    (overlay,) = [t for t in fig.data if is_overlay(t)]
    assert np.array_equal(np.isnan(z(masked)), ~w.mask)
    limit = np.abs(w.scores[w.mask]).max()
    assert masked.zmax == pytest.approx(limit) and masked.zmin == pytest.approx(-limit)
    assert {overlay.text[i][j] for i, j in zip(*np.nonzero(~w.mask), strict=True)} == {text}
    # The model replaces blocked scores (masked_fill), it adds nothing: allowed cells keep their score.
    assert {mask_panel.text[i][j] for i, j in zip(*np.nonzero(w.mask), strict=True)} == {"✓"}
    assert {mask_panel.text[i][j] for i, j in zip(*np.nonzero(~w.mask), strict=True)} == {text}
    np.testing.assert_array_equal(w.masked_scores[w.mask], w.scores[w.mask])
    assert "where blocked" in fig.layout.title.text
    json.loads(fig.to_json())


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self"])
@pytest.mark.parametrize("step", ["softmax", "weighted_sum"])
def test_blocked_weights_are_grey_and_written_0_as_on_the_attention_page(kind, step):
    model, trace = traced()
    w = head_walkthrough(model, trace, kind, 0, 1)
    assert not w.mask.all()  # a pad key (encoder) or the future (decoder) is blocked
    fig = dict(walkthrough_figures(w))[step]
    weights = panels(fig)[0]
    (overlay,) = [t for t in fig.data if is_overlay(t)]
    assert np.array_equal(np.isnan(z(weights)), ~w.mask) and np.array_equal(~np.isnan(z(overlay)), ~w.mask)
    assert {overlay.text[i][j] for i, j in zip(*np.nonzero(~w.mask), strict=True)} == {"0"}
    assert [weights.text[i][j] for i, j in zip(*np.nonzero(w.mask), strict=True)] == [
        format_number(v) for v in w.weights[w.mask]]
    attention_page = attention_heatmap(trace, kind, 0, 1)  # its grey layer: trace 1
    assert {cell for row in attention_page.data[1].text for cell in row if cell} == {"0"}


def test_concat_marks_every_head_and_outlines_the_chosen_one():
    w = walk(head=1)
    fig = dict(walkthrough_figures(w))["concat"]
    np.testing.assert_allclose(z(fig.data[0]), w.all_heads)
    assert fig.layout.title.text == "Concat(head 1, head 2) (4 × 8)"
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    (outline,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [line.x0 for line in lines] == [3.5]
    assert (outline.x0, outline.x1) == (3.5, 7.5)


def test_a_chosen_cell_is_outlined_through_the_steps():
    w = walk()
    plain, marked = dict(walkthrough_figures(w)), dict(walkthrough_figures(w, cell=(2, 1)))
    assert not plain["qk"].layout.shapes
    row_q, col_kt, cell = marked["qk"].layout.shapes
    assert (row_q.y0, row_q.y1, col_kt.x0, col_kt.x1) == (1.5, 2.5, 0.5, 1.5)
    assert (cell.x0, cell.y0) == (0.5, 1.5)
    assert len(marked["softmax"].layout.shapes) == 1


def test_values_in_cells_only_where_they_fit():
    small = walkthrough_figures(walk())
    assert all(has_text(t) for _, fig in small for t in panels(fig))
    large = walkthrough_figures(walk("decoder_self", d_model=64, n_heads=4, length=24))
    for _, fig in large:
        for trace in panels(fig):
            if z(trace).shape[0] > 12 or z(trace).shape[1] > 16:
                assert not has_text(trace)
    assert not any(has_text(t) for t in panels(dict(large)["qk"]))


def test_every_step_builds_when_the_panel_widths_add_up_to_just_over_1():
    # d_head 8 and 10 tokens: Q, Kᵀ and QKᵀ are 8, 10 and 10 columns wide, whose fractions overshoot 1.0.
    steps = walkthrough_figures(walk("cross", d_model=16, n_heads=2, length=10))
    assert [key for key, _ in steps] == [key for key in STEP_KEYS if key != "rotate"]  # no rotary positions


def test_dot_product_bars_sum_to_the_score():
    w = walk("cross")
    query, key = 2, 0
    fig = dot_product_figure(w, query, key)
    (bars,) = fig.data
    np.testing.assert_allclose(bars.y[:-1], w.q[query] * w.k[key], rtol=1e-6)
    assert list(bars.measure) == ["relative"] * 4 + ["total"]
    assert sum(bars.y[:-1]) == pytest.approx(float(w.qk[query, key]), abs=1e-5)
    assert format_number(float(w.scores[query, key])) in fig.layout.title.text
    assert f"→ {w.key_tokens[key]})" in fig.layout.title.text
    assert "query 2" in fig.layout.title.subtitle.text and "blocked" not in fig.layout.title.subtitle.text


def with_t5_scores(w):
    """The walkthrough as T5 would give it: no division (folded into W_Q) and a relative position bias."""
    bias = np.arange(w.qk.size, dtype=float).reshape(w.qk.shape) / 10 - 0.5  # (q_len, k_len)
    return dataclasses.replace(w, scale=1.0, position_bias=bias, scores=w.qk + bias)


def test_a_position_bias_is_a_step_of_its_own_and_part_of_the_score():
    w = with_t5_scores(walk())
    scaled, bias, scores = panels(dict(walkthrough_figures(w))["scale"])
    for panel, matrix in ((scaled, w.qk), (bias, w.position_bias), (scores, w.scores)):
        np.testing.assert_allclose(z(panel), matrix)
    title = dict(walkthrough_figures(w))["scale"].layout.title.text
    assert "+ B" in title and "(not divided by √d_head)" in title and "/ 2.00" not in title
    query, key = 1, 2
    dot = dot_product_figure(w, query, key).layout.title.text
    assert f"+ {format_number(float(w.position_bias[query, key]))} = " in dot
    assert f"= {format_number(float(w.scores[query, key]))} (not divided by √d_head)" in dot and "/ 1.00" not in dot
    zh = dict(walkthrough_figures(w, lang="zh"))["scale"].layout.title.text
    assert "偏置" in zh and "bias" not in zh and "divided" not in zh


def test_a_model_that_folds_the_scale_says_so_instead_of_dividing_by_one():
    w = dataclasses.replace(walk("cross"), scale=1.0)
    w = dataclasses.replace(w, scores=w.qk)
    assert "(not divided by √d_head)" in dict(walkthrough_figures(w))["scale"].layout.title.text
    assert "(not divided by √d_head)" in dot_product_figure(w, 0, 0).layout.title.text


def test_dot_product_of_a_blocked_key_says_so():
    w = walk("cross")
    key = int(np.nonzero(~w.mask[0])[0][0])
    assert "blocked by the mask" in dot_product_figure(w, 0, key).layout.title.subtitle.text

