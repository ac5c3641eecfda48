"""Runs: a run directory's files, checkpoints, model weights, averaging, loading a run."""
