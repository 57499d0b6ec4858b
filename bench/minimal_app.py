"""The yardstick of bench/bench_ui.py: one 32×32 heatmap and one control, nothing else.

`streamlit run bench/minimal_app.py`. The "Draw" control switches the heatmap between two
different 32×32 matrices (softmax weights and raw scores of the same random numbers), the
same kind of change as the Attention page's "Draw" control. It is a radio, or a selectbox
with `?control=selectbox` in the URL, so that the bench compares like with like.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

SIZE = 32
OPTIONS = ["weights", "scores"]

if st.query_params.get("control") == "selectbox":
    value = st.selectbox("Draw", OPTIONS)
else:
    value = st.radio("Draw", OPTIONS, horizontal=True)
scores = np.random.default_rng(0).normal(size=(SIZE, SIZE))
weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
z = weights if value == "weights" else scores
fig = go.Figure(go.Heatmap(z=z, colorscale="Viridis", colorbar=dict(title=dict(text=value))))
fig.update_layout(title=dict(text=f"{SIZE} × {SIZE} {value}"), height=560, template="plotly_white")
fig.update_yaxes(autorange="reversed")
st.plotly_chart(fig, theme=None)
