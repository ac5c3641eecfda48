"""Parallel corpora for t2t_lite-datagen: local text files, or tensorflow-datasets.

A corpus is one split's sentence pairs. `prepare()` checks it (or downloads
it) and returns its number of pairs, before anything is written; `pairs()`
yields `(source, target)` text lines in a fixed order.

Local files are UTF-8 text, one sentence per line, aligned by line, plain or
gzipped (`.gz`). `prepare()` reads every file once and stops, before anything
is written, at the first of: a missing file (the message names the path
expected), an invalid UTF-8 byte (file, line and column: t2t_lite does not
guess encodings, convert the file first), or parallel files whose line counts
differ (both files, both counts). Empty lines are not an error: datagen skips
the pair and counts it.
"""

from __future__ import annotations

import codecs
import glob
import gzip
import os
import socket
import zlib
from typing import Iterator

from t2t_lite.problems.base import ProblemError

_CHUNK = 1 << 20


def _open(path: str):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _bad_utf8(path: str) -> str:
    """The message for the first invalid UTF-8 line of `path`."""
    try:
        with _open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as e:
                    return (f"{path}, line {number}: invalid UTF-8 (byte 0x{line[e.start]:02x} "
                            f"at byte {e.start + 1} of the line); t2t_lite reads UTF-8 only: "
                            "convert the file (e.g. iconv -f latin1 -t utf-8) and rerun")
    except (OSError, EOFError, zlib.error) as e:
        return f"{path}: cannot read it ({e})"
    return f"{path}: invalid UTF-8 at the end of the file; convert it to UTF-8 and rerun"


def count_lines(path: str) -> int:
    """Lines in `path` (a last line without a newline counts); checks it is UTF-8.

    Raises:
      ProblemError: the file is not valid UTF-8 (names the line) or unreadable.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines, last = 0, b"\n"
    try:
        with _open(path) as f:
            while chunk := f.read(_CHUNK):
                decoder.decode(chunk)
                lines += chunk.count(b"\n")
                last = chunk[-1:]
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise ProblemError(_bad_utf8(path)) from None
    except (OSError, EOFError, zlib.error) as e:  # zlib.error: a damaged .gz body.
        raise ProblemError(f"{path}: cannot read it ({e})") from None
    return lines + (last != b"\n")


class ParallelFiles:
    """One aligned pair of files: line i of `source_path` translates to line i of `target_path`."""

    def __init__(self, source_path: str, target_path: str):
        self.source_path = source_path
        self.target_path = target_path

    def count(self) -> int:
        """Pairs in the files; checks both exist, are UTF-8 and have equal line counts."""
        for path in (self.source_path, self.target_path):
            if not os.path.isfile(path):
                raise ProblemError(f"{path}: file not found")
        source, target = count_lines(self.source_path), count_lines(self.target_path)
        if source != target:
            raise ProblemError(
                f"parallel files differ in length: {self.source_path} has {source} lines, "
                f"{self.target_path} has {target}; line i of one must translate line i of "
                "the other")
        return source

    def pairs(self) -> Iterator[tuple[str, str]]:
        with _open(self.source_path) as source, _open(self.target_path) as target:
            for s, t in zip(source, target):
                yield s.decode("utf-8"), t.decode("utf-8")

    def fingerprint(self) -> list:
        return [[os.path.abspath(p), os.path.getsize(p), os.stat(p).st_mtime_ns]
                for p in (self.source_path, self.target_path)]


class FileCorpus:
    """A split made of one or more `ParallelFiles`, read in order."""

    def __init__(self, files: list[ParallelFiles]):
        self.files = files

    @property
    def description(self) -> str:
        return ", ".join(f"{f.source_path} + {os.path.basename(f.target_path)}"
                         for f in self.files)

    def prepare(self, log=print) -> int:
        del log
        return sum(f.count() for f in self.files)

    def pairs(self) -> Iterator[tuple[str, str]]:
        for f in self.files:
            yield from f.pairs()

    def fingerprint(self):
        return [f.fingerprint() for f in self.files]


def find_pair(raw_dir: str, prefix: str, source_lang: str, target_lang: str,
              recursive: bool = False) -> ParallelFiles | None:
    """`raw_dir/PREFIX.SRC` and `raw_dir/PREFIX.TGT` (or `.gz`), None if neither exists.

    With `recursive`, also looks in subdirectories (as WMT archives unpack).

    Raises:
      ProblemError: only one side exists (names the missing path).
    """
    found = {lang: _find(raw_dir, f"{prefix}.{lang}", recursive)
             for lang in (source_lang, target_lang)}
    source, target = found[source_lang], found[target_lang]
    if source is None and target is None:
        return None
    if source is None or target is None:
        have = source or target
        lang = source_lang if source is None else target_lang
        missing = os.path.join(os.path.dirname(have), f"{prefix}.{lang}")
        raise ProblemError(f"{missing}: file not found (it is the other side of {have}; "
                           f"plain or .gz)")
    return ParallelFiles(source, target)


def _find(raw_dir: str, name: str, recursive: bool) -> str | None:
    for candidate in (name, name + ".gz"):
        path = os.path.join(raw_dir, candidate)
        if os.path.isfile(path):
            return path
    if recursive:
        for candidate in (name, name + ".gz"):
            hits = sorted(glob.glob(os.path.join(glob.escape(raw_dir), "**", candidate),
                                    recursive=True))
            if hits:
                return hits[0]
    return None


class TfdsSource:
    """A tensorflow-datasets translation builder, downloaded and prepared once.

    Args:
      builder_name: e.g. "wmt_t2t_translate/de-en".
      source_key, target_key: the language features, e.g. "en", "de".
      data_dir: tensorflow-datasets' data_dir (None: its default or $TFDS_DATA_DIR).
      probe_host: a download host, tried first so that a machine without a
        network fails at once with a useful message (tensorflow-datasets would
        retry for minutes).
      offline_hint: what to do without a network (names --raw_dir).
    """

    def __init__(self, builder_name: str, source_key: str, target_key: str,
                 data_dir: str | None, probe_host: str, offline_hint: str):
        self.builder_name = builder_name
        self.source_key = source_key
        self.target_key = target_key
        self.data_dir = data_dir
        self.probe_host = probe_host
        self.offline_hint = offline_hint
        self._builder = None

    def builder(self, log=print):
        if self._builder is None:
            import tensorflow_datasets as tfds

            builder = tfds.builder(self.builder_name, data_dir=self.data_dir)
            if not builder.is_prepared():
                log(f"downloading {self.builder_name} with tensorflow-datasets "
                    f"into {builder.data_dir}")
                self._probe()
                try:
                    builder.download_and_prepare()
                except Exception as e:  # Network errors come in many types.
                    raise ProblemError(self._failure(f"{type(e).__name__}: {e}")) from None
            self._builder = builder
        return self._builder

    def _probe(self) -> None:
        try:
            socket.create_connection((self.probe_host, 80), timeout=15).close()
        except OSError as e:
            raise ProblemError(self._failure(f"{self.probe_host} is unreachable: {e}")) from None

    def _failure(self, reason: str) -> str:
        reason = " ".join(reason.split())[:300]
        return (f"could not download {self.builder_name} with tensorflow-datasets "
                f"({reason}). {self.offline_hint}")


class TfdsCorpus:
    """One split of a `TfdsSource`."""

    def __init__(self, source: TfdsSource, split: str):
        self.source = source
        self.split = split

    @property
    def description(self) -> str:
        return f"tensorflow-datasets {self.source.builder_name} split {self.split}"

    def prepare(self, log=print) -> int:
        builder = self.source.builder(log)
        if self.split in builder.info.splits:
            return builder.info.splits[self.split].num_examples
        return sum(1 for _ in self._dataset())

    def _dataset(self):
        import tensorflow_datasets as tfds

        dataset = self.source.builder().as_dataset(split=self.split, shuffle_files=False)
        return tfds.as_numpy(dataset)

    def pairs(self) -> Iterator[tuple[str, str]]:
        key_s, key_t = self.source.source_key, self.source.target_key
        for example in self._dataset():
            yield example[key_s].decode("utf-8"), example[key_t].decode("utf-8")

    def fingerprint(self):
        builder = self.source.builder()
        return [self.source.builder_name, str(builder.version), self.split]
