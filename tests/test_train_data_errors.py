"""Training data that training cannot use ends in one clear error, never a hang.

The trainer drops training examples longer than max_length from an endless
(repeated) stream; when none is short enough that stream never yields, so the
trainer checks the split first (`batching.check_training_examples`).
"""

import os
import subprocess
import sys
import threading

import pytest
import tensorflow as tf

from t2t_lite.data import batching
from t2t_lite.data.text_encoder import DataError
from t2t_lite.errors import UserError

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


def _examples(*lengths):
    """Examples whose length (max of inputs and targets) is each of `lengths`."""
    def gen():
        for n in lengths:
            yield {"inputs": [3] * n, "targets": [4] * max(1, n - 1)}
    spec = {"inputs": tf.TensorSpec([None], tf.int32), "targets": tf.TensorSpec([None], tf.int32)}
    return tf.data.Dataset.from_generator(gen, output_signature=spec)


def test_check_passes_when_one_example_fits():
    batching.check_training_examples(_examples(9, 5, 12), max_length=5)


def test_check_reads_only_until_an_example_fits():
    # An endless split whose first example fits: the check ends (it takes one kept example).
    batching.check_training_examples(_examples(3, 40).repeat(), max_length=8)


def test_check_names_max_length_and_the_lengths_when_none_fits():
    with pytest.raises(DataError) as caught:
        batching.check_training_examples(_examples(23, 17, 410), max_length=16)
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and "\n" not in message
    assert "every training example is longer than max_length=16" in message
    assert "from 17 to 410" in message and "max_length=410" in message


def test_check_refuses_an_empty_split():
    with pytest.raises(DataError, match="no examples"):
        batching.check_training_examples(_examples(), max_length=16)


def _small_reverse():
    from t2t_lite import registry

    problem = registry.problem("algorithmic_reverse")
    problem.split_sizes = dict(problem.split_sizes, train=2000)  # 2 to 13 tokens each.
    return problem


def _in_thread(fn, timeout=120):
    """fn()'s exception (or None); fails the test, instead of hanging, past `timeout` s."""
    outcome = {}

    def target():
        try:
            fn()
        except Exception as e:  # noqa: BLE001 (handed back to the test)
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)  # Before the fix the trainer waited forever for its first batch.
    if thread.is_alive():
        pytest.fail("training hung on a train split with no example within max_length")
    return outcome.get("error")


TOO_LONG = ("every training example is longer than max_length=1 (their lengths, the longer "
            "of inputs and targets in tokens, run from 2 to 13); raise max_length, e.g. "
            "--hparams_overrides=max_length=13 keeps them all, or train on shorter examples")


def test_train_refuses_a_split_with_nothing_within_max_length(tmp_path):
    from t2t_lite import registry
    from t2t_lite.training import trainer
    from t2t_lite.training.options import EvalOptions, TrainOptions

    out = tmp_path / "run"
    hparams = registry.hparams("tiny").override(f"{TINY},max_length=1")
    error = _in_thread(lambda: trainer.train(
        _small_reverse(), hparams, str(out),
        options=TrainOptions(train_steps=2, eval=EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda line: None))
    assert isinstance(error, DataError) and str(error) == TOO_LONG, error
    # Refused before anything was written: no run files, no checkpoint.
    assert not out.exists() or not os.listdir(out)


def test_keras_fit_dataset_refuses_it_too():
    """`problem.dataset("train", repeat=True)`, what `model.fit` reads, would never yield."""
    from t2t_lite import registry

    hparams = registry.hparams("tiny").override(f"{TINY},max_length=1")
    error = _in_thread(lambda: next(iter(_small_reverse().dataset("train", hparams,
                                                                  repeat=True))))
    assert isinstance(error, DataError) and str(error) == TOO_LONG, error


def _run(command, timeout):
    """`command`'s CompletedProcess; fails the test (not hangs) past `timeout` seconds."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    except subprocess.TimeoutExpired:
        pytest.fail("the trainer hung on a train split with no example within max_length")


@pytest.mark.slow  # The CLI reads all of algorithmic_reverse's 200,000 training examples.
def test_cli_ends_in_one_line_when_every_example_is_too_long(tmp_path):
    # algorithmic_reverse's examples are 2 to 13 tokens long (symbols and EOS).
    out = tmp_path / "run"
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
               "--hparams=tiny", f"--hparams_overrides={TINY},max_length=1",
               f"--output_dir={out}", "--train_steps=2", "--eval_every_steps=0"]
    done = _run(command, 300)
    err = done.stderr.strip()
    assert done.returncode == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("t2t_lite-trainer: error: every training example is longer than "
                          "max_length=1 (their lengths"), err
    assert "from 2 to 13" in err, err
    # Refused before anything was written: no run files, no checkpoint.
    assert not out.exists() or not os.listdir(out)
