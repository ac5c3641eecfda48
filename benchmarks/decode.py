"""Decoding speed: one entry point, one subcommand per measurement.

    python -m benchmarks.decode speed [--size bench|base|all] [--jit] [--shards N]
    python -m benchmarks.decode decoder --output_dir=RUN --input=FILE [--lines 1000]
    python -m benchmarks.decode profile [--size bench] [--jit]
    python -m benchmarks.decode cache_writes [--rounds 3]
    python -m benchmarks.decode beams [--rounds 3] [--jit]

`speed` times the beam search on fixed shapes (benchmarks/decode_speed.py),
`decoder` the whole `t2t_lite-decoder` command on a file
(benchmarks/decoder_end_to_end.py), `profile` where a batch's time goes and
`cache_writes` / `beams` the library's variants interleaved in one process
(benchmarks/decode_profile.py). `python -m benchmarks.decode COMMAND --help`
says more. benchmarks/decode_side_by_side.sh runs `speed` beside the peers.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks import cli

COMMANDS = {"speed": "benchmarks.decode_speed", "decoder": "benchmarks.decoder_end_to_end",
            "profile": "benchmarks.decode_profile", "cache_writes": "benchmarks.decode_profile",
            "beams": "benchmarks.decode_profile"}
main = cli.entry_point("benchmarks.decode", __doc__, COMMANDS)

if __name__ == "__main__":
    cli.run(main)
