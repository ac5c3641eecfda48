"""The same Transformer on Keras's JAX backend (issue 27), proved from the TensorFlow run.

This process (TensorFlow backend) builds a tiny Transformer, saves its weights
as `.weights.h5` and writes what TensorFlow computes with them (teacher-forced
logits, greedy and beam-4 search) to a reference file; then it starts
`pytest tests/jax_backend/jax_checks.py` in a process with KERAS_BACKEND=jax, which loads the
same weights and must compute the same, learns `algorithmic_reverse` with
`model.fit` and the paper's callbacks, and saves its trained weights, which
this process loads back under TensorFlow and checks against the logits JAX wrote.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.decoding import search

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = 20
HPARAMS = "tiny"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="jax is not installed (pip install -e '.[test]' installs it): the JAX backend "
           "tests need it")]


def _inputs():
    rng = np.random.default_rng(3)
    inputs = np.zeros((4, 8), np.int32)
    targets = np.zeros((4, 9), np.int32)
    for row, length in enumerate((7, 5, 3, 1)):
        words = rng.integers(2, VOCAB, size=length)
        inputs[row, :length + 1] = [*words, 1]
        targets[row, :length + 1] = [*words[::-1], 1]
    return inputs, targets


def _write_reference(directory):
    keras.utils.set_random_seed(7)
    hparams = registry.hparams(HPARAMS)
    model = registry.model(hparams.model).from_hparams(hparams, VOCAB)
    model.save_weights(os.path.join(directory, "tensorflow.weights.h5"))
    inputs, targets = _inputs()
    logits = model({"inputs": inputs, "targets": targets}, training=False)
    greedy, greedy_scores = search.search(model, inputs, 1, 0.6, 24)
    beam, beam_scores = search.search(model, inputs, 4, 0.6, 24)
    np.savez(os.path.join(directory, "reference.npz"), hparams=HPARAMS, vocab=VOCAB,
             inputs=inputs, targets=targets, logits=np.asarray(logits),
             greedy=np.asarray(greedy), greedy_scores=np.asarray(greedy_scores),
             beam=np.asarray(beam), beam_scores=np.asarray(beam_scores))


def test_jax_backend_computes_what_tensorflow_does_and_learns(tmp_path):
    _write_reference(str(tmp_path))
    env = {**os.environ, "KERAS_BACKEND": "jax", "T2T_JAX_REFERENCE": str(tmp_path),
           "JAX_PLATFORMS": "cpu", "PYTHONPATH": ROOT}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "-p", "no:xdist",
         "--confcutdir", os.path.join(ROOT, "tests", "jax_backend"),
         os.path.join(ROOT, "tests", "jax_backend", "jax_checks.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    print(done.stdout[-6000:], done.stderr[-3000:])
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 passed" in done.stdout and "skipped" not in done.stdout
    # Weights trained under JAX load under TensorFlow and give JAX's logits.
    trained = np.load(os.path.join(tmp_path, "jax_trained.npz"))
    hparams = registry.hparams(HPARAMS)
    model = registry.model(hparams.model).from_hparams(hparams, int(trained["vocab"]))
    model.load_weights(os.path.join(tmp_path, "jax_trained.weights.h5"))
    logits = model({"inputs": trained["inputs"], "targets": trained["targets"]}, training=False)
    np.testing.assert_allclose(np.asarray(logits), trained["logits"], rtol=1e-5, atol=1e-5)


def test_jax_speed_script_runs_end_to_end_on_cpu(tmp_path):
    """benchmarks/gpu_check.sh's measurement, tiny shapes on JAX's CPU: every row, sane fields.

    Run as on the accelerator machine, out of a checkout that is not installed: the
    editable install's finder is taken away, so `t2t_lite.hparams` must come from
    the script's own mapping of `hparams/` (setup.py's package_dir)."""
    out = tmp_path / "rows.jsonl"
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    uninstalled = ("import runpy, sys; "
                   "sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
                   "sys.argv = sys.argv[1:]; "
                   "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")
    done = subprocess.run(
        [sys.executable, "-c", uninstalled, "benchmarks.jax_speed",
         "--quick", "--sizes=tiny", f"--out={out}"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["hparams"], r["measure"]) for r in rows] == [("tiny", "train_step"),
                                                            ("tiny", "beam4_decode")]
    train, decode = rows
    assert train["platform"] == "cpu" and train["compute_dtype"] == "bfloat16"
    assert train["peak_tflops"] > 0 and 0 < train["mfu"] < 1 and np.isfinite(train["loss"])
    assert train["tgt_tokens_per_s"] > 0 and train["batch"] * train["length"] == 64
    # EOS held back: every hypothesis runs to source length + 50.
    assert decode["max_decode_length"] == 66
    assert decode["generated_tokens"] == decode["batch"] * 66 and decode["tokens_per_s"] > 0
