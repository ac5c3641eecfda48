"""Dev evaluation while training: the problem's metric, TensorBoard, the best checkpoint."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.metrics import Metric, Score
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.problems.base import ProblemError


class ScriptedMetric(Metric):
    """Returns the next of a fixed list of values, and records what it was given."""

    name = "scripted"

    def __init__(self, values):
        self.values = list(values)
        self.calls = []

    def score(self, hypotheses, references, sources=None):
        self.calls.append((list(hypotheses), list(references), list(sources)))
        value = self.values[min(len(self.calls) - 1, len(self.values) - 1)]
        return Score(self.name, value, f"scripted metric: {value}")


SCRIPT = ScriptedMetric([]) # Replaced per test.


@registry.register_problem("test_reverse_scripted_metric")
class ReverseWithScriptedMetric(AlgorithmicReverse):
    def eval_metrics(self):
        return [SCRIPT]


@registry.register_problem("test_reverse_no_dev")
class ReverseWithoutDev(AlgorithmicReverse):
    def examples(self, split, data_dir=None):
        if split == "dev":
            raise ProblemError("test_reverse_no_dev has no dev split")
        return super().examples(split, data_dir)


def _train(problem, hparams, output_dir, steps, eval_every, **options):
    lines = []
    eval_options = EvalOptions(
        eval_every_steps=eval_every, eval_examples=32, eval_decode_examples=8,
        eval_batch_size=8)
    result = trainer.train(
        registry.problem(problem), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, log_every_steps=1000,
                                     eval=eval_options, **options),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    return result, lines


def _event_tags(directory):
    tags = {}
    for name in os.listdir(directory):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            for value in event.summary.value:
                tags.setdefault(value.tag, []).append(event.step)
    return tags


@pytest.mark.slow  # ~20 s: training with dev evaluations; out of `make test`.
def test_problem_metric_reaches_dev_evaluation_and_best_is_kept(tiny_hparams, tmp_path):
    global SCRIPT
    SCRIPT = ScriptedMetric([10.0, 30.0, 20.0])
    result, lines = _train("test_reverse_scripted_metric", tiny_hparams, tmp_path, 15,
                           eval_every=5, save_checkpoints_steps=5, keep_checkpoint_max=5)

    # The problem's own metric was computed at steps 5, 10 and 15 (the end) on
    # real decodes of the first dev examples: references are dev targets as text.
    assert len(SCRIPT.calls) == 3
    problem = registry.problem("algorithmic_reverse")
    dev = list(problem.examples("dev").take(8).as_numpy_iterator())
    hypotheses, references, sources = SCRIPT.calls[-1]
    assert references == [problem.decode(ex["targets"]) for ex in dev]
    assert sources == [problem.decode(ex["inputs"]) for ex in dev]
    assert len(hypotheses) == 8 and all(isinstance(h, str) for h in hypotheses)
    dev_lines = [line for line in lines if line.startswith("dev step")]
    assert [line.split(":")[0] for line in dev_lines] == ["dev step 5", "dev step 10",
                                                          "dev step 15"]
    assert all("scripted" in line and "loss" in line for line in dev_lines)
    assert "new best" in dev_lines[0] and "new best" in dev_lines[1]
    assert "new best" not in dev_lines[2]
    assert result.dev.step == 15 and not result.dev.is_best

    # TensorBoard: dev loss, NLL and the metric at every evaluation.
    tags = _event_tags(tmp_path / "dev")
    assert tags["scripted"] == [5, 10, 15] and tags["loss"] == [5, 10, 15] and "nll" in tags

    # best/ holds the step-10 weights (the highest metric), and says so.
    record = json.load(open(tmp_path / "best" / "best.json"))
    assert record["step"] == 10 and record["metric"] == "scripted" and record["value"] == 30.0
    best = Run.open(str(tmp_path)).model("best")
    at_10 = Run.open(str(tmp_path)).model("ckpt-10")
    at_15 = Run.open(str(tmp_path)).model("ckpt-15")
    for a, b in zip(best.weights, at_10.weights):
        np.testing.assert_array_equal(np.array(a), np.array(b))
    assert any(not np.array_equal(np.array(a), np.array(b))
               for a, b in zip(best.weights, at_15.weights))
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".best-")]  # No staging left.

    # A resumed run keeps best/ unless it does better.
    SCRIPT = ScriptedMetric([25.0, 40.0])
    _, lines = _train("test_reverse_scripted_metric", tiny_hparams, tmp_path, 25,
                      eval_every=5, save_checkpoints_steps=5, keep_checkpoint_max=5)
    record = json.load(open(tmp_path / "best" / "best.json"))
    assert record["step"] == 25 and record["value"] == 40.0
    assert "new best" not in [line for line in lines if line.startswith("dev step 20")][0]

    # A best/ kept under another metric is not comparable: the next evaluation replaces it.
    record["metric"], record["value"] = "another_metric", 1000.0
    with open(tmp_path / "best" / "best.json", "w") as f:
        json.dump(record, f)
    SCRIPT = ScriptedMetric([1.0])
    _, lines = _train("test_reverse_scripted_metric", tiny_hparams, tmp_path, 30,
                      eval_every=5, save_checkpoints_steps=5, keep_checkpoint_max=5)
    record = json.load(open(tmp_path / "best" / "best.json"))
    assert (record["step"], record["metric"], record["value"]) == (30, "scripted", 1.0)


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_dev_loss_matches_the_loss_of_the_model(tiny_hparams, tmp_path):
    """The dev loss is the per-token smoothed loss of the model on those examples."""
    from t2t_lite.models.losses import smoothed_cross_entropy_sums

    global SCRIPT
    SCRIPT = ScriptedMetric([1.0])
    result, _ = _train("test_reverse_scripted_metric", tiny_hparams, tmp_path, 4, eval_every=4)
    opened = Run.open(str(tmp_path))
    model, hparams = opened.model(), opened.hparams
    problem = registry.problem("algorithmic_reverse")
    totals = np.zeros(3)
    for ex in problem.examples("dev").take(32).as_numpy_iterator():  # eval_examples
        batch = {k: tf.constant(v[None, :]) for k, v in ex.items()}
        totals += [float(v) for v in smoothed_cross_entropy_sums(
            model(batch, training=False), batch["targets"], hparams.label_smoothing)]
    assert result.dev.loss == pytest.approx(totals[0] / totals[2], rel=1e-4)
    assert result.dev.nll == pytest.approx(totals[1] / totals[2], rel=1e-4)


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_no_dev_split_or_eval_off_trains_without_evaluation(tiny_hparams, tmp_path):
    result, lines = _train("test_reverse_no_dev", tiny_hparams, tmp_path / "a", 3, eval_every=1)
    assert result.step == 3 and result.dev is None
    assert any(line.startswith("no dev evaluation: test_reverse_no_dev has no dev split")
               for line in lines)
    result, lines = _train("algorithmic_reverse", tiny_hparams, tmp_path / "b", 3, eval_every=0)
    assert result.dev is None and not os.path.exists(tmp_path / "b" / "dev")
    assert not os.path.exists(tmp_path / "b" / "best")


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_exact_match_is_the_algorithmic_dev_metric(tiny_hparams, tmp_path):
    result, lines = _train("algorithmic_reverse", tiny_hparams, tmp_path, 2, eval_every=2)
    assert [s.name for s in result.dev.scores] == ["exact_match"]
    assert "exact_match" in json.load(open(tmp_path / "best" / "best.json"))["scores"]
