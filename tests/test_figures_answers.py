"""The class's answers as figures (figures/answers.py), as data: the bins tell apart what the question tells apart,
count axes tick on whole students, and no text is smaller than the session's smallest font."""

import numpy as np
import pytest

from transformer_viz.figures.answers import Bins, choice_bars, count_dtick, number_bins, number_histogram
from transformer_viz.figures.colours import HIGHLIGHT, MUTED


def counts_per_bin(fig) -> dict[float, int]:
    """The histogram's non-empty bins by their centre, counted as Plotly will from the figure's xbins."""
    bins = fig.data[0].xbins
    edges = np.arange(bins.start, bins.end + bins.size / 2, bins.size)
    counts, _ = np.histogram(fig.data[0].x, edges)
    return {float(left + bins.size / 2): int(n) for left, n in zip(edges, counts, strict=False) if n}


def test_a_count_question_gives_each_whole_number_its_own_bar_over_the_numbers_given():
    """Step 5 (masks): a count of 0..64 that forgives nothing. Ten bins of 6.4 put 3 and 5 in one bar."""
    fig = number_histogram([3, 5, 5], 0, 64)
    assert counts_per_bin(fig) == {3.0: 1, 5.0: 2}
    assert number_bins([3, 5, 5], 0, 64) == Bins(-0.5, 10.5, 1.0, (-0.5, 10.5))  # eleven numbers shown, 0..10
    assert list(fig.layout.xaxis.range) == [-0.5, 10.5]
    assert number_bins([60, 64], 0, 64).shown == (53.5, 64.5)  # within the range an answer may take
    assert number_bins([0, 64], 0, 64).shown == (-0.5, 64.5)
    assert number_bins([], 0, 4).shown == (-0.5, 4.5)


def test_once_revealed_the_truth_is_among_the_numbers_shown_and_the_right_answers_are_marked():
    fig = number_histogram([30, 31], 0, 64, truth=3.0)
    assert fig.layout.xaxis.range[0] <= 3 <= fig.layout.xaxis.range[1]
    (line,) = fig.layout.shapes  # a whole number forgives nothing: no band
    assert line.x0 == line.x1 == 3.0 and line.layer == "below"  # behind the bars: the right bar stays whole
    fig = number_histogram([3, 5, 5], 0, 64, truth=3.0)
    right, others = fig.data
    assert (list(right.x), right.marker.color) == ([3], HIGHLIGHT)  # as choice_bars colours the right choice
    assert (list(others.x), others.marker.color) == ([5, 5], MUTED) and fig.layout.barmode == "stack"
    assert all(t.xbins == right.xbins for t in fig.data)  # the same bins: a bin's parts stack


def test_a_question_with_a_tolerance_keeps_bins_over_its_whole_range():
    fig = number_histogram([1.2, 1.3, 7.9], 1.0, 8.0, truth=1.16, tolerance=0.5)
    assert list(fig.layout.xaxis.range) == [1.0, 8.0] and fig.data[0].xbins.size == pytest.approx(0.7)
    band = fig.layout.shapes[0]
    assert (band.x0, band.x1) == pytest.approx((0.66, 1.66))  # the answers counted right
    assert [list(t.x) for t in fig.data] == [[1.2, 1.3], [7.9]]


@pytest.mark.parametrize(("most", "step"), [(1, 1), (2, 1), (5, 1), (6, 2), (10, 2), (11, 5), (40, 10), (120, 50)])
def test_a_count_axis_ticks_whole_students_and_never_more_than_five_steps(most, step):
    assert count_dtick(most) == step


def test_the_count_axes_use_it():
    bars = choice_bars({"1": 1, "2": 2, "3": 0}, ["Head 1", "Head 2", "Head 3"])
    assert bars.layout.xaxis.dtick == 1  # not Plotly's 0, 0.5, 1, 1.5, 2
    assert number_histogram([3] * 40, 0, 64).layout.yaxis.dtick == 10  # not 40 labels in 200 px


def fonts(fig) -> list[float]:
    found = [fig.layout.font.size, *(a.font.size for a in fig.layout.annotations)]
    found += [t.textfont.size for t in fig.data if getattr(t, "textfont", None) and t.textfont.size]
    return [size for size in found if size is not None]


def test_no_text_under_the_projectors_smallest_font():
    for fig in (choice_bars({"1": 1, "2": 1}, ["Head 1", "Head 2"], "1", min_font=16),
                number_histogram([3, 5], 0, 64, 3.0, min_font=16)):
        assert min(fonts(fig)) >= 16


def test_the_figures_pass_plotlys_validation():
    """They are assembled without it (figures/look.py `assembled_figure`): an invalid property would reach the
    browser unnoticed."""
    import plotly.graph_objects as go

    for fig in (choice_bars({"1": 0, "2": 3}, ["Head 1", "Head 2"], "2"), number_histogram([3, 5], 0, 64, 3.0),
                number_histogram([1.2, 7.9], 1.0, 8.0, 1.16, 0.5), number_histogram([], 0, 64)):
        go.Figure(fig.to_dict())
