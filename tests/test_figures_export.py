"""The standalone HTML export: offline, every figure once, plotly.js once, text escaped."""

import json
import re

import plotly.graph_objects as go

from transformer_viz.figures.export import standalone_html


def test_the_html_works_offline_and_holds_every_figure():
    figures = [go.Figure(go.Bar(x=["a", "b"], y=[1, 2], name=f"figure {i}")) for i in range(3)]
    page = standalone_html(figures, "Attention <b>", caption="the <script> cat")
    assert "<script src=" not in page and "<link" not in page  # nothing fetched: the library is in the file
    assert page.count("Plotly.newPlot") == 3
    assert len(re.findall(r"\* plotly\.js v\d", page)) == 1  # the library inlined once, not three times
    assert "Attention &lt;b&gt;" in page and "the &lt;script&gt; cat" in page
    assert json.dumps("figure 2")[1:-1] in page
    assert '"format": "svg"' in page or '"format":"svg"' in page
