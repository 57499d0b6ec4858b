"""browser_spec: a figure's dict written so that Plotly.js, handed it twice by Streamlit, draws it once."""

import base64
import json

import numpy as np
import orjson
import plotly.graph_objects as go
import pytest

from transformer_viz.app.server.browser_spec import (
    MAX_LISTED_NUMBERS,
    POINT_SELECTION,
    browser_spec,
    selecting,
    shortest_float32,
    typed_array_as_list,
    typed_size,
)
from transformer_viz.figures.look import NO_TEMPLATE


def typed(values: np.ndarray) -> dict:
    """A numpy array as plotly.py writes it into a figure's dict."""
    spec = {"dtype": values.dtype.str.lstrip("<|"), "bdata": base64.b64encode(values.tobytes()).decode()}
    if values.ndim > 1:
        spec["shape"] = ", ".join(map(str, values.shape))
    return spec


def read_back(numbers: list) -> np.ndarray:
    """What Plotly.js reads from the JSON of `numbers` (null: NaN), as float32 again."""
    parsed = json.loads(json.dumps(numbers))
    return np.array([np.nan if v is None else v for v in np.ravel(parsed)], dtype=np.float64).astype(np.float32)


def test_floats_read_back_as_the_same_float32_and_are_short():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(16), 64).astype(np.float32).ravel()
    scores = (rng.standard_normal(1024) * 20).astype(np.float32)
    for values in (weights, scores, np.array([0, 1, -1e9, 0.1, 1 / 3, 1e-30, 3e38], dtype=np.float32)):
        listed = shortest_float32(values).tolist()
        np.testing.assert_array_equal(read_back(listed), values)
        assert max(len(repr(v)) for v in listed) <= 16  # 9 significant digits, sign, point and exponent at most
    assert shortest_float32(np.array([0.1, 0.25], dtype=np.float32)).tolist() == [0.1, 0.25]


def test_a_typed_array_becomes_nested_lists_with_gaps_where_nan():
    z = np.array([[0.5, np.nan], [np.nan, 2.0]], dtype=np.float32)
    assert typed_array_as_list(typed(z)) == [[0.5, None], [None, 2.0]]
    assert typed_array_as_list(typed(np.arange(4, dtype=np.int8))) == [0, 1, 2, 3]


def test_an_array_with_infinity_stays_typed():
    """JSON has no infinity: the array keeps the form that says it exactly."""
    with_inf = typed(np.array([1.0, -np.inf], dtype=np.float32))
    assert typed_array_as_list(with_inf) == with_inf


def heatmap(values: np.ndarray) -> dict:
    fig = go.Figure(go.Heatmap(z=values, x=np.arange(values.shape[1]), text=np.full(values.shape, "a")),
                    {"template": NO_TEMPLATE, "meta": {"text_min_width": 300}, "title": {"text": "t"}})
    return fig.to_dict()


def test_a_small_figure_has_plain_arrays_a_data_revision_and_no_meta_or_empty_template():
    values = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    spec = browser_spec(heatmap(values))
    trace = spec["data"][0]
    np.testing.assert_array_equal(read_back(trace["z"]).reshape(3, 4), values)
    assert trace["x"] == [0, 1, 2, 3] and trace["text"] == [["a"] * 4] * 3
    assert "meta" not in spec["layout"] and "template" not in spec["layout"]
    assert spec["layout"]["title"] == {"text": "t"}
    orjson.dumps(spec)  # JSON's own types only: plotly.io.to_json takes orjson's fast path
    go.Figure(spec)  # and Plotly validates it


def test_the_data_revision_changes_with_the_data_alone():
    values = np.ones((2, 2), dtype=np.float32)
    first, same = browser_spec(heatmap(values)), browser_spec(heatmap(values))
    other = browser_spec(heatmap(values * 2))
    assert first["layout"]["datarevision"] == same["layout"]["datarevision"]
    assert first["layout"]["datarevision"] != other["layout"]["datarevision"]


def test_the_data_revision_sees_every_item_of_a_long_text_array():
    """numpy writes a long array's repr with "..." in the middle: the revision is hashed from lists."""
    labels = np.array([f"t{i}" for i in range(3000)])
    changed = labels.copy()
    changed[1500] = "other"
    revisions = {browser_spec(go.Figure(go.Scatter(x=np.arange(3000), hovertext=text)).to_dict())["layout"]
                 ["datarevision"] for text in (labels, changed)}
    assert len(revisions) == 2


@pytest.mark.parametrize("dtype", ["f4", "f8", "i1", "u2", "i4"])
def test_a_typed_arrays_size_is_counted_from_its_base64_text_whatever_its_padding(dtype):
    for count in range(12):  # 0, 1 and 2 "=" at the end, for every item size
        typed = {"dtype": dtype, "bdata": base64.b64encode(np.zeros(count, dtype).tobytes()).decode()}
        assert typed_size(typed) == count


def test_a_large_figure_keeps_binary_arrays():
    """Its JSON text would cost the server more on every rerun than the second draw costs the browser."""
    side = int(MAX_LISTED_NUMBERS**0.5) + 1
    spec = browser_spec(heatmap(np.zeros((side, side), dtype=np.float32)))
    assert set(spec["data"][0]["z"]) >= {"bdata", "dtype"}
    assert "datarevision" in spec["layout"]


@pytest.mark.parametrize("layout", [{}, {"clickmode": "event", "hovermode": "closest"}])
def test_a_selecting_chart_says_streamlits_click_and_drag_modes_itself(layout):
    spec = {"data": [{"type": "scatter", "x": [1]}], "layout": layout}
    chosen = selecting(spec)
    assert chosen["layout"] == {**layout, **POINT_SELECTION} and chosen["data"] is spec["data"]
    assert spec["layout"] == layout  # the plain figure's spec is unchanged
