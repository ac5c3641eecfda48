"""Encoded TFRecord shards: their names, writing, statistics and parsing, in one place.

A problem's split is stored as `PROBLEM-SPLIT-0000k-of-0000n` files in its
data_dir, each a TFRecord file of `tf.train.Example`s with int64 list features
"inputs" and "targets", EOS appended (tensor2tensor's format).
`t2t_lite-datagen` writes them (`write_records`, atomically); problems read
them back (`shard_files`, `read`) without knowing how they were made.
"""

from __future__ import annotations

import glob
import os

import tensorflow as tf

from t2t_lite.atomic import atomic_path

SPLITS = ("train", "dev", "test")
STATS = ("written", "skipped_empty", "source_tokens", "target_tokens")
FEATURES = {"inputs": tf.io.RaggedFeature(tf.int64), "targets": tf.io.RaggedFeature(tf.int64)}
PARSE_BATCH = 256  # Parsing in batches is about 3x faster than one example at a time.


def shard_name(problem_name: str, split: str, index: int, count: int) -> str:
    """The file name of shard `index` (0-based) of `count` of `split`."""
    return f"{problem_name}-{split}-{index:05d}-of-{count:05d}"


def shard_files(data_dir: str, problem_name: str, split: str) -> tuple[list[str], int]:
    """(sorted shard paths of `split` in data_dir, the count their names announce or 0)."""
    pattern = f"{glob.escape(problem_name)}-{split}-[0-9]*-of-[0-9]*"
    paths = sorted(glob.glob(os.path.join(glob.escape(data_dir), pattern)))
    counts = {int(p.rsplit("-of-", 1)[1]) for p in paths if p[-5:].isdigit()}
    return paths, (counts.pop() if len(counts) == 1 else 0)


def example_bytes(inputs: list[int], targets: list[int]) -> bytes:
    """One serialized `tf.train.Example` {"inputs", "targets"} (ids, EOS included).

    Serialized deterministically (map keys sorted), so the same pairs give the
    same bytes in every process.
    """
    feature = {
        "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
        "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=targets)),
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString(deterministic=True)


def write_records(path: str, records) -> None:
    """Writes serialized examples as the TFRecord file `path`, atomically."""
    with atomic_path(path) as tmp:
        with tf.io.TFRecordWriter(tmp) as writer:
            for record in records:
                writer.write(record)


def read_shard_stats(path: str) -> dict:
    """`STATS` of a finished shard (examples and tokens; it holds no empty pairs)."""
    stats = dict.fromkeys(STATS, 0)
    for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(record)
        stats["written"] += 1
        stats["source_tokens"] += len(example.features.feature["inputs"].int64_list.value)
        stats["target_tokens"] += len(example.features.feature["targets"].int64_list.value)
    return stats


def parse_batch(records):
    """Serialized examples [B] -> {"inputs", "targets"}: int64 ragged [B, (L)]."""
    return tf.io.parse_example(records, FEATURES)


def to_int32(example):
    """One unbatched example -> dense int32 [L] tensors."""
    return {k: tf.cast(v, tf.int32) for k, v in example.items()}


def read(paths: list[str], training: bool, cycle_length: int = 16) -> tf.data.Dataset:
    """Unbatched int32 {"inputs": [S], "targets": [T]} examples of the shard files.

    Args:
      paths: shard files, in order.
      training: read the files in a seeded random order (reshuffled each
        epoch), `cycle_length` at a time; otherwise one after the other.
    """
    files = tf.data.Dataset.from_tensor_slices(paths)
    if training:
        files = files.shuffle(len(paths), seed=len(paths), reshuffle_each_iteration=True)
        records = files.interleave(
            tf.data.TFRecordDataset, cycle_length=min(cycle_length, len(paths)),
            block_length=1, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    else:
        records = files.flat_map(tf.data.TFRecordDataset)
    records = records.batch(PARSE_BATCH).map(
        parse_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return records.unbatch().map(to_int32)
