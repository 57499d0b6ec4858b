"""Each figure's text alternative is read off the figure: its tables hold the numbers the figure draws, under the
labels it draws them at; every chart of every page comes with one, in the session's language."""

import html
import json

import numpy as np
import plotly.graph_objects as go
import pytest
from test_app import run_page

from transformer_viz.app.frame.navigation import PAGES
from transformer_viz.app.session.charts import ALTERNATIVE
from transformer_viz.figures.alternative import MAX_CELLS, number, text_alternative


def test_a_heatmaps_table_is_its_numbers_at_its_labels_and_a_blocked_cell_says_so():
    z = np.array([[0.25, np.nan], [0.5, 0.125]])
    fig = go.Figure(go.Heatmap(z=z, x=["le", "chat"], y=["the", "cat"], name="weights"))
    fig.update_layout(title="Layer 1 · Head 2")
    (table,) = text_alternative(fig).tables
    assert table.columns == ("le", "chat")
    assert table.rows == (("the", ("0.250", "blocked")), ("cat", ("0.500", "0.125")))
    description = text_alternative(fig).description
    assert description.startswith("Figure: Layer 1 · Head 2.") and "at row “cat”, column “le”" in description


def test_token_positions_are_read_through_their_tick_texts_and_gaps_are_left_out():
    z = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan], [3.0, np.nan, 4.0]])  # a gutter row and column
    fig = go.Figure(go.Heatmap(z=z, hoverongaps=False))
    fig.update_xaxes(tickvals=[0, 2], ticktext=["<b>a</b>", "b"])
    (table,) = text_alternative(fig, "zh").tables
    assert table.columns == ("a", "b")
    assert [cells for _, cells in table.rows] == [("1.000", "2.000"), ("3.000", "4.000")]


def test_bars_and_lines_list_their_values_and_click_targets_and_one_colour_layers_are_not_read():
    fig = go.Figure([go.Bar(x=["h", "e"], y=[0.75, 0.25], name="p"),
                     go.Scatter(x=[0, 1], y=[5, 5], mode="markers", marker=dict(maxdisplayed=1), name="targets"),
                     go.Heatmap(z=[[1.0]], colorscale=[[0, "#ccc"], [1, "#ccc"]], name="blocked")])
    alternative = text_alternative(fig)
    assert [table.rows for table in alternative.tables] == [(("h", ("0.750",)), ("e", ("0.250",)))]
    assert "targets" not in alternative.description and "blocked" not in alternative.description


def test_a_figure_with_more_numbers_than_a_table_holds_says_so_instead():
    side = int(MAX_CELLS ** 0.5) + 1
    fig = go.Figure(go.Heatmap(z=np.ones((side, side))))
    alternative = text_alternative(fig)
    assert alternative.tables == () and "too many to list" in alternative.description


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", PAGES)
def test_every_chart_of_every_page_has_its_text_alternative_with_the_charts_numbers(page, lang):
    at = run_page(page, link={"lang": lang})
    charts = list(at.get("plotly_chart"))
    alternatives = [h.proto.body for h in at.get("html") if f'class="{ALTERNATIVE}"' in h.proto.body]
    assert len(alternatives) == len(charts), page
    for chart, alternative in zip(charts, alternatives, strict=True):
        fig = go.Figure(json.loads(chart.proto.spec))  # what the browser draws
        for trace in fig.data:
            if trace.type == "heatmap" and trace.z is not None and np.size(trace.z) <= 64 and trace.name:
                finite = [v for v in np.asarray(trace.z, dtype=float).ravel() if np.isfinite(v)]
                assert all(f"<td>{html.escape(number(v))}</td>" in alternative for v in finite), (page, trace.name)
    if lang == "zh" and alternatives:
        assert "图：" in alternatives[0]
