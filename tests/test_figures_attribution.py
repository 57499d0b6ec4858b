"""The attribution figures draw what `explain` measured: rows scaled per method, raw values on hover, the bars
the rank correlations with leave one out, approximations marked, and a sentence for a leave one out below noise."""

from __future__ import annotations

import numpy as np
import pytest

from transformer_viz.analysis.attribution import Attribution
from transformer_viz.figures.attribution import (
    attribution_figure,
    method_rows,
    power_of_ten,
    weights_and_norms_figure,
)

TOKENS = ("the", "girl", "<eos>")


def hand_result(**extra) -> Attribution:
    scores = {"attention.1": np.array([0.5, 0.3, 0.2]), "rollout.1": np.array([0.4, 0.4, 0.2]),
              "flow.1": np.array([0.9, 0.6, 0.3]), "gradient": np.array([2e-5, 1e-5, 4e-5]),
              "leave_one_out": np.array([3.0, -1.0, 0.0]), **extra}
    heads = {"attention.1": np.array([[0.8, 0.1, 0.1], [0.2, 0.5, 0.3]]),
             "value_norm.1": np.array([[4.0, 1.0, 0.2], [1.0, 2.0, 0.1]])}
    return Attribution(TOKENS, 0, "la", 0.9, scores, heads)


def test_rows_are_in_reading_order_and_every_approximation_is_marked():
    fig = attribution_figure(hand_result())
    labels = fig.layout.yaxis.ticktext
    assert method_rows(hand_result()) == ["attention.1", "rollout.1", "flow.1", "gradient", "leave_one_out"]
    assert [label.startswith("≈ ") for label in labels] == [True, True, True, True, False]


def test_each_row_is_scaled_by_its_largest_absolute_value_and_the_hover_keeps_the_raw_one():
    heatmap = attribution_figure(hand_result()).data[0]
    z = np.array(heatmap.z, dtype=float)
    assert z[0] == pytest.approx([1.0, 0.6, 0.4])
    assert z[4] == pytest.approx([1.0, -1 / 3, 0.0], abs=1e-6)  # signed: leave one out may be negative
    assert "−1.000" in heatmap.customdata[4][1] and "0.500" in heatmap.customdata[0][0]


def test_a_saturated_gradient_is_written_in_a_power_of_ten_not_as_zeros():
    fig = attribution_figure(hand_result())
    assert fig.layout.yaxis.ticktext[3].endswith("(×10⁻⁵)")
    assert list(fig.data[0].text[3]) == ["2.00", "1.00", "4.00"]


def test_the_bars_are_each_rows_spearman_correlation_with_leave_one_out():
    result = hand_result()
    bars = attribution_figure(result).data[1]
    expected = result.correlations()
    assert list(bars.x[:4]) == pytest.approx([expected[m] for m in method_rows(result)[:4]])
    assert bars.text[4] == ""  # leave one out is the reference, not compared with itself


def test_a_trace_without_leave_one_out_gets_no_bars():
    result = hand_result()
    trace_only = Attribution(TOKENS, 0, "la", 0.9, {m: s for m, s in result.scores.items() if m != "leave_one_out"})
    fig = attribution_figure(trace_only)
    assert [trace.type for trace in fig.data] == ["heatmap"]


def test_weights_beside_norms_draws_the_weights_and_the_norms_scaled_by_their_largest():
    fig = weights_and_norms_figure(hand_result(), 1, lang="zh")
    weights, norms = (np.array(trace.z, dtype=float) for trace in fig.data)
    assert weights == pytest.approx(hand_result().heads["attention.1"])
    assert norms == pytest.approx(hand_result().heads["value_norm.1"] / 4.0)
    assert "α = 0.800" in fig.data[0].customdata[0][0]


def test_leave_one_out_below_noise_gets_a_sentence_in_both_languages_instead_of_the_bars():
    """The <eos> after a finished sentence: no ρ against rounding, its row blank, its largest change said."""
    result = hand_result(leave_one_out=np.array([1.2e-7, -2e-8, 5e-8]))
    for lang, words in (("en", "numerical noise"), ("zh", "数值噪声")):
        fig = attribution_figure(result, lang=lang)
        assert [trace.type for trace in fig.data] == ["heatmap"]
        (note,) = fig.layout.annotations
        assert words in note.text and "1.2×10⁻⁷" in note.text and "1.0×10⁻⁵" in note.text
    assert np.array(fig.data[0].z, dtype=float)[4] == pytest.approx([0.0, 0.0, 0.0])


def test_leave_one_out_just_above_the_noise_floor_keeps_its_bars_and_no_sentence():
    fig = attribution_figure(hand_result(leave_one_out=np.array([2e-5, -1e-5, 0.0])))
    assert [trace.type for trace in fig.data] == ["heatmap", "bar"]
    assert not fig.layout.annotations
    assert np.array(fig.data[0].z, dtype=float)[4] == pytest.approx([1.0, -0.5, 0.0], abs=1e-6)


def test_powers_of_ten_are_written_with_superscripts():
    assert (power_of_ten(1.23e-7), power_of_ten(1e-5), power_of_ten(0.0)) == ("1.2×10⁻⁷", "1.0×10⁻⁵", "0")
