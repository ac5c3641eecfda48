"""Algorithmic problems generated in code: no download, deterministic.

`algorithmic_reverse` (targets are the inputs reversed) and `algorithmic_copy`
(targets equal the inputs), over a 10-symbol alphabet, lengths 1 to 12, as in
tensor2tensor's algorithmic problems. They are the README quickstart's problem.

Held-out sequences never occur in training: every possible sequence belongs to
exactly one split by a hash of its symbols (about 1 in 10 is held out, split
between dev and test), and each split only samples its own sequences. Examples
are drawn with lengths uniform in [min_length, max_length] from a fixed seed, so
the same problem always yields the same data. The held-out splits (dev, test)
are drawn without replacement: their 1,000 sequences each are distinct. Lengths
1-3 have 10, 100 and 1,000 possible sequences, about 1 in 20 of them in each
held-out split: fewer than their share of 1,000 (about 83), so most are of
lengths 4-12 (951 of the test split's). Training sequences repeat.
"""

from __future__ import annotations

import abc
import zlib

import numpy as np
import tensorflow as tf

from t2t_lite.ids import EOS_ID
from t2t_lite.problems.base import Problem, ProblemError
from t2t_lite.registry import register_problem

_FIRST_SYMBOL_ID = EOS_ID + 1  # 0 = pad, 1 = EOS, then the symbols.


def split_of(symbols) -> str:
    """The split a sequence of symbols belongs to ("train", "dev" or "test")."""
    bucket = zlib.crc32(bytes([len(symbols)] + [int(s) for s in symbols])) % 20
    if bucket == 0:
        return "dev"
    if bucket == 1:
        return "test"
    return "train"


class AlgorithmicProblem(Problem):
    """Sequences of `num_symbols` symbols; subclasses define `transform`."""

    num_symbols = 10
    min_length = 1
    max_length = 12
    split_sizes = {"train": 200_000, "dev": 1_000, "test": 1_000}
    seeds = {"train": 1, "dev": 2, "test": 3}
    distinct_splits = ("dev", "test")  # Drawn without replacement.

    def __init__(self):
        self._cache: dict[str, np.ndarray] = {}

    @property
    def vocab_size(self) -> int:
        return _FIRST_SYMBOL_ID + self.num_symbols

    @abc.abstractmethod
    def transform(self, symbols: np.ndarray) -> np.ndarray:
        """The target symbols of input `symbols` (int [n] -> int [m])."""

    def sequences(self, split: str) -> list[np.ndarray]:
        """The `split_sizes[split]` symbol sequences of `split` (deterministic)."""
        self.check_split(split)
        if split not in self._cache:
            self._cache[split] = self._sample(split)
        return self._cache[split]

    def _sample(self, split: str) -> list[np.ndarray]:
        """Draws until `split_sizes[split]` sequences of `split` (distinct ones if held out)."""
        rng = np.random.default_rng(self.seeds[split])
        wanted = self.split_sizes[split]
        distinct = split in self.distinct_splits
        out: list[np.ndarray] = []
        seen: set[tuple[int, ...]] = set()
        for _ in range(1000):  # Rounds of `wanted` draws; the built-in splits need a few.
            if len(out) == wanted:
                return out
            lengths = rng.integers(self.min_length, self.max_length + 1, size=wanted)
            symbols = rng.integers(0, self.num_symbols, size=(wanted, self.max_length))
            for length, row in zip(lengths, symbols):
                seq = row[:length]
                if split_of(seq) != split:
                    continue
                if distinct:
                    key = tuple(int(s) for s in seq)
                    if key in seen:
                        continue
                    seen.add(key)
                out.append(seq)
                if len(out) == wanted:
                    break
        if len(out) < wanted:
            kind = "distinct sequences" if distinct else "sequences found in 1,000 rounds"
            raise ProblemError(f"{self.name}: the {split} split has fewer than {wanted:,} "
                               f"{kind}; lower split_sizes or raise max_length")
        return out

    def examples(self, split: str, data_dir: str | None = None) -> tf.data.Dataset:
        inputs, targets, lengths = self._arrays(split)

        def trim(x, y, n):
            return {"inputs": x[:n], "targets": y[:n]}

        return tf.data.Dataset.from_tensor_slices((inputs, targets, lengths)).map(trim)

    def _arrays(self, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inputs, targets, lengths) of `split`, EOS-terminated and padded; built once
        per process for each problem and configuration (every problem instance of a
        kind yields the same data, and a training run asks for it several times)."""
        key = (type(self), split, self.num_symbols, self.min_length, self.max_length,
               self.split_sizes[split], self.seeds[split])
        if key not in _ARRAYS:
            seqs = self.sequences(split)
            width = self.max_length + 1
            inputs = np.zeros((len(seqs), width), np.int32)
            targets = np.zeros((len(seqs), width), np.int32)
            lengths = np.zeros((len(seqs),), np.int32)
            for i, seq in enumerate(seqs):
                n = len(seq)
                inputs[i, :n] = seq + _FIRST_SYMBOL_ID
                targets[i, :n] = self.transform(seq) + _FIRST_SYMBOL_ID
                inputs[i, n] = targets[i, n] = EOS_ID
                lengths[i] = n + 1
            for array in (inputs, targets, lengths):
                array.flags.writeable = False
            _ARRAYS[key] = (inputs, targets, lengths)
        return _ARRAYS[key]

    def encode(self, text: str) -> list[int]:
        ids = []
        for token in text.split():
            # ASCII digits only: "²".isdigit() is True but int("²") fails.
            if not (token.isascii() and token.isdigit()) or int(token) >= self.num_symbols:
                raise ProblemError(
                    f"{self.name}: {token!r} is not a symbol; write space-separated "
                    f"integers in 0..{self.num_symbols - 1}"
                )
            ids.append(int(token) + _FIRST_SYMBOL_ID)
        return ids

    def decode(self, ids) -> str:
        return " ".join(str(i - _FIRST_SYMBOL_ID) for i in self.strip_ids(ids))


_ARRAYS: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


@register_problem("algorithmic_reverse")
class AlgorithmicReverse(AlgorithmicProblem):
    """Targets are the input symbols in reverse order."""

    def transform(self, symbols):
        return symbols[::-1]


@register_problem("algorithmic_copy")
class AlgorithmicCopy(AlgorithmicProblem):
    """Targets equal the input symbols."""

    def transform(self, symbols):
        return symbols.copy()
