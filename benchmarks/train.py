"""Training speed: one entry point, one subcommand per measurement.

    python -m benchmarks.train steps [--size bench|base|all] [--jit auto|on|off]
    python -m benchmarks.train trainer [--size bench] [--steps 200] [--jit]
    python -m benchmarks.train interleaved --before=OVERRIDES --after=OVERRIDES [--size bench]
    python -m benchmarks.train adam [--size base]
    python -m benchmarks.train profile [--size base] [--jit]

`steps` times the trainer's own step on fixed shapes (benchmarks/train_speed.py),
`trainer` the whole `t2t_lite-trainer` command on the synthetic problem
(benchmarks/trainer_speed.py), `interleaved` two settings of the step in one
process (benchmarks/train_interleaved.py), `adam` the optimizer update alone
(benchmarks/adam_update.py) and `profile` where a step's time goes
(benchmarks/train_profile.py). `python -m benchmarks.train COMMAND --help` says more.
benchmarks/train_side_by_side.sh runs `steps` beside the peers' scripts; the JAX
backend's speed is benchmarks/gpu_check.sh (`python -m benchmarks.jax_speed`).
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import cli

COMMANDS = {"steps": "benchmarks.train_speed", "trainer": "benchmarks.trainer_speed",
            "interleaved": "benchmarks.train_interleaved", "adam": "benchmarks.adam_update",
            "profile": "benchmarks.train_profile"}
main = cli.entry_point("benchmarks.train", __doc__, COMMANDS)

if __name__ == "__main__":
    cli.run(main)
