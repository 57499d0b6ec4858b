"""Figures are assembled without Plotly validating them a second time: the same figure, and later changes checked."""

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from helpers import make_model, random_ids

from transformer_viz.analysis.walkthrough import head_walkthrough
from transformer_viz.figures.head import dot_product_figure, walkthrough_figures
from transformer_viz.figures.look import assembled_figure


def head_figures(kind: str) -> list[go.Figure]:
    """Every step of one head of a tiny model with a padded source (masked cells, grey layers) and its dot product."""
    model = make_model(d_model=8, n_heads=2)
    _, trace = model.run_with_trace(random_ids(1, 4, 20, pad_tail=[1]), random_ids(1, 4, 22))
    walk = head_walkthrough(model, trace, kind, 0, 1)
    return [fig for _, fig in walkthrough_figures(walk, cell=(1, 2))] + [dot_product_figure(walk, 1, 2)]


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_an_assembled_figure_is_what_plotly_validation_makes_of_it(kind):
    for fig in head_figures(kind):
        validated = go.Figure(fig.to_dict())  # every property through Plotly's validators
        assert json.loads(pio.to_json(fig)) == json.loads(pio.to_json(validated))


def test_changes_after_assembly_are_validated():
    fig = assembled_figure([go.Heatmap(z=[[0.0, 1.0]])], {"title": {"text": "t"}, "xaxis": {"side": "top"}})
    with pytest.raises(ValueError, match="nonsense"):
        fig.update_layout(nonsense=1)
    with pytest.raises(ValueError, match="nonsense"):
        fig.data[0].update(nonsense=1)
    with pytest.raises(ValueError):
        fig.layout.xaxis.side = "middle"
    with pytest.raises(ValueError, match="nonsense"):
        fig.add_trace(go.Scatter(x=[0], y=[0])).update_traces(nonsense=1)


def test_plotly_validation_catches_what_assembly_lets_through():
    """The app's tests validate every chart spec (test_app's assert_valid_figures); this is what they would catch."""
    fig = assembled_figure([go.Heatmap(z=[[0.0, 1.0]])], {"nonsense": 1})
    with pytest.raises(ValueError, match="nonsense"):
        go.Figure(json.loads(pio.to_json(fig)))
