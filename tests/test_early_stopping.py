"""Early stopping on the dev metric: the right evaluation, a final checkpoint, exact resume."""

import json

import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.metrics import Metric, Score
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.runs import checkpoints
from t2t_lite.training import trainer
from t2t_lite.training.early_stopping import STATE_FILE, EarlyStopping, read_state
from t2t_lite.training.evaluation import read_best
from t2t_lite.training.options import EvalOptions, TrainOptions


def _score(value, higher_is_better=True, name="m"):
    return Score(name, value, f"{name} {value}", higher_is_better)


def test_counts_evaluations_without_improvement_by_more_than_min_delta(tmp_path):
    stopper = EarlyStopping(str(tmp_path), evals=2, min_delta=0.5)
    # The first sets the reference; +0.3 is not enough; +0.6 is (a new reference).
    assert [stopper.update(_score(v), step) for step, v in
            [(1, 10.0), (2, 10.3), (3, 10.6), (4, 10.6)]] == [False] * 4
    assert stopper.state["evals_without_improvement"] == 1
    assert (stopper.state["reference"], stopper.state["reference_step"]) == (10.6, 3)
    # Restarted: the count is read back; a replayed evaluation is not counted again.
    again = EarlyStopping(str(tmp_path), evals=2, min_delta=0.5)
    assert again.state == read_state(str(tmp_path)) == stopper.state
    assert again.update(_score(10.0), 4) is False
    assert again.update(_score(10.0), 5) is True and again.should_stop()
    assert again.reason() == ("early stopping: dev m has not improved by more than 0.5 for 2 "
                              "evaluations (best 10.60 at step 3)")
    assert EarlyStopping(str(tmp_path), evals=2).should_stop()  # A stopped run stays stopped.
    assert not EarlyStopping(str(tmp_path), evals=3).should_stop()  # Unless N is raised.
    assert not EarlyStopping(str(tmp_path), evals=2, resumed=False).should_stop()
    # Another metric starts afresh.
    assert again.update(_score(1.0, name="other"), 6) is False
    assert again.state["evals_without_improvement"] == 0


def test_a_lower_is_better_metric_improves_downwards(tmp_path):
    stopper = EarlyStopping(str(tmp_path), evals=1)
    assert stopper.update(_score(50.0, False), 1) is False
    assert stopper.update(_score(40.0, False), 2) is False  # Lower TER: better.
    assert stopper.update(_score(45.0, False), 3) is True
    assert stopper.state["reference"] == 40.0


class _Scripted(Metric):
    """The next value of `values` at each evaluation."""

    name = "scripted"
    values = []

    def score(self, hypotheses, references, sources=None):
        value = type(self).values.pop(0)
        return Score(self.name, value, f"scripted: {value}")


@registry.register_problem("test_reverse_early_stopping")
class _Reverse(AlgorithmicReverse):
    def eval_metrics(self):
        return [_Scripted()]


def _train(hparams, output_dir, steps, evals=2):
    lines = []
    eval_options = EvalOptions(eval_every_steps=1, eval_examples=4, eval_decode_examples=0,
                               early_stopping_evals=evals, early_stopping_min_delta=0.5)
    result = trainer.train(
        registry.problem("test_reverse_early_stopping"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, log_every_steps=1000, peak_flops=1e12,
                             save_checkpoints_steps=1000, eval=eval_options),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    return result, [line for line in lines if line.startswith("dev step")], lines


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_training_stops_at_the_right_evaluation_and_resumes_the_count(tiny_hparams, tmp_path):
    # Steps 1-4: reference 10, +0.3 (not > 0.5: 1), 10.6 (a new reference: 0), 10.6 (1).
    _Scripted.values = [10.0, 10.3, 10.6, 10.6]
    result, evals, _ = _train(tiny_hparams, tmp_path, steps=4)
    assert result.step == 4 and len(evals) == 4 and not _Scripted.values
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert (state["evals_without_improvement"], state["step"], state["reference"]) == \
        (1, 4, 10.6)
    # Restarted with more steps, it goes on counting from 1: step 5 (10.0) makes 2, and
    # it stops there (a fresh count would have gone on to step 7).
    _Scripted.values = [10.0, 10.0, 10.0, 10.0]
    result, evals, lines = _train(tiny_hparams, tmp_path, steps=20)
    assert result.step == 5 and len(evals) == 1 and len(_Scripted.values) == 3
    assert ("early stopping: dev scripted has not improved by more than 0.5 for 2 evaluations "
            "(best 10.60 at step 3) at step 5: saving and stopping") in lines
    assert not any(line.startswith("step 6") for line in lines)
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-4", "ckpt-5"]  # The final one.
    assert read_best(str(tmp_path))["step"] == 3
    # Started again as it was, it stops at once (the end-of-run evaluation of step 5, a
    # replay, is not counted again).
    result, evals, lines = _train(tiny_hparams, tmp_path, steps=20)
    assert result.step == 5 and [e.split(":")[0] for e in evals] == ["dev step 5"]
    assert any(line.startswith("early stopping: ") for line in lines)
    assert not any(line.startswith("step ") for line in lines)
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-4", "ckpt-5"]


def test_flags_reach_the_options(monkeypatch, tmp_path):
    seen = []

    def train(problem, hparams, output_dir, data_dir, options, strategy, log):
        seen.append(options.eval)
        return trainer.TrainResult(0, 0.0, 0.0, None)

    monkeypatch.setattr(trainer, "train", train)
    assert trainer_cli.main(["--problem=algorithmic_reverse", f"--output_dir={tmp_path}",
                             "--early_stopping_evals=4", "--early_stopping_min_delta=0.25",
                             "--best_metric=exact_match"]) == 0
    assert (seen[0].early_stopping_evals, seen[0].early_stopping_min_delta,
            seen[0].best_metric) == (4, 0.25, "exact_match")
    assert trainer_cli.main(["--problem=algorithmic_reverse", f"--output_dir={tmp_path}"]) == 0
    assert (seen[1].early_stopping_evals, seen[1].best_metric) == (0, None)
