"""transformer_viz from a checkout: `streamlit run app.py` (installed: `transformer-viz`)."""

from transformer_viz.app.main import main

main()
