"""`--eval_decode_minutes`: past the bound the dev decode stops, and the dev line says so."""

import dataclasses

import pytest

from t2t_lite import registry
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.runs.weights import build_model
from t2t_lite.training import trainer
from t2t_lite.training.evaluation import DevEvaluator
from t2t_lite.training.options import EvalOptions


def test_a_tiny_bound_cuts_the_dev_decode_short(tiny_hparams, tmp_path):
    problem = registry.problem("algorithmic_reverse")
    model = build_model(tiny_hparams, problem.source_vocab_size, problem.target_vocab_size)
    lines = []
    options = EvalOptions(eval_every_steps=1, eval_examples=24, eval_decode_examples=24,
                          eval_decode_minutes=1e-9, eval_batch_size=8)
    evaluator = DevEvaluator(problem, model, tiny_hparams, str(tmp_path), options,
                             save_weights=lambda directory, record: None, log=lines.append)
    cut = evaluator.evaluate(1)
    assert cut.decoded == 8  # The first batch of 8, then the bound stops it.
    assert "(8 greedy decodes, time bound reached, " in lines[-1]

    evaluator.options = dataclasses.replace(options, eval_decode_minutes=10.0)
    whole = evaluator.evaluate(2)
    assert whole.decoded == 24 and "(24 greedy decodes, " in lines[-1]
    assert "time bound reached" not in lines[-1]


def test_the_flag_reaches_the_evaluation(monkeypatch, tmp_path):
    seen = []

    def train(problem, hparams, output_dir, data_dir, options, strategy, log):
        seen.append(options.eval)
        return trainer.TrainResult(0, 0.0, 0.0, None)

    monkeypatch.setattr(trainer, "train", train)
    assert trainer_cli.main(["--problem=algorithmic_reverse", "--hparams=tiny",
                             f"--output_dir={tmp_path}", "--eval_decode_minutes=0.25"]) == 0
    assert seen[0].eval_decode_minutes == pytest.approx(0.25)
