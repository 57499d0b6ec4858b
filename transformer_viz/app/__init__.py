"""The Streamlit app: one module per page (each with `render()`), the sidebar, services, state and text catalogs.

The only part of the package that imports Streamlit; `main.main()` draws one run.
"""
