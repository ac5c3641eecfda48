"""Tier 3: tiny end-to-end runs that must learn (algorithmic tasks)."""

import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import TrainOptions
from t2t_lite import registry
from t2t_lite.runs import averaging
from t2t_lite.runs import weights
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.splits import decode_split
from t2t_lite.training import trainer

DEMO = "dropout_rate=0.0,learning_rate_scale=0.5,min_length_bucket=14"


def _train(problem_name, overrides, steps, output_dir, **options):
    problem = registry.problem(problem_name)
    trainer.train(problem, registry.hparams("tiny").override(overrides), str(output_dir),
                  options=TrainOptions(train_steps=steps, log_every_steps=1000,
                                               **options),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return problem


@pytest.mark.slow  # ~20-30 s; kept out of `make test` for the 15-minute budget.
def test_copy_learns_quickly(tmp_path):
    problem = _train("algorithmic_copy", DEMO + ",num_layers=1,d_model=64,d_ff=128",
                     300, tmp_path)
    model = Run.open(str(tmp_path)).model()
    report = decode_split(problem, model, "test",
                                   DecodeOptions(beam_size=1, batch_size=500))
    assert report.score("exact_match").value >= 90.0


@pytest.mark.slow
def test_demo_reaches_99_percent(tmp_path):
    """`make demo` in-process: >= 99% exact-sequence accuracy on 1,000 held-out sequences."""
    out = str(tmp_path)
    problem = _train("algorithmic_reverse", DEMO, 1400, out, save_checkpoints_steps=50,
                     keep_checkpoint_max=5)
    averaging.average(out, averaging.choose(out, last=5))
    opened = Run.open(out)
    model, hparams = opened.model("averaged"), opened.hparams
    report = decode_split(problem, model, "test",
                                   DecodeOptions.from_hparams(hparams, batch_size=250))
    assert len(report.hypotheses) == 1000
    assert report.score("exact_match").value >= 99.0
