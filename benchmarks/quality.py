"""Quality recipes: one entry point, one subcommand per recipe.

    python -m benchmarks.quality multi30k --raw_dir=../shared/data/multi30k --work_dir=W
    python -m benchmarks.quality fine_tuning --work_dir=W [--multi30k_split=5000]
    python -m benchmarks.quality demo WORK_DIR

`multi30k` is the Multi30k recipe on a wall-clock budget (benchmarks/multi30k.py),
`fine_tuning` fine-tuning from a general run against training from scratch
(benchmarks/fine_tuning.py) and `demo` the Makefile's demo stage by stage
(benchmarks/demo.py). `python -m benchmarks.quality COMMAND --help` says more.
benchmarks/multi30k_ablations.sh and benchmarks/lecture_side_by_side.sh run
`multi30k` several times.
"""

from __future__ import annotations

from benchmarks import cli

COMMANDS = {"multi30k": "benchmarks.multi30k", "fine_tuning": "benchmarks.fine_tuning",
            "demo": "benchmarks.demo"}
main = cli.entry_point("benchmarks.quality", __doc__, COMMANDS)

if __name__ == "__main__":
    cli.run(main)
