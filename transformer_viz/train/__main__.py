"""`python -m transformer_viz.train`: the training command line."""

from transformer_viz.train.cli import main

raise SystemExit(main())
