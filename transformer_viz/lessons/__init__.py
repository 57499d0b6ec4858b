"""The lesson a teacher runs without preparation: its facts (no Streamlit)."""
