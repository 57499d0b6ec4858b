"""Text that fits, as numbers: widths of texts, fonts for cell numbers, how tick labels lie or are thinned."""

import pytest

from transformer_viz.figures.fit import (
    CELL_FONT_PX,
    FLAT_FONT_PX,
    LATIN_EM,
    LINE_EM,
    MIN_FONT_PX,
    SLANT,
    CellText,
    cell_font,
    cell_text,
    fit_title,
    spaced,
    text_em,
    tick_labels,
    tick_plan,
)


def test_texts_are_measured_as_plotly_shows_them():
    assert text_em("&lt;pad&gt;") == pytest.approx(2 * LATIN_EM + text_em("pad"))  # "<pad>", escaped
    assert text_em("<pad>") == 0  # unescaped, Plotly takes it for a tag and shows nothing
    assert text_em("<b>0.52</b>") == text_em("0.52")  # tags take no room
    assert text_em("queries<br>(target)") == text_em("queries") < text_em("queries (target)")  # the widest line
    assert text_em("昨天") == 2.0 and text_em("ab") < 1.2  # CJK characters are twice as wide as letters
    assert text_em("ill") < text_em("mmm")


def test_cell_numbers_take_the_largest_font_that_fits_or_none():
    assert cell_font(60, 60, ["0.12"]) == CELL_FONT_PX[1]  # room to spare: the largest
    font = cell_font(34, 40, ["−0.94", "0.12"])
    assert font * text_em("−0.94") + 4 <= 34 < (font + 1) * text_em("−0.94") + 4  # the widest text decides
    assert cell_font(40, 16, ["1"]) == int(14 / LINE_EM)  # a low cell: the line height decides
    assert cell_font(20, 40, ["−24.46"]) is None  # "−24.5−30.3": better colours only


def test_numbers_that_fit_only_a_wider_figure_say_from_which_width():
    # Cells are (width − 100) / 8 px wide; "−0.3" needs 2.04 em at 11 px + 4 px, 26.4 px: a 312 px figure.
    # Fits already at 16 px, and says from which width: 2.04 em at 16 px + 4 px a cell, a 394 px figure (a page
    # squeezed narrower than planned hides them).
    assert cell_text(["−0.3"], 40, 500, 500, 100, 1 / 8) == CellText(CELL_FONT_PX[1], 394)
    assert cell_text(["−0.3"], 40, 300, 1200, 100, 1 / 8) == CellText(CELL_FONT_PX[0], 312)  # from 312 px on
    assert cell_text(["−0.3"], 40, 200, 300, 100, 1 / 8).font is None  # not even the widest figure holds them
    assert cell_text(["−0.3"], 10, 300, 1200, 100, 1 / 8).font is None  # rows too low for a line


def test_x_labels_lie_flat_then_slant_then_stand_then_thin_out():
    flat = tick_plan(["the", "cat"], 40, "x")
    assert (flat.step, flat.angle) == (1, 0) and flat.font >= FLAT_FONT_PX
    slanted = tick_plan(["&lt;bos&gt;", "chien"], 26, "x")
    assert (slanted.step, slanted.angle) == (1, -45) and slanted.font * LINE_EM <= 26 * SLANT
    upright = tick_plan(["&lt;bos&gt;", "chien"], 14, "x")
    assert (upright.step, upright.angle, upright.font) == (1, -90, int(14 / LINE_EM))
    letters = tick_plan(list("abcdefghijklmnopqrstuvwxyz"), 8, "x")  # single letters: flat, every 2nd
    assert (letters.step, letters.angle) == (2, 0) and letters.font >= MIN_FONT_PX
    words = tick_plan(["yesterday", "school"], 4, "x")
    assert words.step > 1 and words.step * 4 >= words.font * LINE_EM  # upright, thinned until a line fits


def test_y_labels_shrink_to_their_row_then_thin_out():
    assert tick_plan(["a", "b"], 30, "y").font == 14
    assert tick_plan(["a", "b"], 13, "y").font == int(13 / LINE_EM)
    thin = tick_plan(["a", "b"], 6, "y")
    assert thin.step == 3 and thin.font == FLAT_FONT_PX  # 12 px lines need 13.8 px: every 3rd of 6 px rows
    assert tick_plan(["a"], 10, "y").depth == pytest.approx(text_em("a") * tick_plan(["a"], 10, "y").font)
    with pytest.raises(ValueError, match="axis must be"):
        tick_plan(["a"], 10, "z")


def test_thinned_labels_keep_their_positions():
    plan = tick_plan(list("abcdef"), 6, "y")
    axis = tick_labels(range(6), list("abcdef"), plan)
    assert axis["tickvals"] == [0, 3] and axis["ticktext"] == ["a", "d"] and axis["tickfont"] == {"size": 12}


def test_spaced_labels_put_the_chosen_ones_first():
    assert spaced(7, 3) == [0, 3, 6]
    assert spaced(7, 3, first=[4]) == [0, 4]  # 4 first; 0 is 4 away; 1, 2, 3 are too close to one of them;
    assert spaced(7, 1) == list(range(7))


def test_a_long_title_breaks_at_its_separators_then_shrinks():
    title = "Cross-attention (decoder → encoder) · weights · 2 layers × 4 heads"
    assert fit_title(title, 900) == (title, 20)  # fits: as it is
    text, font = fit_title(title, 355)
    assert text == "Cross-attention (decoder → encoder)<br>weights · 2 layers × 4 heads" and font == 20
    text, font = fit_title("one very long title without any separator in it at all", 400)
    assert "<br>" not in text and font < 20 and text_em(text) * font <= 400  # smaller, down to 14 px
    assert fit_title("one very long title without any separator in it at all", 200)[1] == 14
