"""Files of t2t_lite-datagen: encoded shards and vocabularies.

Every file goes to a temporary name in the same directory, is flushed to disk,
then renamed over its final name (`t2t_lite.atomic`), so a killed run leaves
finished files and temporaries (removed by the next run), never a half-written
shard. Shard names and the record format are `t2t_lite.data.shards`'; the
manifest is `t2t_lite.data.manifest`.
"""

from __future__ import annotations

import glob
import random

from t2t_lite import atomic
from t2t_lite.data import shards
from t2t_lite.ids import EOS_ID
from t2t_lite.data.text_encoder import MODEL_SUFFIX, SubwordVocab, normalize

ENCODE_BATCH = 1024  # Pairs per call of the in-graph tokenizer.


def remove_temporaries(data_dir: str, problem_name: str) -> None:
    """Deletes what a killed run of this problem's datagen left half-written."""
    name = glob.escape(problem_name)
    for final in (f"{name}-*", f"vocab.{name}.*", f"{name}.datagen.json"):
        atomic.remove_temporaries(data_dir, final)


def save_vocab(vocab: SubwordVocab, path: str) -> None:
    """Writes the `.model` file and its readable `.vocab` listing, each atomically.

    The listing comes first: the `.model` file's presence means "done".
    """
    listing = (path[:-len(MODEL_SUFFIX)] if path.endswith(MODEL_SUFFIX) else path) + ".vocab"
    atomic.write_bytes(listing, vocab.pieces_text().encode())
    atomic.write_bytes(path, vocab.model_proto)


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
