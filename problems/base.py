"""The Problem base class: what a dataset must provide to train and decode.

Every problem yields examples `{"inputs": int32 [S], "targets": int32 [T]}`
with EOS appended to both sides, over one shared vocabulary where 0 is padding
and 1 is EOS (tensor2tensor's reserved ids). Splits are "train", "dev" and
"test".
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.text_encoder import strip_ids

PAD_ID = 0
EOS_ID = 1
SPLITS = ("train", "dev", "test")


class ProblemError(ValueError):
    """A problem cannot run as asked; the message says what to do."""


class Problem:
    """A registered dataset. Subclasses set `name` through the registry."""

    name = "problem"
    pad_id = PAD_ID
    eos_id = EOS_ID

    @property
    def vocab_size(self) -> int:
        """Size of the shared vocabulary, reserved ids included."""
        raise NotImplementedError(f"{type(self).__name__} must define vocab_size")

    def set_data_dir(self, data_dir: str | None) -> None:
        """Tells the problem where t2t_lite-datagen wrote its data (no-op by default)."""

    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        """Unbatched `{"inputs", "targets"}` int32 examples of `split`."""
        raise NotImplementedError(f"{type(self).__name__} must define examples()")

    def encode(self, text: str) -> list[int]:
        """Text -> ids, without EOS."""
        raise NotImplementedError(f"{type(self).__name__} must define encode()")

    def decode(self, ids) -> str:
        """Ids -> text; stops at the first EOS and ignores padding."""
        raise NotImplementedError(f"{type(self).__name__} must define decode()")

    def source_text(self, split: str, data_dir: str | None = None) -> list[tuple[str, str]]:
        """(source, reference) text pairs of `split`, for decoding and scoring."""
        pairs = []
        for example in self.examples(split, data_dir).as_numpy_iterator():
            pairs.append((self.decode(example["inputs"]), self.decode(example["targets"])))
        return pairs

    def check_split(self, split: str) -> None:
        if split not in SPLITS:
            raise ProblemError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")

    @staticmethod
    def strip_ids(ids) -> list[int]:
        """Ids up to (not including) the first EOS, padding removed."""
        return strip_ids(ids)
