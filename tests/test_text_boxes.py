"""The presenter test's geometry without a browser: overlapping, rotated, cut-off and tiny texts."""

import math

import pytest

from devtools.text_boxes import Figure, Text, figure_problems, overlap_depth, page_problems, problem_table, role_name


def box(x, y, w, h):
    return ((x, y), (x + w, y), (x + w, y + h), (x, y + h))


def turned(cx, cy, w, h, degrees):
    """A w × h rectangle centred on (cx, cy), turned by `degrees`."""
    a = math.radians(degrees)
    return tuple((cx + x * math.cos(a) - y * math.sin(a), cy + x * math.sin(a) + y * math.cos(a))
                 for x, y in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)))


def figure(*texts, size=(0, 0, 200, 100)):
    return Figure(0, "A figure", size, tuple(Text(t, corners, 12.0, "x tick") for t, corners in texts))


def test_overlap_depth_is_the_smallest_push_that_separates_two_boxes():
    assert overlap_depth(box(0, 0, 10, 10), box(8, 2, 10, 10)) == pytest.approx(2)
    assert overlap_depth(box(0, 0, 10, 10), box(10, 0, 10, 10)) == 0  # touching is not overlapping
    assert overlap_depth(box(0, 0, 10, 10), box(30, 30, 5, 5)) == 0


def test_two_turned_labels_side_by_side_do_not_collide_though_their_upright_boxes_would():
    # Two 40 × 12 labels at 45°, 20 px apart: their axis-aligned boxes (37 px wide) overlap by 17 px.
    a, b = turned(50, 50, 40, 12, -45), turned(70, 50, 40, 12, -45)
    assert overlap_depth(a, b) == 0  # 20 px apart is 14 px across the labels: more than their 12 px
    assert overlap_depth(a, turned(58, 50, 40, 12, -45)) == pytest.approx(12 - 8 / math.sqrt(2))


def test_a_figure_reports_overlaps_beyond_the_tolerance_once_per_pair():
    cells = figure(("−24.5", box(10, 10, 30, 12)), ("−30.3", box(35, 10, 30, 12)),
                   ("0.1", box(64, 10, 20, 12)))  # 1 px: within the tolerance
    assert [(p.kind, p.detail) for p in figure_problems(cells)] == [
        ("overlap", "“−24.5” (x tick) × “−30.3” (x tick) by 5 px")]


def test_a_text_drawn_twice_at_one_place_is_one_text():
    assert figure_problems(figure(("a", box(10, 10, 10, 12)), ("a", box(10, 10, 10, 12)))) == []
    assert len(figure_problems(figure(("a", box(10, 10, 10, 12)), ("b", box(10, 10, 10, 12))))) == 1


def test_cut_off_and_tiny_texts_are_named():
    cut = figure(("Decoder self-att", box(150, 5, 80, 14)))
    assert [(p.kind, p.detail) for p in figure_problems(cut)] == [("cut off", "“Decoder self-att” (x tick) by 30 px")]
    tiny = Figure(0, "", (0, 0, 200, 100), (Text("0.12", box(5, 5, 10, 8), 8.0, "cell"),))
    assert [p.kind for p in figure_problems(tiny)] == ["too small"]


def test_a_figure_or_a_page_wider_than_the_viewport_is_too_wide():
    raw = {"index": 1, "title": "<b>Wide</b>", "box": [0, 0, 900, 100], "texts": []}
    problems = page_problems([raw], {"viewport": 853, "scroll": 900})
    assert [(p.figure, p.kind) for p in problems] == [("#2 Wide", "too wide"), ("(page)", "too wide")]
    assert page_problems([dict(raw, box=[0, 0, 850, 100])], {"viewport": 853, "scroll": 853}) == []
    clipped = page_problems([], {"viewport": 853, "scroll": 853,
                                 "clipped": [["cut off", "formula", "MultiHead(Q,K,V)"]]})
    assert [(p.figure, p.kind, p.detail) for p in clipped] == [("(page: formula)", "cut off", "“MultiHead(Q,K,V)”")]


def test_roles_and_the_table_are_readable():
    assert role_name("ycb1a2b3ctitle") == "colour bar title" and role_name("x2tick") == "x2 tick"
    assert role_name("heatmap-label") == "cell" and role_name("") == "text"
    rows = [("/masks", p) for p in figure_problems(figure(*((str(i), box(10 + i, 10, 10, 12)) for i in range(4))))]
    table = problem_table(rows, per_figure=2)
    assert table.count("overlap") == 3 and "… and 4 more" in table  # 6 pairs: 2 shown, the rest counted
