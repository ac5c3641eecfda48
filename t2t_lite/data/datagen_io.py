"""Files of t2t_lite-datagen: encoded shards, vocabularies, the manifest, progress.

Every file goes to a temporary name in the same directory, is flushed to disk,
then renamed over its final name (`t2t_lite.atomic`), so a killed run leaves
finished files and temporaries (removed by the next run), never a half-written
shard. Shard names and the record format are `t2t_lite.data.shards`'.
"""

from __future__ import annotations

import glob
import json
import os
import random
import time

from t2t_lite.data import shards
from t2t_lite.atomic import temporaries
from t2t_lite.ids import EOS_ID
from t2t_lite.runs.run_dir import atomic_write_bytes
from t2t_lite.data.text_encoder import MODEL_SUFFIX, DataError, SubwordVocab, normalize

ENCODE_BATCH = 1024  # Pairs per call of the in-graph tokenizer.


def remove_temporaries(data_dir: str, problem_name: str) -> None:
    """Deletes what a killed run of this problem's datagen left half-written."""
    name = glob.escape(problem_name)
    stale = [path for final in (f"{name}-*", f"vocab.{name}.*", f"{name}.datagen.json")
             for path in temporaries(data_dir, final)]
    # Temporaries of run_dir.atomic_write_bytes (mkstemp's ".tmp-XXXX" + the name).
    for pattern in (f".tmp-*vocab.{name}.*", f".tmp-*{name}.datagen.json"):
        stale += glob.glob(os.path.join(glob.escape(data_dir), pattern))
    for path in stale:
        os.remove(path)


def save_vocab(vocab: SubwordVocab, path: str) -> None:
    """Writes the `.model` file and its readable `.vocab` listing, each atomically.

    The listing comes first: the `.model` file's presence means "done".
    """
    listing = (path[:-len(MODEL_SUFFIX)] if path.endswith(MODEL_SUFFIX) else path) + ".vocab"
    atomic_write_bytes(listing, vocab.pieces_text().encode())
    atomic_write_bytes(path, vocab.model_proto)


def encode_pairs(pairs, source_vocab: SubwordVocab, target_vocab: SubwordVocab,
                 progress=None) -> tuple[list[bytes], dict]:
    """Raw text pairs -> (serialized examples with EOS appended, `shards.STATS`).

    Both sides are normalized, then the source encoded with `source_vocab` and
    the target with `target_vocab` (the same one when the problem shares it);
    a pair with an empty side is skipped and counted.
    """
    kept = []
    for source, target in pairs:
        source, target = normalize(source), normalize(target)
        if source and target:
            kept.append((source, target))
    stats = dict.fromkeys(shards.STATS, 0)
    stats["skipped_empty"] = len(pairs) - len(kept)
    records = []
    for start in range(0, len(kept), ENCODE_BATCH):
        part = kept[start:start + ENCODE_BATCH]
        source_ids = source_vocab.encode_batch([s for s, _ in part])
        target_ids = target_vocab.encode_batch([t for _, t in part])
        for inputs, targets in zip(source_ids, target_ids):
            inputs, targets = inputs + [EOS_ID], targets + [EOS_ID]
            stats["source_tokens"] += len(inputs)
            stats["target_tokens"] += len(targets)
            records.append(shards.example_bytes(inputs, targets))
        if progress is not None:
            progress.advance(len(part))
    stats["written"] = len(records)
    if progress is not None:
        progress.advance(stats["skipped_empty"])
    return records, stats


def write_shard(path: str, pairs, vocabs: tuple[SubwordVocab, SubwordVocab],
                shuffle_seed: int | None, progress=None) -> dict:
    """Encodes `pairs` with (source, target) `vocabs` into the shard `path`; its stats.

    The file is written atomically; with `shuffle_seed` its examples are shuffled.
    """
    records, stats = encode_pairs(pairs, *vocabs, progress=progress)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(records)
    shards.write_records(path, records)
    return stats


def _differences(old, new, prefix="") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [prefix.rstrip(".")]


class Manifest:
    """`PROBLEM.datagen.json`: the plan (inputs, vocabulary, layout) and finished shards."""

    def __init__(self, path: str, data: dict):
        self.path = path
        self.data = data

    @classmethod
    def open(cls, path: str, plan: dict, existing_shards) -> Manifest:
        """Starts (or resumes) a run with `plan`.

        Args:
          existing_shards: split -> shard paths already in data_dir.

        Raises:
          DataError: data_dir holds shards made with another plan.
        """
        plan = json.loads(json.dumps(plan))
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = json.load(f)
        present = [p for split in shards.SPLITS for p in existing_shards(split)]
        name, data_dir = plan["problem"], os.path.dirname(path) or "."
        if present and old is None:
            raise DataError(
                f"{data_dir} holds {name} shards but no {os.path.basename(path)} saying how "
                "they were made; use another --data_dir or delete them")
        if present and old.get("plan") != plan:
            diff = ", ".join(_differences(old.get("plan"), plan)) or "plan"
            raise DataError(
                f"{data_dir} holds {name} shards made differently (changed: {diff}); use "
                f"another --data_dir, or delete {os.path.join(data_dir, name)}-* to rebuild")
        done = old.get("shards", {}) if present else {}
        manifest = cls(path, {"plan": plan, "complete": False, "shards": done})
        manifest._save()
        return manifest

    def shard_stats(self, split: str, index: int) -> dict | None:
        return self.data["shards"].get(split, {}).get(str(index))

    def record(self, split: str, index: int, stats: dict) -> None:
        if self.shard_stats(split, index) != stats:
            self.data["shards"].setdefault(split, {})[str(index)] = stats
            self._save()

    def finish(self) -> None:
        self.data["complete"] = True
        self._save()

    def _save(self) -> None:
        atomic_write_bytes(self.path, (json.dumps(self.data, indent=1) + "\n").encode())

