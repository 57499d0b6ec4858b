"""The yardstick of bench/bench_pages.py: two pages in the sidebar's menu, each one 32×32 heatmap.

`streamlit run bench/minimal_pages_app.py`. The pages ("Weights" and "Scores") draw the softmax
weights and the raw scores of the same random numbers, as bench/minimal_app.py's two states do,
so that a switch between them replaces one heatmap by a different one.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

SIZE = 32


def heatmap(value: str) -> None:
    scores = np.random.default_rng(0).normal(size=(SIZE, SIZE))
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    z = weights if value == "weights" else scores
    st.title(value.capitalize())
    fig = go.Figure(go.Heatmap(z=z, colorscale="Viridis", colorbar=dict(title=dict(text=value))))
    fig.update_layout(title=dict(text=f"{SIZE} × {SIZE} {value}"), height=560, template="plotly_white")
    fig.update_yaxes(autorange="reversed")
    st.plotly_chart(fig, theme=None)


def weights_page() -> None:
    heatmap("weights")


def scores_page() -> None:
    heatmap("scores")


st.navigation([st.Page(weights_page, title="Weights", url_path="weights", default=True),
               st.Page(scores_page, title="Scores", url_path="scores")]).run()
