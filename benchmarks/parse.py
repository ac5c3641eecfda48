"""Parsing: one entry point, one subcommand per measurement.

    python -m benchmarks.parse scores --output_dir=RUN [--checkpoints=ckpt-A,ckpt-B]
    python -m benchmarks.parse evalb --gold=G --test=T --system=NAME [--by_length=15,25,35]
    python -m benchmarks.parse export --output_dir=RUN --words=FILE

`scores` is EVALB F1 of a `wsj_parsing` run's checkpoints (benchmarks/parsing.py),
`evalb` one EVALB row for a tree file another parser wrote (benchmarks/evalb_row.py)
and `export` the exported parser against the decoder (benchmarks/parser_export.py).
`python -m benchmarks.parse COMMAND --help` says more.
benchmarks/parsing_side_by_side.sh runs `scores` and `evalb` beside supar.
"""

from __future__ import annotations

from benchmarks import cli

COMMANDS = {"scores": "benchmarks.parsing", "evalb": "benchmarks.evalb_row",
            "export": "benchmarks.parser_export"}
main = cli.entry_point("benchmarks.parse", __doc__, COMMANDS)

if __name__ == "__main__":
    cli.run(main)
