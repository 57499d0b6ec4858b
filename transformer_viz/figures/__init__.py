"""Pure Plotly figure builders: trace entries or numpy arrays in, go.Figure out (no Streamlit)."""
