"""How to generate a problem's data: `DatagenOptions` (see `t2t_lite.data.datagen`).

This module imports no TensorFlow, so `t2t_lite-datagen` builds its flags from
these fields (their defaults are the flags') before TensorFlow starts.
"""

from __future__ import annotations

import dataclasses

VOCAB_TYPES = ("bpe", "word")  # --source_vocab_type: subwords, or one piece per word.


@dataclasses.dataclass(frozen=True)
class DatagenOptions:
    """How to generate. None means the problem's own default."""

    vocab_size: int | None = None  # Pieces in the vocabulary (each, when separate).
    source_vocab_size: int | None = None  # Separate vocabularies only.
    target_vocab_size: int | None = None
    source_vocab_type: str | None = None  # "bpe" or "word"; separate vocabularies only.
    vocab_sample_size: int | None = None  # Training pairs sampled to learn it.
    shard_size: int | None = None  # Pairs per shard.
    seed: int = 1234  # Vocabulary sample and in-shard shuffle.
    source_lang: str | None = None  # translate_files only.
    target_lang: str | None = None
    tfds_dir: str | None = None  # tensorflow-datasets' data_dir.
