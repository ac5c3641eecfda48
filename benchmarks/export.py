"""Export and serving: one entry point, one subcommand per measurement.

    python -m benchmarks.export time [--hparams=tiny --vocab=12]
    python -m benchmarks.export serving WORK_DIR [--batch=64]
    python -m benchmarks.export ctranslate2 --run_dir=RUN --raw_dir=RAW [--checkpoint=averaged]

`time` is the time and size of `t2t_lite-exporter` (benchmarks/export_time.py),
`serving` the exported `serving_default` signature with core-op SentencePiece
against tensorflow_text's op (benchmarks/serving_speed.py) and `ctranslate2` a
trained Multi30k run served by the decoder and by its CTranslate2 exports
(benchmarks/ctranslate2_multi30k.py). `python -m benchmarks.export COMMAND --help`
says more.
"""

from __future__ import annotations

from benchmarks import cli

COMMANDS = {"time": "benchmarks.export_time", "serving": "benchmarks.serving_speed",
            "ctranslate2": "benchmarks.ctranslate2_multi30k"}
main = cli.entry_point("benchmarks.export", __doc__, COMMANDS)

if __name__ == "__main__":
    cli.run(main)
