"""One module per page, each with render()."""
