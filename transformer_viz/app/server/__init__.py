"""What one server shares among its sessions: models, runs and figures (cached), checkpoints, limits."""
