"""Data generation: the shared vocabulary and encoded TFRecord shards of a problem.

`generate(problem, data_dir, raw_dir)` does what `t2t_lite-datagen` does:
1. checks (or downloads) every split's input before writing anything;
2. trains the shared SentencePiece vocabulary on a seeded sample of training
   pairs, both sides (or reuses the one already in data_dir);
3. writes each split as TFRecord shards `PROBLEM-SPLIT-00000-of-00009`, each a
   `tf.train.Example` with int64 features "inputs" and "targets", EOS appended
   (tensor2tensor's format). Shard k holds input pairs [k * shard_size,
   (k + 1) * shard_size); training shards are shuffled inside with a seed.

Every file is written to a temporary name and renamed, so a killed run leaves
no half-written file, and a new run skips the shards already written. A
manifest, `PROBLEM.datagen.json`, records the inputs, the vocabulary and the
shard layout; a run with other inputs or settings refuses to mix its shards
with the old ones. Pairs with an empty side are skipped and counted; length
filtering happens when training reads the data (`data.batch_by_tokens`).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import random
import sys
import time
from itertools import islice

from t2t_lite import datagen_io as io_
from t2t_lite.text_encoder import DataError, SubwordVocab, normalize, train_vocab

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class DatagenOptions:
    """How to generate. None means the problem's own default."""

    vocab_size: int | None = None  # Pieces in the shared vocabulary.
    vocab_sample_size: int | None = None  # Training pairs sampled to learn it.
    shard_size: int | None = None  # Pairs per shard.
    seed: int = 1234  # Vocabulary sample and in-shard shuffle.
    source_lang: str | None = None  # translate_files only.
    target_lang: str | None = None
    tfds_dir: str | None = None  # tensorflow-datasets' data_dir.


@dataclasses.dataclass
class SplitSummary:
    split: str
    pairs: int = 0  # Input pairs read (empty ones included).
    written: int = 0  # Examples in the shards.
    skipped_empty: int = 0  # Pairs with an empty side, not written.
    shards: int = 0
    shards_skipped: int = 0  # Already written by an earlier run.
    new_pairs: int = 0  # Input pairs encoded by this run.
    source_tokens: int = 0  # Subword tokens, EOS included.
    target_tokens: int = 0
    seconds: float = 0.0

    @property
    def sentences_per_second(self) -> float:
        """Sentences (both sides) read and encoded per second by this run."""
        return 2 * self.new_pairs / max(self.seconds, 1e-9)


@dataclasses.dataclass
class DatagenSummary:
    problem: str
    data_dir: str
    vocab_path: str
    vocab_size: int
    vocab_trained: bool
    vocab_seconds: float
    splits: list[SplitSummary]
    seconds: float


def shard_name(problem_name: str, split: str, index: int, count: int) -> str:
    return f"{problem_name}-{split}-{index:05d}-of-{count:05d}"


def shard_files(data_dir: str, problem_name: str, split: str) -> tuple[list[str], int]:
    """(sorted shard paths of `split` in data_dir, the count their names announce or 0)."""
    pattern = f"{glob.escape(problem_name)}-{split}-[0-9]*-of-[0-9]*"
    paths = sorted(glob.glob(os.path.join(glob.escape(data_dir), pattern)))
    counts = {int(p.rsplit("-of-", 1)[1]) for p in paths if p[-5:].isdigit()}
    return paths, (counts.pop() if len(counts) == 1 else 0)


def manifest_path(data_dir: str, problem_name: str) -> str:
    return os.path.join(data_dir, f"{problem_name}.datagen.json")


def generate(problem, data_dir: str, raw_dir: str | None = None,
             options: DatagenOptions = DatagenOptions(), log=print,
             progress_stream=None) -> DatagenSummary:
    """Writes `problem`'s vocabulary and shards into `data_dir`.

    Raises:
      DataError, ProblemError: unusable input or data_dir; nothing is corrupted.
    """
    if not hasattr(problem, "corpora"):
        raise DataError(f"{problem.name} is generated in code and needs no datagen: "
                        f"train it directly with t2t_lite-trainer --problem={problem.name}")
    for name in ("vocab_size", "vocab_sample_size", "shard_size"):
        value = getattr(options, name)
        if value is not None and value < 1:
            raise DataError(f"--{name} must be >= 1, got {value}")
    start = time.time()
    corpora = {s: c for s, c in problem.corpora(raw_dir, options).items() if c is not None}
    counts = {}
    for split, corpus in corpora.items():
        counts[split] = corpus.prepare(log)
        log(f"{split}: {counts[split]:,} pairs from {corpus.description}")
    if not counts.get("train"):
        raise DataError(f"{problem.name}: the training data holds no sentence pairs")
    os.makedirs(data_dir, exist_ok=True)
    io_.remove_temporaries(data_dir, problem.name)
    vocab, trained, vocab_seconds = _vocabulary(problem, data_dir, corpora["train"],
                                                counts["train"], options, log)
    plan = _plan(problem, corpora, counts, vocab, options)
    manifest = io_.Manifest.open(manifest_path(data_dir, problem.name), plan,
                                 lambda split: shard_files(data_dir, problem.name, split)[0])
    summaries = []
    for split in SPLITS:
        if split in corpora:
            summaries.append(_write_split(problem, data_dir, split, corpora[split], plan,
                                          manifest, vocab, options.seed, log,
                                          progress_stream or sys.stderr))
    manifest.finish()
    return DatagenSummary(problem.name, data_dir, problem.vocab_path(data_dir), vocab.vocab_size,
                          trained, vocab_seconds, summaries, time.time() - start)


def _plan(problem, corpora, counts, vocab, options) -> dict:
    """What the shards are made of; an earlier run's must match to reuse its shards."""
    shard_size = options.shard_size or problem.shard_size
    splits = {}
    for split, corpus in corpora.items():
        n = counts[split]
        splits[split] = {
            "inputs": corpus.fingerprint(), "pairs": n, "shard_size": shard_size,
            "shards": max(1, -(-n // shard_size)), "shuffled": split == "train",
        }
    return {"problem": problem.name, "vocab_sha256": vocab.sha256,
            "vocab_size": vocab.vocab_size, "seed": options.seed, "splits": splits,
            "languages": [problem.source_lang, problem.target_lang]}


def _vocabulary(problem, data_dir, train_corpus, train_pairs, options, log):
    """(vocab, trained now?, seconds): the one in data_dir, else trained and saved."""
    path = problem.vocab_path(data_dir)
    wanted = options.vocab_size or problem.default_vocab_size
    if os.path.exists(path):
        vocab = SubwordVocab.load(path)
        if options.vocab_size and vocab.vocab_size != options.vocab_size:
            raise DataError(
                f"{path} has {vocab.vocab_size} pieces, not the {options.vocab_size} asked; "
                "use another --data_dir, or delete it and the problem's shards to rebuild")
        log(f"using the vocabulary in {path} ({vocab.vocab_size} pieces)")
        return vocab, False, 0.0
    if any(shard_files(data_dir, problem.name, split)[0] for split in SPLITS):
        raise DataError(f"{data_dir} holds {problem.name} shards but not their vocabulary "
                        f"{path}; use another --data_dir or delete the shards")
    start = time.time()
    size = options.vocab_sample_size or problem.vocab_sample_size
    sample = sample_pairs(train_corpus.pairs(), size, options.seed)
    if not sample:
        raise DataError(f"{problem.name}: every training pair has an empty side")
    log(f"training a {wanted}-piece SentencePiece BPE vocabulary on {len(sample):,} of "
        f"{train_pairs:,} training pairs (both sides, seed {options.seed})")
    vocab = train_vocab((s for pair in sample for s in pair), wanted, options.seed)
    # The readable listing first: the .model file's presence means "done".
    io_.atomic_write_bytes(path[:-len(".model")] + ".vocab", vocab.pieces_text().encode())
    io_.atomic_write_bytes(path, vocab.model_proto)
    seconds = time.time() - start
    log(f"wrote {path} ({vocab.vocab_size} pieces) in {seconds:.1f} s")
    return vocab, True, seconds


def sample_pairs(pairs, size: int, seed: int) -> list[tuple[str, str]]:
    """A uniform sample of `size` non-empty normalized pairs (reservoir, seeded)."""
    rng = random.Random(seed)
    sample: list[tuple[str, str]] = []
    seen = 0
    for source, target in pairs:
        source, target = normalize(source), normalize(target)
        if not source or not target:
            continue
        seen += 1
        if len(sample) < size:
            sample.append((source, target))
        else:
            j = rng.randrange(seen)
            if j < size:
                sample[j] = (source, target)
    return sample


def _write_split(problem, data_dir, split, corpus, plan, manifest, vocab, seed, log,
                 stream) -> SplitSummary:
    info = plan["splits"][split]
    n, size, count = info["pairs"], info["shard_size"], info["shards"]
    summary = SplitSummary(split, pairs=n, shards=count)
    progress = io_.Progress(stream, f"{problem.name} {split}", n)
    start = time.time()
    pairs = iter(corpus.pairs())
    for k in range(count):
        wanted = min(size, n - k * size)
        chunk = list(islice(pairs, wanted))
        if len(chunk) != wanted:
            raise DataError(f"{corpus.description} changed while datagen read it; rerun")
        path = os.path.join(data_dir, shard_name(problem.name, split, k, count))
        if os.path.exists(path):
            stats = manifest.shard_stats(split, k) or io_.read_shard_stats(path)
            summary.shards_skipped += 1
            progress.advance(wanted)
        else:
            shuffle_seed = seed * 100_003 + k if info["shuffled"] else None
            stats = io_.write_shard(path, chunk, vocab, shuffle_seed, progress)
            summary.new_pairs += wanted
        manifest.record(split, k, stats)
        for key, value in stats.items():
            setattr(summary, key, getattr(summary, key) + value)
    progress.close()
    summary.seconds = time.time() - start
    skipped = f", {summary.shards_skipped} already written" if summary.shards_skipped else ""
    log(f"{split}: {summary.written:,} examples in {count} shard(s){skipped}; "
        f"{summary.skipped_empty:,} empty pairs skipped")
    return summary


def format_summary(summary: DatagenSummary) -> str:
    """A table of counts and throughput per split."""
    vocab = "trained" if summary.vocab_trained else "reused"
    lines = [f"{summary.problem}: vocabulary {summary.vocab_path} ({summary.vocab_size} pieces, "
             f"{vocab}{f' in {summary.vocab_seconds:.1f} s' if summary.vocab_trained else ''})",
             f"{'split':<6}{'pairs':>11}{'written':>11}{'empty':>8}{'shards':>8}{'reused':>8}"
             f"{'src tokens':>13}{'tgt tokens':>13}{'seconds':>9}{'sent/s':>9}"]
    for s in summary.splits:
        lines.append(f"{s.split:<6}{s.pairs:>11,}{s.written:>11,}{s.skipped_empty:>8,}"
                     f"{s.shards:>8}{s.shards_skipped:>8}{s.source_tokens:>13,}"
                     f"{s.target_tokens:>13,}{s.seconds:>9.1f}{s.sentences_per_second:>9,.0f}")
    lines.append(f"wrote {summary.data_dir} in {summary.seconds:.1f} s")
    return "\n".join(lines)
