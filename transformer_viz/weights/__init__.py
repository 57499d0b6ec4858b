"""Weights: the shipped checkpoints, saving and loading them, checkpoints as .zip files, Hugging Face models."""
