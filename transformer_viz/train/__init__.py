"""Training: the loop, the command line (`python -m transformer_viz.train`) and a server's worker processes."""
