"""The trainer refuses an output dir that holds another model or problem: one line, exit 2.

Fast: the run in the directory is made without training (its files and a real
checkpoint of the tiny model), so only the refusal runs.
"""

import os

import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.runs import run_dir
from t2t_lite.runs.weights import build_model, model_weights

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


@pytest.fixture
def saved_run(tiny_hparams, tmp_path):
    """OUTPUT_DIR as a tiny algorithmic_reverse run leaves it: run files, ckpt-1."""
    out = str(tmp_path / "run")
    problem = registry.problem("algorithmic_reverse")
    run_dir.prepare_run(out, tiny_hparams, problem.name, problem.source_vocab_size,
                        problem.target_vocab_size)
    model = build_model(tiny_hparams, problem.source_vocab_size, problem.target_vocab_size)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model_weights(model)), out,
                               max_to_keep=1, checkpoint_name="ckpt").save(checkpoint_number=1)
    return out


def _files(out):
    return {name: open(os.path.join(out, name), "rb").read() for name in sorted(os.listdir(out))}


@pytest.mark.parametrize("problem, overrides, message", [
    ("algorithmic_reverse", TINY + ",d_ff=128",
     "{out} holds checkpoints of a different model (d_ff: 64 -> 128); use another "
     "--output_dir or the same hparams"),
    ("algorithmic_copy", TINY,
     "{out} holds a run of problem 'algorithmic_reverse', not 'algorithmic_copy'; use "
     "another --output_dir"),
], ids=["another_model", "another_problem"])
@pytest.mark.guarantee("one-line-errors", "an output directory holding another model or another "
                       "problem: one line, exit 2")
def test_another_model_in_the_output_dir_is_one_line(saved_run, problem, overrides, message,
                                                     capsys):
    before = _files(saved_run)
    code = trainer_cli.main([f"--problem={problem}", "--hparams=tiny",
                             f"--hparams_overrides={overrides}", f"--output_dir={saved_run}",
                             "--train_steps=2"])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines() == ["t2t_lite-trainer: error: " + message.format(out=saved_run)]
    assert "training " not in out
    assert _files(saved_run) == before  # Nothing of the old run was touched.
