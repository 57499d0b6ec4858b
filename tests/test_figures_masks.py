"""Mask figures as data: the masks of a run, and scores -> masked scores -> weights for one head."""

import numpy as np
from helpers import real_trace, recorded

from transformer_viz.figures.masks import mask_figures, mask_heatmap, masking_steps


def test_mask_heatmap_draws_the_mask_with_a_may_attend_and_blocked_legend():
    mask = np.array([[True, False, False], [True, True, False]])
    fig = mask_heatmap(mask, ["a", "b"], ["a", "b", "<pad>"], "Look-ahead")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), mask.astype(int))
    scale = fig.data[0].colorscale  # z = 0 (blocked) at its start, 1 (may attend) at its end
    legend = {t.name: t.marker.color for t in fig.data[1:]}
    assert legend == {"may attend": scale[-1][1], "blocked": scale[0][1]}  # the legend names the cells' colours
    assert legend["may attend"] != legend["blocked"]
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
        "① scaled scores q·k / √d_k", "② masked: blocked → −1e9", "③ softmax → weights"]
