"""transformer_viz: `streamlit run app.py`. Page config, the shared sidebar and navigation — nothing else."""

import streamlit as st

from app_pages.navigation import all_pages
from app_pages.sidebar import render_sidebar

st.set_page_config(page_title="transformer_viz", page_icon="🔍", layout="wide")
render_sidebar()
st.navigation(all_pages()).run()
