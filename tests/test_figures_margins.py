"""settle_margins: automargin off, and margins that hold what Plotly would have grown them for (estimates).

tests/test_margins_browser.py checks the app's own figures against Plotly drawing them in Chromium."""

import plotly.graph_objects as go

from transformer_viz.figures.fit import text_em
from transformer_viz.figures.margins import settle_margins


def settled(fig: go.Figure) -> dict:
    return settle_margins(fig.to_dict())["layout"]


def test_long_row_labels_get_a_left_margin_as_wide_as_they_are():
    labels = ["a rather long token name", "b"]
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], showscale=False),
                    dict(margin=dict(l=10, r=10, t=10, b=10),
                         yaxis=dict(tickmode="array", tickvals=[0, 1], ticktext=labels, tickfont=dict(size=14))))
    layout = settled(fig)
    assert layout["yaxis"]["automargin"] is False and layout["xaxis"]["automargin"] is False
    assert layout["margin"]["l"] >= text_em(labels[0]) * 14 + 10


def test_margins_never_shrink():
    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1]), dict(margin=dict(l=120, r=90, t=100, b=80)))
    assert settled(fig)["margin"] == dict(l=120, r=90, t=100, b=80)


def test_labels_plotly_may_turn_get_room_below_for_standing_upright():
    labels = [f"a long label {i}" for i in range(30)]
    fig = go.Figure(go.Bar(x=labels, y=list(range(30))), dict(margin=dict(l=10, r=10, t=10, b=10)))
    layout = settled(fig)
    assert "tickangle" not in layout["xaxis"]  # Plotly still turns them by 30° or 90° where they would meet
    assert layout["margin"]["b"] >= text_em(labels[-1]) * 12


def test_labels_at_a_given_angle_get_the_room_of_that_angle():
    fig = go.Figure(go.Bar(x=["a", "b", "c"], y=[1, 2, 3]),
                    dict(margin=dict(l=10, r=10, t=10, b=10), xaxis=dict(tickangle=0)))
    assert settled(fig)["margin"]["b"] < 40  # one line of labels


def test_a_colour_bar_sits_at_the_plot_edge_inside_the_right_margin():
    fig = go.Figure(go.Heatmap(z=[[0.0, 1.0]], colorbar=dict(thickness=14, title=dict(text="weight", side="right"))),
                    dict(margin=dict(l=10, r=10, t=10, b=10)))
    layout = settle_margins(data := fig.to_dict())["layout"]
    bar = data["data"][0]["colorbar"]
    assert (bar["x"], bar["xanchor"]) == (1.0, "left")  # not 1.02 plot widths: a distance that grows with the width
    assert layout["margin"]["r"] >= 14 + 2 * 10 + text_em("0.5") * 12


def test_a_colour_bar_keeps_its_margin_when_its_numbers_change_from_weights_to_scores():
    def right_margin(z):
        return settled(go.Figure(go.Heatmap(z=z, colorbar=dict(title=dict(text="value", side="right")))))["margin"]["r"]

    assert right_margin([[0.0, 1.0]]) == right_margin([[-60.0, 60.0]]) == right_margin([[-0.5, 0.5]])
    assert right_margin([[-60000.0, 60000.0]]) > right_margin([[0.0, 1.0]])  # a wider label still gets its room


def test_an_axis_between_two_plots_does_not_widen_the_figure():
    plots = [go.Heatmap(z=[[1]], showscale=False), go.Heatmap(z=[[1]], showscale=False, xaxis="x2", yaxis="y2")]
    fig = go.Figure(plots,
                    dict(margin=dict(l=10, r=10, t=10, b=10), xaxis=dict(domain=[0, 0.45]),
                         xaxis2=dict(domain=[0.55, 1], anchor="y2"), yaxis2=dict(anchor="x2", ticktext=["x" * 40],
                                                                                  tickvals=[0], tickmode="array")))
    assert settled(fig)["margin"]["l"] < 60  # the long label of the right plot's axis sits between the plots
