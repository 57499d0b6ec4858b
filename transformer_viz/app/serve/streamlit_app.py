"""The script `transformer-viz` hands to Streamlit (alone in its folder, which Streamlit puts on sys.path).

Its settings are in .streamlit/config.toml beside it, which Streamlit reads from the script's folder wherever it runs.
"""

from transformer_viz.app.main import main

main()
