"""Training: the trainer, its step, losses, schedules, Keras callbacks, clusters, FLOPs, dev evaluation."""
