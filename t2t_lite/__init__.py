"""t2t_lite."""
