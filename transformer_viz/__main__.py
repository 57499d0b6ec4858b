"""`python -m transformer_viz`: start the app (the same as the `transformer-viz` command)."""

from transformer_viz.app.launch import main

main()
