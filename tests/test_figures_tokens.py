"""The BPE figure as data: symbol chips per word, the pair table, the highlighted merge, Chinese labels, escaping."""

import re

import pytest

from transformer_viz import learn_bpe
from transformer_viz.figures.colours import HIGHLIGHT, MUTED
from transformer_viz.figures.tokens import CHIP_GAP, CHIP_PADDING, bpe_figure, chip_spans, text_width
from transformer_viz.i18n import CATALOGS

SEED = {"yes": 7, "highest": 3, "high": 9}  # seed 003's corpus
END = "&lt;/w&gt;"  # how the end marker reads in figure text


def strings(value):
    """Every string in a figure's dict, however deeply nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def chips(fig):
    """(symbol text, row, fill colour) of every chip: the text trace and the shapes are drawn in the same order."""
    text = fig.data[0]
    return [(t, y, shape.fillcolor) for t, y, shape in zip(text.text, text.y, fig.layout.shapes, strict=True)]


def test_chip_spans_follow_the_text_width():
    assert text_width("</w>") == 4 and text_width("你好") == 4 and text_width("") == 0
    spans = chip_spans(["hi", "</w>"])
    assert spans[0] == pytest.approx((0, 2 + CHIP_PADDING))
    assert spans[1] == pytest.approx((2 + CHIP_PADDING + CHIP_GAP, 6 + 2 * CHIP_PADDING + CHIP_GAP))
    assert chip_spans([]) == []


def test_before_any_merge_every_word_is_characters_and_the_end_marker():
    fig = bpe_figure(learn_bpe(SEED, 5), 0)
    assert [t for t, _, _ in chips(fig)] == ["y", "e", "s", END, *"highest", END, *"high", END]
    assert [y for _, y, _ in chips(fig)] == [0] * 4 + [1] * 8 + [2] * 5
    assert HIGHLIGHT not in {fill for _, _, fill in chips(fig)}  # nothing merged yet
    assert list(fig.layout.yaxis.ticktext) == ["yes", "highest", "high"]
    assert list(fig.data[1].text) == ["× 7", "× 3", "× 9"]
    bars = fig.data[2]
    assert list(bars.x) == [12, 12, 12, 10, 9, 7, 7, 3, 3, 3]
    assert list(fig.layout.yaxis2.ticktext)[:3] == ["h + i", "i + g", "g + h"]
    assert "before any merge" in fig.layout.title.text


def test_the_merge_just_made_and_the_next_one_are_highlighted():
    fig = bpe_figure(learn_bpe(SEED, 5), 2)
    highlighted = [(t, y) for t, y, fill in chips(fig) if fill == HIGHLIGHT]
    assert highlighted == [("gh", 1), ("gh", 2)]
    colours = list(fig.data[0].textfont.color)
    assert [c == "white" for c in colours] == [fill == HIGHLIGHT for _, _, fill in chips(fig)]
    assert fig.layout.title.text == "After merge 2 of 5: g + h → gh"
    bars = fig.data[2]
    assert fig.layout.yaxis2.ticktext[0] == "hi + gh" and bars.x[0] == 12
    assert list(bars.marker.color) == [HIGHLIGHT] + [MUTED] * (len(bars.x) - 1)
    assert "next merge" in bars.text[0] and "merge 3" in fig.layout.annotations[1].text


def test_a_tie_is_explained_in_the_hover():
    fig = bpe_figure(learn_bpe(SEED, 5), 0)  # h-i, i-g and g-h all count 12
    hovers = list(fig.data[2].customdata)
    assert ["pair seen first" in h for h in hovers[:4]] == [False, True, True, False]


def test_after_the_last_merge_nothing_is_next():
    fig = bpe_figure(learn_bpe(SEED, 5), 5)
    assert MUTED in fig.data[2].marker.color and HIGHLIGHT not in fig.data[2].marker.color
    assert "stopped after 5 merges" in fig.layout.annotations[1].text
    assert [t for t, _, fill in chips(fig) if fill == HIGHLIGHT] == ["high" + END]
    done = bpe_figure(learn_bpe({"ab": 1}, 5), 2)  # ab</w>: one symbol, no pair left
    assert len(done.data[2].x) == 0 and "no pair left" in done.layout.annotations[-1].text


def test_chinese_labels():
    fig = bpe_figure(learn_bpe(SEED, 5), 2, lang="zh")
    assert fig.layout.title.text == "第 2 次合并(共 5 次):g + h → gh"
    assert [a.text for a in fig.layout.annotations] == ["语料库,每行一个词", "相邻符号对:第 3 次合并取最高的一对"]
    assert list(fig.data[1].text) == ["7 次", "3 次", "9 次"]
    assert "下一次合并" in fig.data[2].text[0] and "出现次数" in fig.layout.xaxis2.title.text
    assert "词“yes”" in fig.data[0].customdata[0]


def test_every_word_of_the_figure_has_chinese_text():
    english, chinese = CATALOGS["en"], CATALOGS["zh"]
    keys = {key for key in english if key.startswith("tokens.")}
    assert keys <= set(chinese) and len(keys) >= 10
    assert all(chinese[key] != english[key] for key in keys)


def test_typed_words_are_shown_as_text():
    bpe = learn_bpe({"<b>x</b>": 2, "%{x}": 1}, 3)
    fig = bpe_figure(bpe, 3)
    # the only markup anywhere is the figure's own line breaks and hover boxes
    assert not any("<" in re.sub(r"<br>|</?extra>", "", s) for s in strings(fig.to_dict()))
    assert list(fig.layout.yaxis.ticktext) == ["&lt;b&gt;x&lt;/b&gt;", "%{x}"]
    assert list(fig.data[0].text)[:5] == ["&lt;b&gt;", "x&lt;", "/", "b&gt;", END]
    assert fig.data[0].customdata[0].startswith("word “&lt;b&gt;x&lt;/b&gt;” × 2")
    assert fig.layout.title.text == "After merge 3 of 3: &lt; + b&gt; → &lt;b&gt;"
    # hover text travels as data: a typed "%{x}" is never read as a template
    assert {trace.hovertemplate for trace in fig.data if trace.hovertemplate} == {"%{customdata}<extra></extra>"}


@pytest.mark.parametrize(("bpe", "step", "lang", "message"), [
    (learn_bpe(SEED, 5), 6, "en", "step must be a whole number from 0 to 5"),
    (learn_bpe(SEED, 5), -1, "en", "step must be"),
    (learn_bpe(SEED, 5), 1, "fr", "lang must be one of"),
    ({"yes": 7}, 0, "en", "bpe must be what learn_bpe returns"),
])
def test_bpe_figure_refuses_bad_choices(bpe, step, lang, message):
    with pytest.raises(ValueError, match=message):
        bpe_figure(bpe, step, lang)
