"""How to generate a problem's data: `DatagenOptions` (see `t2t_lite.data.datagen`),
and `option`, the field every options dataclass is built of.

This module imports no TensorFlow, so `t2t_lite-datagen` builds its flags from
these fields (their defaults, types, choices and help are the flags') before
TensorFlow starts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

VOCAB_TYPES = ("bpe", "word")  # --source_vocab_type: subwords, or one piece per word.


def option(default: Any = dataclasses.MISSING, help: str = "", *,
           flag: str | bool = True, choices: tuple | None = None, unset: bool = False,
           default_factory: Any = dataclasses.MISSING) -> Any:
    """An options dataclass field whose metadata holds what its command-line flag needs.

    `t2t_lite.bin.common.add_option_flags` turns each such field into `--NAME` (its
    type from the annotation; a bool is an off-by-default switch), and
    `options_from_args` builds the dataclass back from the parsed flags.

    Args:
      default, default_factory: the field's default, as `dataclasses.field`'s.
      help: what the field means, the flag's help (argparse's `%(default)s` allowed).
      flag: the flag's name when it is not the field's; False: no command takes it.
      choices: the only values the flag accepts.
      unset: the flag defaults to None, "not given", which keeps the field's default
        (or the run's, for the decoding search knobs) instead of repeating it.
    """
    metadata = {"help": help, "flag": flag, "choices": choices, "unset": unset}
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata=metadata)


@dataclasses.dataclass(frozen=True)
class DatagenOptions:
    """How to generate. None means the problem's own default."""

    source_lang: str | None = option(None, "translate_files: source suffix")
    target_lang: str | None = option(None, "translate_files: target suffix")
    vocab_size: int | None = option(
        None, "subword pieces (default: the problem's, e.g. 37000 for wmt_ende)")
    source_vocab_size: int | None = option(
        None, "pieces in the source vocabulary (problems with separate source and target "
        "vocabularies; default: the problem's, else --vocab_size)")
    target_vocab_size: int | None = option(
        None, "pieces in the target vocabulary (likewise)")
    source_vocab_type: str | None = option(
        None, "separate vocabularies: bpe (subwords) or word (one piece per word, unknown "
        "words as classes of their shape and suffix); default: the problem's (bpe; word "
        "for wsj_parsing)", choices=VOCAB_TYPES)
    vocab_sample_size: int | None = option(
        None, "training pairs sampled to learn the vocabulary")
    shard_size: int | None = option(None, "pairs per shard")
    seed: int = option(1234, "of the vocabulary sample and the shuffle (default: %(default)s)")
    tfds_dir: str | None = option(None, "tensorflow-datasets data_dir for downloads")
