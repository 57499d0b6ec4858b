"""The walkthrough's panel geometry as numbers: cell sizes, label room, where each matrix sits."""

import pytest

from transformer_viz.figures.fit import LINE_EM, SLANT, text_em
from transformer_viz.figures.panel_layout import (
    HEADER_PX,
    MIN_CELL_PX,
    MIN_TOKEN_PX,
    PAGE_PX,
    SPACING,
    SUBPLOT_TITLE_PX,
    cell_heights,
    fits_with_values,
    panel_layout,
    top_label_px,
)


def test_small_matrices_get_large_cells_and_wide_ones_fit_the_page():
    assert cell_heights([4], [4], [True], 1.0) == [48.0]
    (cell,) = cell_heights([4], [200], [True], 0.6)
    assert 200 * cell / 0.6 == pytest.approx(PAGE_PX)  # the width decides
    three = cell_heights([4], [64, 64, 64], [True], 1.0)[0]
    assert 3 * 64 * three + 2 * 70 == pytest.approx(PAGE_PX)  # 70 px between columns


def test_cells_shrink_to_about_640_px_tall_but_token_rows_stay_readable():
    tokens, numbers = cell_heights([50, 50], [8], [True, False], 1.0)
    assert numbers == pytest.approx(640 / 100)  # numbered rows can be thinned out
    assert tokens == MIN_TOKEN_PX  # token rows cannot: room for the text
    assert cell_heights([400], [8], [False], 1.0) == [MIN_CELL_PX]
    (narrow,) = cell_heights([100], [2000], [True], 1.0)
    assert narrow < MIN_TOKEN_PX  # unless the page is too narrow for that


def test_top_labels_stay_flat_while_they_fit_a_cell_and_turn_otherwise():
    assert top_label_px(["1", "2"], 20.0) == pytest.approx(14 * LINE_EM + 8)  # one line of 14 px
    slanted = top_label_px(["a long token"], 20.0)
    assert slanted == pytest.approx((text_em("a long token") + LINE_EM) * 12 * SLANT + 8)  # 45°, 12 px
    assert top_label_px(["<pad>"], 50.0) == pytest.approx(14 * LINE_EM + 8)  # 5 characters, not "&lt;pad&gt;"


def test_three_matrices_sit_side_by_side_only_while_their_numbers_fit():
    assert fits_with_values([4, 4, 4]) and not fits_with_values([8, 8, 8])
    assert fits_with_values([24]) and not fits_with_values([25])  # 25 cells of 33 px: more than 790


def test_rows_stack_from_the_top_with_room_for_the_next_rows_labels():
    layout = panel_layout([4, 2], [4, 8], [20.0, 20.0], 1.0, [30.0, 40.0], titled=True, lone=False)
    (top_start, top_end), (low_start, low_end) = layout.y_domains
    assert top_end == 1.0 and low_start == pytest.approx(0.0, abs=1e-12)
    gap_px = 40 + SUBPLOT_TITLE_PX + 16
    plot_px = 4 * 20 + 2 * 20 + gap_px
    assert (top_end - top_start) * plot_px == pytest.approx(80)
    assert (top_start - low_end) * plot_px == pytest.approx(gap_px)
    assert layout.top_px == HEADER_PX + 30 + SUBPLOT_TITLE_PX
    assert layout.height == int(plot_px + layout.top_px + 10)
    (left, left_end), (right, right_end) = layout.x_domains
    assert left == 0.0 and right - left_end == pytest.approx(SPACING)
    assert (right_end - right) == pytest.approx(2 * (left_end - left))  # in proportion to 4 and 8 columns


@pytest.mark.parametrize("col_sizes", [[8, 10, 10], [4, 4, 4], [3, 7, 11, 13]])
def test_domains_never_leave_the_plot_area(col_sizes):
    layout = panel_layout([10], col_sizes, [20.0], 1.0, [22.0], titled=True, lone=False)
    assert all(0.0 <= start < end <= 1.0 for start, end in layout.x_domains + layout.y_domains)


def test_a_lone_matrix_takes_its_own_width():
    layout = panel_layout([4], [10], [30.0], 0.6, [22.0], titled=False, lone=True)
    ((start, end),) = layout.x_domains
    assert (start, end) == (0.0, pytest.approx(10 * 30 / 0.6 / PAGE_PX))
    assert layout.top_px == HEADER_PX + 22  # no panel title


def test_panel_titles_of_more_lines_push_the_matrices_down():
    one = panel_layout([4], [10, 10], [20.0], 1.0, [22.0], titled=True, lone=False)
    two = panel_layout([4], [10, 10], [20.0], 1.0, [22.0], titled=True, lone=False, title_px=SUBPLOT_TITLE_PX + 21)
    assert two.top_px == one.top_px + 21 and two.height == one.height + 21
