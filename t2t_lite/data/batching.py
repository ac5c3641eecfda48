"""tf.data input pipeline: length filtering, length buckets, token-based batches.

Section 5.1 of Vaswani et al. 2017: "Sentence pairs were batched together by
approximate sequence length. Each training batch contained a set of sentence
pairs containing approximately 25000 source tokens and 25000 target tokens."

As in tensor2tensor, an example's length is max(len(inputs), len(targets));
examples longer than `max_length` are dropped when training reads them; each
bucket holds `batch_size // bucket_length` examples padded to the bucket's
length, so every batch holds about `batch_size` (padded) tokens per replica.
Shapes: B batch, L padded length. A training split with no example within
`max_length` would leave that endless stream empty forever, so the trainer
checks it first (`check_training_examples`).
"""

from __future__ import annotations

import tensorflow as tf

from t2t_lite.data.text_encoder import DataError


def bucket_boundaries(max_length: int, min_length: int = 8, step: float = 1.1) -> list[int]:
    """Bucket upper bounds (exclusive): 8, 9, ..., then growing by `step`.

    The last boundary is max_length + 1, so every kept example fits a bucket.
    """
    bounds = []
    x = min_length
    while x <= max_length:
        bounds.append(x)
        x = max(x + 1, int(x * step))
    bounds.append(max_length + 1)
    return sorted(set(bounds))


def example_length(example) -> tf.Tensor:
    """max(len(inputs), len(targets)) of one example."""
    return tf.maximum(tf.shape(example["inputs"])[0], tf.shape(example["targets"])[0])


def batch_by_tokens(dataset: tf.data.Dataset, batch_size: int, max_length: int,
                    num_replicas: int = 1, drop_long: bool = True,
                    min_length_bucket: int = 8, length_bucket_step: float = 1.1
                    ) -> tf.data.Dataset:
    """Groups examples into batches of about `batch_size * num_replicas` tokens.

    Args:
      dataset: unbatched {"inputs": [S], "targets": [T]} examples.
      batch_size: padded tokens per replica.
      max_length: longer examples are dropped (`drop_long`) or truncated.
      num_replicas: the global batch feeds this many replicas.

    Returns:
      Batches {"inputs": int32 [B, L], "targets": int32 [B, L]}, L a bucket length.
    """
    if drop_long:
        dataset = dataset.filter(lambda ex: example_length(ex) <= max_length)
    else:
        dataset = dataset.map(
            lambda ex: {k: v[:max_length] for k, v in ex.items()},
            num_parallel_calls=tf.data.AUTOTUNE,
        )
    bounds = bucket_boundaries(max_length, min_length_bucket, length_bucket_step)
    tokens = batch_size * num_replicas
    # One batch size per bucket (len(bounds) + 1 buckets; the last is never used).
    sizes = [max(1, tokens // (b - 1)) for b in bounds] + [1]
    return dataset.bucket_by_sequence_length(
        element_length_func=example_length,
        bucket_boundaries=bounds,
        bucket_batch_sizes=sizes,
        padded_shapes={"inputs": [None], "targets": [None]},
        pad_to_bucket_boundary=True,
    )


def check_training_examples(dataset: tf.data.Dataset, max_length: int) -> None:
    """Checks that training can read `dataset`: some example is within `max_length`.

    `training_batches` drops every longer example from an endless stream, which
    with no example left would wait forever for its first batch. Cheap when it
    passes: it reads the lengths of the first examples, 1,024 at a time, until
    one fits. Only when none does has it read the whole split (once), whose
    lengths the error then names.

    Args:
      dataset: the unbatched, un-repeated {"inputs": [S], "targets": [T]} train split.
      max_length: hparams.max_length.

    Raises:
      DataError: the split is empty, or every example in it is longer than `max_length`.
    """
    lengths = dataset.map(example_length, num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=False).batch(1024)
    count, shortest, longest = 0, None, None
    for chunk in lengths.as_numpy_iterator():
        low, high = int(chunk.min()), int(chunk.max())
        if low <= max_length:
            return
        count += len(chunk)
        shortest = low if shortest is None else min(shortest, low)
        longest = high if longest is None else max(longest, high)
    if count == 0:
        raise DataError("the train split holds no examples; check --data_dir, or run "
                        "t2t_lite-datagen again to write it")
    raise DataError(
        f"every training example is longer than max_length={max_length} (their lengths, "
        f"the longer of inputs and targets in tokens, run from {shortest} to {longest}); "
        f"raise max_length, e.g. --hparams_overrides=max_length={longest} keeps them all, "
        "or train on shorter examples")


def training_batches(dataset: tf.data.Dataset, hparams, num_replicas: int = 1,
                     seed: int = 1234, shuffle_buffer: int = 10_000) -> tf.data.Dataset:
    """The endless, shuffled, token-batched training stream.

    The order is a pure function of `seed`, and the iterator over it can be
    saved in a checkpoint, so a resumed run continues the same order.
    Check `dataset` first (`check_training_examples`): with no example within
    max_length this stream never yields.
    """
    dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    dataset = batch_by_tokens(
        dataset, hparams.batch_size, hparams.max_length, num_replicas,
        min_length_bucket=hparams.min_length_bucket,
        length_bucket_step=hparams.length_bucket_step)
    return dataset.prefetch(2)
