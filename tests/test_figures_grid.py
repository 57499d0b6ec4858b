"""The grid of every layer × head as data: tiles, gutters, click targets, hover data, grey blocked cells."""

import re

import numpy as np
import pytest
from helpers import SRC, TGT, drawn_alpha, hand_trace, real_trace, recorded, rgb, scale_colours, tile

from transformer_viz.figures.grid import TICK_PX, attention_grid, grid_layout, grid_selection
from transformer_viz.trace.names import attention_name


def path_cells(path: str) -> set[tuple[int, int]]:
    """The (row, col) cells covered by a path made of "M x0,y0 H x1 V y1 H x0 Z" rectangles."""
    cells = set()
    for x0, y0, x1, y1 in re.findall(r"M([-\d.]+),([-\d.]+)H([-\d.]+)V([-\d.]+)H[-\d.]+Z", path):
        rows = range(round(float(y0) + 0.5), round(float(y1) + 0.5))
        cols = range(round(float(x0) + 0.5), round(float(x1) + 0.5))
        cells |= {(r, c) for r in rows for c in cols}
    return cells


# attention_grid -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,q_tokens,k_tokens", [("encoder_self", SRC, SRC), ("cross", TGT, SRC)])
def test_grid_z_holds_each_heads_weights_at_its_tile_with_nan_gutters(kind, q_tokens, k_tokens):
    trace = real_trace()
    fig = attention_grid(trace, kind)
    z = np.asarray(fig.data[0].z, dtype=float)
    q_len, k_len, gap = len(q_tokens), len(k_tokens), 1
    assert z.shape == (2 * (q_len + gap) - gap, 4 * (k_len + gap) - gap)
    for layer in range(2):
        weights = trace[attention_name(kind, layer, "weights")][0].numpy()
        for head in range(4):
            np.testing.assert_allclose(tile(z, layer, head, q_len, k_len, gap), weights[head], atol=1e-6)
    assert np.isnan(z[q_len]).all()  # the gutter row between the layers
    assert all(np.isnan(z[:, (head + 1) * (k_len + gap) - 1]).all() for head in range(3))
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)
    zero, one = scale_colours(fig.data[0].colorscale, [0, 1])
    assert zero != one  # a weight of 0 and a weight of 1 look different


@pytest.mark.parametrize("layers,heads,length", [(1, 1, 5), (2, 4, 8), (6, 8, 32)])
def test_grid_is_one_heatmap_with_one_click_target_per_tile(layers, heads, length):
    tokens = [f"t{i % 7}" for i in range(length)]
    fig = attention_grid(real_trace(layers, heads, tokens, tokens), "decoder_self")
    assert [trace.type for trace in fig.data] == ["heatmap", "scatter"]
    targets = fig.data[1]
    assert sorted(map(tuple, targets.customdata)) == [(lay, h) for lay in range(layers) for h in range(heads)]
    assert len(targets.x) == len(targets.y) == layers * heads
    assert drawn_alpha(targets) < 0.02 and targets.hoverinfo != "skip"  # invisible, yet hovered and clicked
    assert targets.marker.size >= 20  # large enough to click
    headers = [a.text for a in fig.layout.annotations]
    assert headers == [f"Head {h + 1}" for h in range(heads)] + [f"Layer {lay + 1}" for lay in range(layers)]
    # Each target sits at the centre cell of its own tile.
    x_names, y_names = list(fig.data[0].x), list(fig.data[0].y)
    gap = (len(x_names) - heads * length) // max(heads - 1, 1) if heads > 1 else 1
    for (layer, head), x, y in zip(targets.customdata, targets.x, targets.y, strict=True):
        assert x_names.index(x) == head * (length + gap) + length // 2
        assert y_names.index(y) == layer * (length + gap) + length // 2
    if layers == 6:
        assert len(fig.to_json()) < 900_000  # no per-cell strings: two float32 planes and a path
        assert fig.layout.height > attention_grid(real_trace(2, heads, tokens, tokens), "decoder_self").layout.height


def test_grid_hover_names_layer_head_and_distinct_duplicate_tokens():
    trace = real_trace()
    fig = attention_grid(trace, "encoder_self")
    heatmap = fig.data[0]
    y_names, x_names = list(heatmap.y), list(heatmap.x)
    assert len(set(y_names)) == len(y_names) and len(set(x_names)) == len(x_names)
    assert y_names[0] == "Layer 1 · query 0 “the”" and y_names[4] == "Layer 1 · query 4 “the”"
    assert x_names[9 + 4] == "Head 2 · key 4 “the”" and x_names[9 + 6] == "Head 2 · key 6 “&lt;pad&gt;”"
    custom = np.asarray(heatmap.customdata, dtype=float)
    scores = recorded(trace, "encoder.layers.1.self_attn", "scores")
    np.testing.assert_allclose(tile(custom, 1, 3, 8, 8, 1), scores[3], atol=1e-6)
    template = heatmap.hovertemplate
    assert "%{y}" in template and "%{x}" in template and "%{z:.3f}" in template and "%{customdata:.3f}" in template
    # Tokens along the edges as tick text, placed at the tile cells (the gutters get none).
    pad = "&lt;pad&gt;"
    assert list(fig.layout.yaxis.ticktext[:8]) == ["the", "cat", "sat", "on", "the", "mat", pad, pad]
    assert list(fig.layout.yaxis.tickvals) == [n for n in y_names if not n.startswith("gap")]


def test_grid_scores_use_a_symmetric_diverging_range_and_masked_scores_keep_the_fill_out_of_it():
    trace = real_trace()
    scores = np.stack([recorded(trace, f"decoder.layers.{i}.self_attn", "scores") for i in range(2)])
    raw = attention_grid(trace, "decoder_self", "scores").data[0]
    assert raw.zmin == -raw.zmax and raw.zmax == pytest.approx(np.abs(scores).max(), rel=1e-6)
    assert raw.colorscale[0][1] != attention_grid(trace, "decoder_self").data[0].colorscale[0][1]

    fig = attention_grid(trace, "decoder_self", "masked_scores")
    masked = fig.data[0]
    mask = recorded(trace, "decoder.layers.0.self_attn", "mask")[0]
    allowed = np.broadcast_to(mask, scores.shape)
    assert masked.zmin == -masked.zmax and masked.zmax == pytest.approx(np.abs(scores[allowed]).max(), rel=1e-6)
    assert masked.zmax < 1e3
    z = np.asarray(masked.z, dtype=float)
    np.testing.assert_array_equal(tile(z, 0, 0, 6, 6, 1)[~mask], -1e9)
    custom = np.asarray(masked.customdata, dtype=float)  # (rows, cols, [weight, raw score])
    np.testing.assert_allclose(tile(custom[..., 1], 1, 2, 6, 6, 1), scores[1, 2], atol=1e-6)
    assert "masked score" in masked.hovertemplate and "%{customdata[0]" in masked.hovertemplate


def test_grid_greys_exactly_the_blocked_cells_including_rows_with_no_allowed_key():
    mask = np.ones((4, 4), bool)
    mask[:, 3] = False  # a padded key
    mask[2] = False  # a query with no allowed key at all: all its weights are 0
    weights = np.where(mask, 1 / 3, 0.0)[None].repeat(2, 0)  # (heads, q_len, k_len)
    fig = attention_grid(hand_trace(weights, mask), "encoder_self")
    (shape,) = fig.layout.shapes
    red, green, blue = rgb(shape.fillcolor)
    assert shape.layer == "above" and red == green == blue  # a grey over the cells
    expected = {(i, head * 5 + j) for head in range(2) for i, j in zip(*np.nonzero(~mask), strict=True)}
    assert path_cells(shape.path) == expected
    assert not attention_grid(hand_trace(weights, mask), "encoder_self", "scores").layout.shapes


def test_grid_outlines_the_highlighted_tile_and_titles_its_size():
    fig = attention_grid(real_trace(2, 4), "encoder_self", highlight=(1, 2))
    (outline,) = fig.layout.shapes[1:]  # after the grey of the padded keys
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (17.5, 25.5, 8.5, 16.5)  # 8 tokens, gutters of 1
    assert fig.layout.title.text == "Encoder self-attention · weights · 2 layers × 4 heads"


def test_grid_selection_reads_layer_and_head_and_tolerates_empty_events():
    event = {"selection": {"points": [{"curve_number": 1, "point_number": 6, "point_index": 6,
                                       "x": "Head 3 · key 4 “the”", "y": "Layer 2 · query 4 “the”",
                                       "customdata": [1, 2]}],
                           "point_indices": [6], "box": [], "lasso": []}}
    assert grid_selection(event) == (1, 2)
    assert grid_selection({"selection": {"points": [{"customdata": {"0": 3, "1": 0}}]}}) == (3, 0)
    for empty in (None, {}, {"selection": None}, {"selection": {"points": []}},
                  {"selection": {"points": [{"x": 1, "y": 2}]}}, {"selection": {"points": [{"customdata": [0.5]}]}},
                  {"selection": {"points": [{"customdata": None}]}}, "not an event"):
        assert grid_selection(empty) is None


# grid_layout ----------------------------------------------------------------------------------------------------

SIZES = [(layers, heads, length) for layers in (1, 2, 6) for heads in (1, 4, 8) for length in (1, 2, 5, 8, 16, 32, 64)]


@pytest.mark.parametrize("layers, heads, length", SIZES)
def test_grid_layout_keeps_cells_square_and_tiles_between_90_and_360_px(layers, heads, length):
    layout = grid_layout(layers, heads, length, length, 5, 5)
    tile_height = layout.cell_height * length
    assert 90 - 1e-9 <= tile_height <= 360 + 1e-9
    if 90 < layout.cell_width * length < 360:
        assert layout.cell_height == pytest.approx(layout.cell_width)  # square unless the clamp acts
    assert layout.gap >= 1
    assert layout.show_key_ticks == (layout.cell_width >= TICK_PX)
    assert layout.show_query_ticks == (layout.cell_height >= TICK_PX)
    rows = layers * (length + layout.gap) - layout.gap
    assert layout.height == round(layout.cell_height * rows) + layout.top + layout.bottom
    # The columns, gutters and margins fill the width laid out for.
    columns = heads * (length + layout.gap) - layout.gap
    left = 40 + 8 * 5  # the query labels' room, whether or not they are shown
    assert layout.cell_width * columns + left + layout.right == pytest.approx(900)


def test_grid_layout_clamps_and_hides_ticks_at_the_extremes():
    one = grid_layout(1, 1, 2, 2, 3, 3)  # two huge cells: the tile stops at 360 px
    assert one.cell_height * 2 == pytest.approx(360) and one.cell_width > one.cell_height
    assert one.show_key_ticks and one.show_query_ticks
    big = grid_layout(6, 8, 32, 32, 5, 5)  # 2.6 px cells: the tile grows to 90 px, ticks would collide
    assert big.cell_height * 32 == pytest.approx(90) and big.cell_height > big.cell_width
    assert not big.show_key_ticks and not big.show_query_ticks
    assert (big.left, big.bottom) == (40, 16)  # no room kept for labels that are not drawn
    assert big.gap == 3 and grid_layout(1, 1, 1, 1, 1, 1).gap == 1


def test_grid_layout_makes_room_for_long_labels_and_follows_the_width():
    short, long = grid_layout(2, 2, 4, 4, 3, 3), grid_layout(2, 2, 4, 4, 12, 12)
    assert long.left > short.left and long.bottom > short.bottom and long.cell_width < short.cell_width
    assert grid_layout(2, 4, 8, 8, 5, 5, width=1400).cell_width > grid_layout(2, 4, 8, 8, 5, 5).cell_width


def test_the_grid_is_drawn_with_its_layout():
    trace = real_trace(2, 4)
    fig = attention_grid(trace, "encoder_self", width=700)
    layout = grid_layout(2, 4, 8, 8, len("<pad>"), len("<pad>"), 700)
    assert fig.layout.height == layout.height
    margin = fig.layout.margin
    assert (margin.l, margin.r, margin.t, margin.b) == (layout.left, layout.right, layout.top, layout.bottom)
    assert fig.data[1].marker.size == pytest.approx(layout.target_size)
    assert len(fig.layout.xaxis.tickvals) == (4 * 8 if layout.show_key_ticks else 0)

