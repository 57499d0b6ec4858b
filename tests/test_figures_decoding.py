"""The sampling figure (figures/decoding.py::sampling_bars), read as data: the distribution before and after
sampling's reshaping, for the most likely tokens, with the drawn token marked."""

import numpy as np
import pytest

from transformer_viz.figures.colours import HIGHLIGHT
from transformer_viz.figures.decoding import sampling_bars

TOKENS = ["<pad>", "<bos>", "<eos>", "a", "b", "c", "d", "e"]
BEFORE = np.array([0.0, 0.0, 0.05, 0.4, 0.3, 0.15, 0.06, 0.04])
AFTER = np.array([0.0, 0.0, 0.0, 0.5, 0.32, 0.18, 0.0, 0.0])  # a hotter / cut distribution


def bars_by_row(trace) -> dict[int, tuple[int, float, str]]:
    """row -> (token id, probability, text) of one series."""
    return {int(row): (int(data[1]), float(x), label)
            for row, data, x, label in zip(trace.y, trace.customdata, trace.x, trace.text, strict=True)}


def test_each_token_has_a_bar_before_and_after_most_likely_first():
    before, after, drawn = sampling_bars(BEFORE, AFTER, TOKENS, chosen=4, k=4).data
    assert (before.name, after.name, drawn.name) == ("before: softmax of the logits", "after: drawn from",
                                                     "the token drawn")
    assert bars_by_row(before) == {0: (3, 0.4, "40.0%"), 1: (4, 0.3, "30.0%"), 2: (5, 0.15, "15.0%"),
                                   3: (6, pytest.approx(0.06), "6.0%")}
    # ordered by the model's own probabilities; the drawn token's "after" bar is a series of its own
    assert bars_by_row(after) == {0: (3, 0.5, "50.0%"), 2: (5, pytest.approx(0.18), "18.0%"), 3: (6, 0.0, "0.0%")}
    assert bars_by_row(drawn) == {1: (4, pytest.approx(0.32), "32.0% ← drawn")}
    assert after.offsetgroup == drawn.offsetgroup != before.offsetgroup  # in the same slot of its row


def test_only_the_drawn_token_is_in_the_highlight_colour():
    fig = sampling_bars(BEFORE, AFTER, TOKENS, chosen=5, k=4)
    before, after, drawn = fig.data
    assert drawn.marker.color == HIGHLIGHT and HIGHLIGHT not in (before.marker.color, after.marker.color)
    assert list(fig.layout.yaxis.ticktext) == ["a", "b", "c", "d"] and fig.layout.xaxis.range == (0, 1)


def test_a_drawn_token_outside_the_top_k_is_added_last():
    before, _, drawn = sampling_bars(BEFORE, AFTER, TOKENS, chosen=2, k=3).data
    assert [row[1] for row in before.customdata] == [3, 4, 5, 2]
    assert bars_by_row(drawn) == {3: (2, 0.0, "0.0% ← drawn")}


def test_the_figure_speaks_chinese():
    fig = sampling_bars(BEFORE, AFTER, TOKENS, chosen=3, k=3, lang="zh")
    assert [trace.name for trace in fig.data] == ["之前：分数的 softmax", "之后：从中抽取", "抽到的词元"]
    assert fig.data[2].text[0].endswith("← 抽到") and fig.layout.title.text == "8 个词元中概率最高的 3 个"


@pytest.mark.parametrize("arguments, message", [
    ({"after": AFTER[:-1]}, "same tokens"),
    ({"k": 0}, "k must be a whole number"),
    ({"chosen": 8}, "chosen"),
])
def test_wrong_arguments_are_value_errors(arguments, message):
    with pytest.raises(ValueError, match=message):
        sampling_bars(**{"before": BEFORE, "after": AFTER, "vocab_tokens": TOKENS, "chosen": 3, **arguments})
