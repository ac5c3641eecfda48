"""Algorithmic problems: deterministic, correct targets, disjoint held-out split."""

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.data import batching
from t2t_lite.problems import EOS_ID, ProblemError
from t2t_lite.problems.algorithmic import split_of


def test_reverse_examples():
    problem = registry.problem("algorithmic_reverse")
    assert problem.vocab_size == 12
    for example in problem.examples("test").take(50).as_numpy_iterator():
        inputs, targets = example["inputs"], example["targets"]
        assert inputs[-1] == EOS_ID and targets[-1] == EOS_ID
        np.testing.assert_array_equal(targets[:-1], inputs[:-1][::-1])
        assert 1 <= len(inputs) - 1 <= 12
    copy = registry.problem("algorithmic_copy")
    example = next(copy.examples("dev").as_numpy_iterator())
    np.testing.assert_array_equal(example["inputs"], example["targets"])


def test_held_out_never_in_training():
    problem = registry.problem("algorithmic_reverse")
    train = {tuple(s) for s in problem.sequences("train")}
    test = [tuple(s) for s in problem.sequences("test")]
    dev = [tuple(s) for s in problem.sequences("dev")]
    assert len(test) == 1000 and len(dev) == 1000 and len(train) > 50_000
    assert not train.intersection(test) and not train.intersection(dev)
    assert not set(test).intersection(dev)
    assert all(split_of(s) == "test" for s in test)
    assert len(set(test)) == 1000 and len(set(dev)) == 1000  # Distinct (no replacement).
    lengths = {len(s) for s in test}
    assert min(lengths) >= 1 and max(lengths) == 12 and len(lengths) >= 10


def test_too_few_distinct_held_out_sequences_is_a_clear_error():
    class Tiny(registry.problem("algorithmic_copy").__class__):
        num_symbols, max_length = 2, 2  # 6 sequences in all, about 1 in 20 held out.
        split_sizes = {"train": 10, "dev": 10, "test": 10}

    assert len(Tiny().sequences("train")) == 10  # Training sequences may repeat.
    with pytest.raises(ProblemError, match="fewer than 10 distinct"):
        Tiny().sequences("test")


def test_deterministic():
    a = registry.problem("algorithmic_reverse").sequences("test")
    b = registry.problem("algorithmic_reverse").sequences("test")
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_encode_decode():
    problem = registry.problem("algorithmic_reverse")
    ids = problem.encode("3 1 4 1 5")
    assert problem.decode(ids + [EOS_ID, 7, 0]) == "3 1 4 1 5"
    with pytest.raises(ProblemError, match="not a symbol"):
        problem.encode("3 x")


def test_token_batches():
    problem = registry.problem("algorithmic_reverse")
    batches = batching.batch_by_tokens(problem.examples("train").take(2000), 256, 13)
    seen = 0
    for batch in batches.as_numpy_iterator():
        rows, length = batch["targets"].shape
        assert batch["inputs"].shape == (rows, length)
        assert rows * length <= 256  # About batch_size padded tokens, never more.
        assert length + 1 in batching.bucket_boundaries(13)
        seen += rows
    assert seen == 2000


def test_bucket_boundaries_like_t2t():
    bounds = batching.bucket_boundaries(256)
    assert bounds[:3] == [8, 9, 10] and bounds[-1] == 257
    assert all(b2 > b1 for b1, b2 in zip(bounds, bounds[1:]))
