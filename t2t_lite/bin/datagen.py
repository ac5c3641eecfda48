"""t2t_lite-datagen: build a problem's vocabulary and encoded TFRecord shards.

    t2t_lite-datagen --problem=wmt_ende --data_dir=D                 # download with tfds
    t2t_lite-datagen --problem=wmt_ende --data_dir=D --raw_dir=R     # local files, see below
    t2t_lite-datagen --problem=multi30k_ende --data_dir=D --raw_dir=multi30k/data/task1/raw
    t2t_lite-datagen --problem=translate_files --data_dir=D --raw_dir=R \\
        --source_lang=en --target_lang=fr --vocab_size=16000

--raw_dir layouts (UTF-8 text, one sentence per line, plain or .gz):
  translate_files  train.SRC, train.TGT; optional dev.*, test.*
  multi30k_ende    train.{en,de}, val.{en,de}, test_2016_flickr.{en,de}
  wmt_ende         train.{en,de} or the WMT files europarl-v7.de-en.*, commoncrawl.de-en.*,
                   news-commentary-v13.de-en.* (anywhere under R); newstest2013.{en,de} (dev);
                   newstest2014.{en,de} (test, optional)
  wmt_enfr         likewise with .fr, and the EN-FR corpora (see problems/translate_wmt.py)

A problem with separate source and target vocabularies (shared_vocab = False)
gets vocab.PROBLEM.source.model and vocab.PROBLEM.target.model, each sized by
--source_vocab_size / --target_vocab_size, else the problem's default, else
--vocab_size; --source_vocab_type=word makes the source word-level (one id per
word: `t2t_lite.data.word_classes`).

Input is checked before anything is written; every file is written atomically;
running it again skips the shards already written. Pairs with an empty side are
skipped and counted; invalid UTF-8 stops the run naming the file and line.
"""

from __future__ import annotations

import argparse
import sys

from t2t_lite.bin import common
from t2t_lite.data.options import DatagenOptions


def build_parser() -> argparse.ArgumentParser:
    """The command's flags (its reference page is generated from this parser).

    Those after --raw_dir are DatagenOptions' fields: each flag's type, default,
    choices and help are its field's (`common.add_option_flags`).
    """
    parser = common.ArgumentParser(prog="t2t_lite-datagen", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", required=True, help="registered problem name")
    parser.add_argument("--data_dir", required=True, help="where the vocabulary and shards go")
    parser.add_argument("--raw_dir", default=None, help="local input files (no download)")
    common.add_option_flags(parser, DatagenOptions)
    common.add_common_flags(parser)
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)

    def run():
        from t2t_lite import registry
        from t2t_lite.data import datagen

        problem = registry.problem(args.problem)
        options = common.options_from_args(DatagenOptions, args)
        summary = datagen.generate(problem, args.data_dir, args.raw_dir, options,
                                   log=lambda line: print(line, file=sys.stderr, flush=True))
        print(datagen.format_summary(summary))

    return common.run("t2t_lite-datagen", run, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
