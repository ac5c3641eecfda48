"""Synthetic translation: seeded random token pairs, generated in code, for timing training.

`synthetic_translate` draws each split's (source, target) pairs of random ids in
[2, vocab_size) from a fixed seed per split, lengths uniform in
[min_length, max_length] on each side, and ends both with EOS: no download, no
datagen, the same data in every process. The pairs carry no relation, so a
model learns nothing from them but the ids' frequencies; they are a workload of
known shapes for the real `t2t_lite-trainer` command, like fairseq's
`dummy_mt` (`python -m benchmarks.train trainer` times it). Text is the ids
written as space-separated integers.

Registered sizes (the peers' training workload, 31 ids + EOS = 32 tokens a side):
`synthetic_translate` (vocabulary 8192, the `bench` size) and
`synthetic_translate_base` (vocabulary 32768, the paper's `base`). A subclass
changes `vocab`, `min_length`, `max_length` or `split_sizes`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.ids import EOS_ID
from t2t_lite.problems.base import Problem, ProblemError
from t2t_lite.registry import register_problem

_FIRST_ID = EOS_ID + 1  # 0 = pad, 1 = EOS, then the random tokens.


@register_problem("synthetic_translate")
class SyntheticTranslate(Problem):
    """Random source and target ids of `min_length`-`max_length` tokens plus EOS."""

    vocab = 8192
    min_length = 31
    max_length = 31
    split_sizes = {"train": 8192, "dev": 256, "test": 256}
    seeds = {"train": 1, "dev": 2, "test": 3}

    @property
    def vocab_size(self) -> int:
        return self.vocab

    def arrays(self, split: str) -> dict[str, np.ndarray]:
        """{"inputs", "targets"}: int32 [n, max_length + 1], EOS-terminated, zero-padded."""
        self.check_split(split)
        rng = np.random.default_rng(self.seeds[split])
        count, width = self.split_sizes[split], self.max_length + 1
        out = {}
        for side in ("inputs", "targets"):
            lengths = rng.integers(self.min_length, self.max_length + 1, size=count)
            ids = rng.integers(_FIRST_ID, self.vocab, size=(count, width), dtype=np.int32)
            ids[np.arange(count), lengths] = EOS_ID
            ids[np.arange(width)[None, :] > lengths[:, None]] = 0
            out[side] = ids
        return out

    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        arrays = self.arrays(split)

        def trim(example):  # Each side up to its EOS.
            return {name: ids[:tf.reduce_sum(tf.cast(ids > 0, tf.int32))]
                    for name, ids in example.items()}

        return tf.data.Dataset.from_tensor_slices(arrays).map(trim)

    def encode(self, text: str) -> list[int]:
        ids = []
        for token in text.split():
            if not (token.isascii() and token.isdigit()) or not (
                    _FIRST_ID <= int(token) < self.vocab):
                raise ProblemError(f"{self.name}: {token!r} is not a token id; write "
                                   f"space-separated integers in {_FIRST_ID}..{self.vocab - 1}")
            ids.append(int(token))
        return ids

    def decode(self, ids) -> str:
        return " ".join(str(int(i)) for i in self.strip_ids(ids))


@register_problem("synthetic_translate_base")
class SyntheticTranslateBase(SyntheticTranslate):
    """The `base` size's vocabulary (32768)."""

    vocab = 32768
