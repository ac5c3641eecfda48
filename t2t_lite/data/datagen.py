"""Data generation: the vocabularies and encoded TFRecord shards of a problem.

`generate(problem, data_dir, raw_dir)` does what `t2t_lite-datagen` does:
1. checks (or downloads) every split's input before writing anything;
2. trains the SentencePiece vocabulary on a seeded sample of training pairs,
   or reuses the one already in data_dir: one shared vocabulary learned on
   both sides (the default), or, for a problem with `shared_vocab = False`,
   a source vocabulary learned on the source side and a target vocabulary
   learned on the target side, each reused or trained on its own;
3. writes each split as TFRecord shards `PROBLEM-SPLIT-00000-of-00009`
   (`t2t_lite.data.shards`), inputs encoded with the source vocabulary and targets
   with the target vocabulary. Shard k holds input pairs [k * shard_size,
   (k + 1) * shard_size); training shards are shuffled inside with a seed.

Every file is written to a temporary name and renamed, so a killed run leaves
no half-written file, and a new run skips the shards already written. A
manifest, `PROBLEM.datagen.json`, records the inputs, the vocabularies
(sha256 and size) and the shard layout; a run with other inputs or settings
refuses to mix its shards with the old ones. Pairs with an empty side are
skipped and counted; length filtering happens when training reads the data
(`data.batch_by_tokens`).
"""

from __future__ import annotations

import dataclasses
import os
import random
import sys
import time
from itertools import islice

from t2t_lite.data import datagen_io as io_
from t2t_lite.progress import Progress
from t2t_lite.data.manifest import Manifest, manifest_path
from t2t_lite.data.shards import SPLITS, read_shard_stats, shard_files, shard_name
from t2t_lite.data.options import VOCAB_TYPES, DatagenOptions
from t2t_lite.data.text_encoder import DataError, SubwordVocab, normalize, train_vocab

__all__ = ["DatagenOptions", "DatagenSummary", "SplitSummary", "VocabSummary",
           "format_summary", "generate", "manifest_path", "sample_pairs", "shard_files",
           "shard_name"]


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
class VocabSummary:
    side: str  # "shared", "source" or "target".
    path: str
    size: int
    trained: bool  # False: reused from data_dir.
    seconds: float = 0.0


@dataclasses.dataclass
class DatagenSummary:
    problem: str
    data_dir: str
    vocabs: list[VocabSummary]  # One shared, or source then target.
    splits: list[SplitSummary]
    seconds: float

    @property
    def vocab_path(self) -> str:
        """The (first) vocabulary's model file."""
        return self.vocabs[0].path

    @property
    def vocab_size(self) -> int:
        return self.vocabs[0].size

    @property
    def vocab_trained(self) -> bool:
        return any(v.trained for v in self.vocabs)

    @property
    def vocab_seconds(self) -> float:
        return sum(v.seconds for v in self.vocabs)


@dataclasses.dataclass(frozen=True)
class _VocabSpec:
    side: str  # "shared", "source" or "target".
    sides: tuple  # The pair sides it encodes (and is learned on): 0 source, 1 target.
    size: int  # Pieces wanted when trained.
    asked: int | None  # The size a flag asked for: an existing file must have it.
    model_type: str = "bpe"  # SentencePiece model type when trained.
    asked_type: str | None = None  # The type a flag asked for: an existing file must have it.


def generate(problem, data_dir: str, raw_dir: str | None = None,
             options: DatagenOptions = DatagenOptions(), log=print,
             progress_stream=None) -> DatagenSummary:
    """Writes `problem`'s vocabularies and shards into `data_dir`.

    Raises:
      DataError, ProblemError: unusable input or data_dir; nothing is corrupted.
    """
    if not problem.needs_datagen:
        raise DataError(f"{problem.name} is generated in code and needs no datagen: "
                        f"train it directly with t2t_lite-trainer --problem={problem.name}")
    specs = _vocab_specs(problem, options)
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
    vocabs, vocab_summaries = _vocabularies(problem, data_dir, specs, corpora["train"],
                                            counts["train"], options, log)
    plan = _plan(problem, corpora, counts, vocabs, options)
    manifest = Manifest.open(manifest_path(data_dir, problem.name), plan,
                                 lambda split: shard_files(data_dir, problem.name, split)[0])
    summaries = []
    for split in SPLITS:
        if split in corpora:
            summaries.append(_write_split(problem, data_dir, split, corpora[split], plan,
                                          manifest, vocabs, options.seed, log,
                                          progress_stream or sys.stderr))
    manifest.finish()
    return DatagenSummary(problem.name, data_dir, vocab_summaries, summaries,
                          time.time() - start)


def _vocab_specs(problem, options) -> list[_VocabSpec]:
    """The vocabularies to reuse or train, with their sizes; checks the size options.

    Shared: --vocab_size, else the problem's default_vocab_size. Separate: per
    side --SIDE_vocab_size, else the problem's default_SIDE_vocab_size, else
    --vocab_size, else default_vocab_size.
    """
    names = ("vocab_size", "source_vocab_size", "target_vocab_size", "vocab_sample_size",
             "shard_size")
    for name in names:
        value = getattr(options, name)
        if value is not None and value < 1:
            raise DataError(f"--{name} must be >= 1, got {value}")
    if problem.shared_vocab:
        if options.source_vocab_size or options.target_vocab_size:
            raise DataError(f"{problem.name} shares one vocabulary between source and target: "
                            "size it with --vocab_size, not --source/--target_vocab_size")
        if options.source_vocab_type:
            raise DataError(f"{problem.name} shares one vocabulary between source and target: "
                            "--source_vocab_type is for problems with separate vocabularies")
        size = options.vocab_size or problem.default_vocab_size
        return [_VocabSpec("shared", (0, 1), size, options.vocab_size,
                           problem.vocab_model_type("shared"))]
    if options.source_vocab_type not in (None, *VOCAB_TYPES):
        raise DataError(f"--source_vocab_type must be one of {', '.join(VOCAB_TYPES)}, "
                        f"got {options.source_vocab_type!r}")
    specs = []
    for index, side in enumerate(("source", "target")):
        default = (problem.default_source_vocab_size if side == "source"
                   else problem.default_target_vocab_size)
        asked = getattr(options, f"{side}_vocab_size") or (None if default else options.vocab_size)
        asked_type = options.source_vocab_type if side == "source" else None
        specs.append(_VocabSpec(side, (index,), asked or default or problem.default_vocab_size,
                                asked, asked_type or problem.vocab_model_type(side), asked_type))
    return specs


def _vocab_path(problem, data_dir: str, spec: _VocabSpec) -> str:
    return problem.vocab_path(data_dir, None if spec.side == "shared" else spec.side)


def _vocabularies(problem, data_dir, specs, train_corpus, train_pairs, options, log):
    """((source vocab, target vocab), [VocabSummary]): reused from data_dir, else trained.

    Each vocabulary is reused or trained on its own; training any of them
    needs a data_dir without the problem's shards.
    """
    found, missing = {}, []
    for spec in specs:
        path = _vocab_path(problem, data_dir, spec)
        if os.path.exists(path):
            found[spec] = _reuse_vocab(path, spec, log)
        else:
            missing.append(spec)
    if missing and any(shard_files(data_dir, problem.name, split)[0] for split in SPLITS):
        path = _vocab_path(problem, data_dir, missing[0])
        raise DataError(f"{data_dir} holds {problem.name} shards but not their vocabulary "
                        f"{path}; use another --data_dir or delete the shards")
    summaries = {spec: VocabSummary(spec.side, _vocab_path(problem, data_dir, spec),
                                    vocab.vocab_size, False) for spec, vocab in found.items()}
    if missing:
        size = options.vocab_sample_size or problem.vocab_sample_size
        sample = sample_pairs(train_corpus.pairs(), size, options.seed)
        if not sample:
            raise DataError(f"{problem.name}: every training pair has an empty side")
        for spec in missing:
            path = _vocab_path(problem, data_dir, spec)
            found[spec], summaries[spec] = _train_vocab(path, spec, sample, train_pairs,
                                                        options.seed, log)
    by_side = {side: found[spec] for spec in specs for side in spec.sides}
    return (by_side[0], by_side[1]), [summaries[spec] for spec in specs]


def _reuse_vocab(path: str, spec: _VocabSpec, log) -> SubwordVocab:
    vocab = SubwordVocab.load(path)
    if spec.asked_type and vocab.model_type != spec.asked_type:
        raise DataError(
            f"{path} is a {vocab.model_type} vocabulary, not the {spec.asked_type} asked "
            f"(--{spec.side}_vocab_type); use another --data_dir, or delete it and the "
            "problem's shards to rebuild")
    if spec.asked and vocab.vocab_size != spec.asked:
        flag = "--vocab_size" if spec.side == "shared" else f"the {spec.side} vocabulary size"
        raise DataError(
            f"{path} has {vocab.vocab_size} pieces, not the {spec.asked} asked ({flag}); "
            "use another --data_dir, or delete it and the problem's shards to rebuild")
    log(f"using the vocabulary in {path} ({vocab.vocab_size} pieces)")
    return vocab


def _train_vocab(path, spec, sample, train_pairs, seed, log):
    """(vocab, VocabSummary): trained on the sample's `spec.sides`, saved to `path`."""
    start = time.time()
    model_type = spec.model_type
    sides = "both sides" if len(spec.sides) == 2 else f"{spec.side} side"
    kind = "BPE" if model_type == "bpe" else f"{model_type}-level"
    most = "" if model_type == "bpe" else "at most "
    log(f"training a SentencePiece {kind} vocabulary of {most}{spec.size} pieces on "
        f"{len(sample):,} of {train_pairs:,} training pairs ({sides}, seed {seed})")
    vocab = train_vocab((pair[i] for pair in sample for i in spec.sides), spec.size, seed,
                        model_type=model_type)
    io_.save_vocab(vocab, path)
    seconds = time.time() - start
    log(f"wrote {path} ({vocab.vocab_size} pieces) in {seconds:.1f} s")
    return vocab, VocabSummary(spec.side, path, vocab.vocab_size, True, seconds)


def _plan(problem, corpora, counts, vocabs, options) -> dict:
    """What the shards are made of; an earlier run's must match to reuse its shards."""
    shard_size = options.shard_size or problem.shard_size
    splits = {}
    for split, corpus in corpora.items():
        n = counts[split]
        splits[split] = {
            "inputs": corpus.fingerprint(), "pairs": n, "shard_size": shard_size,
            "shards": max(1, -(-n // shard_size)), "shuffled": split == "train",
        }
    source, target = vocabs
    if problem.shared_vocab:  # The keys of the first version: its data dirs stay valid.
        vocab_plan = {"vocab_sha256": source.sha256, "vocab_size": source.vocab_size}
    else:
        vocab_plan = {"source_vocab_sha256": source.sha256, "source_vocab_size": source.vocab_size,
                      "target_vocab_sha256": target.sha256, "target_vocab_size": target.vocab_size}
    return {"problem": problem.name, **vocab_plan, "seed": options.seed, "splits": splits,
            "languages": [problem.source_lang, problem.target_lang]}


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


def _write_split(problem, data_dir, split, corpus, plan, manifest, vocabs, seed, log,
                 stream) -> SplitSummary:
    info = plan["splits"][split]
    n, size, count = info["pairs"], info["shard_size"], info["shards"]
    summary = SplitSummary(split, pairs=n, shards=count)
    progress = Progress(stream, f"{problem.name} {split}", n)
    start = time.time()
    pairs = iter(corpus.pairs())
    for k in range(count):
        wanted = min(size, n - k * size)
        chunk = list(islice(pairs, wanted))
        if len(chunk) != wanted:
            raise DataError(f"{corpus.description} changed while datagen read it; rerun")
        path = os.path.join(data_dir, shard_name(problem.name, split, k, count))
        if os.path.exists(path):
            stats = manifest.shard_stats(split, k) or read_shard_stats(path)
            summary.shards_skipped += 1
            progress.advance(wanted)
        else:
            shuffle_seed = seed * 100_003 + k if info["shuffled"] else None
            stats = io_.write_shard(path, chunk, vocabs, shuffle_seed, progress)
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
    """The vocabularies, then a table of counts and throughput per split."""
    lines = []
    for v in summary.vocabs:
        side = "vocabulary" if v.side == "shared" else f"{v.side} vocabulary"
        how = f"trained in {v.seconds:.1f} s" if v.trained else "reused"
        lines.append(f"{summary.problem}: {side} {v.path} ({v.size} pieces, {how})")
    lines.append(f"{'split':<6}{'pairs':>11}{'written':>11}{'empty':>8}{'shards':>8}"
                 f"{'reused':>8}{'src tokens':>13}{'tgt tokens':>13}{'seconds':>9}{'sent/s':>9}")
    for s in summary.splits:
        lines.append(f"{s.split:<6}{s.pairs:>11,}{s.written:>11,}{s.skipped_empty:>8,}"
                     f"{s.shards:>8}{s.shards_skipped:>8}{s.source_tokens:>13,}"
                     f"{s.target_tokens:>13,}{s.seconds:>9.1f}{s.sentences_per_second:>9,.0f}")
    lines.append(f"wrote {summary.data_dir} in {summary.seconds:.1f} s")
    return "\n".join(lines)
