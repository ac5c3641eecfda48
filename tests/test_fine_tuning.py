"""Fine-tuning (--init_from): the source's weights, a fresh step and optimizer, checked models."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.runs import run_dir, weights
from t2t_lite.training import trainer, warm_start
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite.training.warm_start import InitFrom, WarmStartError

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"
SOURCE_STEP = 7


@registry.register_problem("test_reverse_12_symbols")
class _Reverse12(AlgorithmicReverse):
    num_symbols = 12  # Another vocabulary size than algorithmic_reverse's.


def _one_device():
    return tf.distribute.MirroredStrategy(["/cpu:0"])


def _source_run(path, hparams, seed=99):
    """A run dir holding ckpt-7: weights of seed 99 and non-zero Adam slots (no training)."""
    problem = registry.problem("algorithmic_reverse")
    run_dir.prepare_run(str(path), hparams, problem.name, problem.source_vocab_size,
                        problem.target_vocab_size)
    model, optimizer = trainer.build_state(problem, hparams, _one_device(), seed)
    rng = np.random.default_rng(seed)
    for variable in optimizer.variables:
        if variable is not optimizer.iterations:
            variable.assign(np.abs(rng.normal(size=variable.shape)).astype("float32"))
    optimizer.iterations.assign(SOURCE_STEP)
    checkpoint = tf.train.Checkpoint(model=weights.model_weights(model), optimizer=optimizer)
    tf.train.CheckpointManager(checkpoint, str(path), 3, checkpoint_name="ckpt").save(
        checkpoint_number=SOURCE_STEP)
    return [np.array(w) for w in model.weights], [np.array(v) for v in optimizer.variables]


@pytest.fixture(scope="module")
def hparams():
    return registry.hparams("tiny").override(TINY)


@pytest.fixture(scope="module")
def source_run(tmp_path_factory, hparams):
    """(run dir, its weights, its optimizer variables), shared: copy it before changing it."""
    path = tmp_path_factory.mktemp("source") / "src"
    return (path, *_source_run(path, hparams))


def _fresh_state(hparams, problem="algorithmic_reverse"):
    return trainer.build_state(registry.problem(problem), hparams, _one_device(), seed=1234)


def test_init_from_parses_run_dir_and_checkpoint():
    assert InitFrom.parse("runs/a") == InitFrom("runs/a", None)
    assert InitFrom.parse("runs/a:ckpt-1200") == InitFrom("runs/a", "ckpt-1200")
    assert InitFrom.parse("runs/a:averaged") == InitFrom("runs/a", "averaged")
    assert InitFrom.parse("runs/a:best") == InitFrom("runs/a", "best")
    assert InitFrom.parse("C:/runs/a") == InitFrom("C:/runs/a", None)  # A ":" in the path.


def test_warm_start_copies_weights_and_only_optionally_the_slots(tmp_path, hparams,
                                                                source_run):
    source, source_weights, source_slots = source_run
    problem = registry.problem("algorithmic_copy")  # Another problem, the same vocabulary.

    model, optimizer = _fresh_state(hparams)
    assert not np.allclose(np.array(model.weights[0]), source_weights[0])  # Not already equal.
    record = warm_start.warm_start(model, optimizer, f"{source}:ckpt-7", hparams,
                                   problem, str(tmp_path / "new"))
    for got, want in zip(model.weights, source_weights):
        np.testing.assert_array_equal(np.array(got), want)
    assert int(optimizer.iterations.numpy()) == 0
    assert all(not np.any(np.array(v)) for v in optimizer.variables)  # Fresh: zero slots.
    assert record == {"run_dir": str(source), "step": SOURCE_STEP,
                      "checkpoint": str(source / "ckpt-7"), "optimizer": False,
                      "problem": "algorithmic_reverse"}

    model, optimizer = _fresh_state(hparams)
    record = warm_start.warm_start(model, optimizer, str(source), hparams, problem,
                                   str(tmp_path / "new"), keep_optimizer=True)
    assert record["optimizer"] is True and int(optimizer.iterations.numpy()) == 0
    slots = [np.array(v) for v in optimizer.variables if v is not optimizer.iterations]
    wanted = [v for v in source_slots if v.shape != ()]
    assert len(slots) == len(wanted) > 0
    for got, want in zip(slots, wanted):
        np.testing.assert_array_equal(got, want)


@pytest.mark.guarantee("one-line-errors", "fine-tuning from a run of another model shape "
                       "or other vocabularies is refused with one line naming each field")
def test_mismatches_name_the_field_in_one_line(tmp_path, hparams, source_run):
    source = str(source_run[0])
    wider = hparams.override("d_model=64,num_heads=4")
    # Refused before the weights are read: no model is needed to find out.
    with pytest.raises(WarmStartError) as error:
        warm_start.warm_start(None, None, source, wider, registry.problem(
            "algorithmic_reverse"), str(tmp_path / "new"))
    message = str(error.value)
    assert "\n" not in message and "d_model: 32 -> 64" in message
    assert "num_heads: 2 -> 4" in message and "num_layers" not in message
    with pytest.raises(WarmStartError, match=r"source/target vocabulary sizes: 12/12 -> 14/14"):
        warm_start.check_source(source, hparams, registry.problem("test_reverse_12_symbols"),
                                str(tmp_path / "new"))
    with pytest.raises(WarmStartError, match="names this run's own --output_dir"):
        warm_start.check_source(source, hparams, registry.problem("algorithmic_reverse"),
                                source)
    assert warm_start.check_source(source, hparams, registry.problem("algorithmic_copy"),
                                   str(tmp_path / "new"))[0] == InitFrom(source)


def test_best_holds_no_slots_for_init_from_optimizer(tmp_path, hparams, source_run):
    shutil.copytree(source_run[0], tmp_path / "src")
    model, _ = _fresh_state(hparams)
    weights.write_weights_dir(model, str(tmp_path / "src" / "best"), {"step": 5, "metric": "bleu", "value": 1.0},
                              "best.json")
    model, optimizer = _fresh_state(hparams)
    args = (f"{tmp_path / 'src'}:best", hparams, registry.problem("algorithmic_reverse"),
            str(tmp_path / "new"))
    assert warm_start.warm_start(model, optimizer, *args)["step"] == 5
    with pytest.raises(WarmStartError, match="holds model weights only"):
        warm_start.warm_start(model, optimizer, *args, keep_optimizer=True)


class _Vocab:
    """A problem whose vocabulary files lie in its data dir (as text2text's do)."""

    name = "test_vocab_files"
    source_vocab_size = target_vocab_size = 13

    def __init__(self):
        self.data_dir = None

    def set_data_dir(self, data_dir):
        self.data_dir = data_dir

    def vocab_files(self):
        return (os.path.join(self.data_dir, "vocab.model"),) * 2


registry.register_problem("test_vocab_files")(_Vocab)


def test_vocabularies_of_the_same_size_are_compared_by_content(tmp_path, hparams):
    for name, text in (("old", "pieces A"), ("same", "pieces A"), ("other", "pieces B")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "vocab.model").write_text(text)
    info = {"problem": "test_vocab_files", "data_dir": str(tmp_path / "old"),
            "source_vocab_size": 13, "target_vocab_size": 13}
    problem = _Vocab()
    problem.set_data_dir(str(tmp_path / "same"))
    assert warm_start.compatibility_diff(hparams, info, hparams, problem) == []
    problem.set_data_dir(str(tmp_path / "other"))
    assert warm_start.compatibility_diff(hparams, info, hparams, problem) == [
        f"shared vocabulary: {tmp_path / 'old' / 'vocab.model'} -> "
        f"{tmp_path / 'other' / 'vocab.model'} (another vocabulary)"]


def _train(hparams, output_dir, steps, init_from, lines):
    return trainer.train(
        registry.problem("algorithmic_copy"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, init_from=init_from, log_every_steps=1000,
                             peak_flops=1e12, eval=EvalOptions(eval_every_steps=0)),
        strategy=_one_device(), log=lines.append)


def test_trainer_fine_tunes_records_where_and_resumes_its_own(tmp_path, hparams, source_run):
    source = tmp_path / "src"
    shutil.copytree(source_run[0], source)
    fine, lines = tmp_path / "fine", []
    assert _train(hparams, fine, 1, f"{source}:ckpt-7", lines).step == 1
    assert f"fine-tuning from {source / 'ckpt-7'} (step 7): its weights, a fresh optimizer, " \
        "step counter and schedule from 0" in lines
    # A fresh step counter: the first checkpoint is ckpt-1, not ckpt-8.
    assert tf.train.latest_checkpoint(str(fine)) == str(fine / "ckpt-1")
    record = json.loads((fine / run_dir.INIT_FROM_FILE).read_text())
    assert record["checkpoint"] == str(source / "ckpt-7") and record["step"] == 7
    assert Run.open(str(fine)).info["problem"] == "algorithmic_copy"
    tuned = Run.open(str(fine)).model()
    moved = 0.0
    for got, want in zip(tuned.weights, source_run[1]):  # One step at lr ~2e-5 from them.
        np.testing.assert_allclose(np.array(got), want, atol=1e-4)
        moved = max(moved, float(np.max(np.abs(np.array(got) - want))))
    assert moved > 0.0

    # Started again it resumes ckpt-1; the source is never read again (it is gone).
    shutil.rmtree(source)
    lines.clear()
    assert _train(hparams, fine, 1, f"{source}:ckpt-7", lines).step == 1
    assert f"resumed from {fine / 'ckpt-1'} at step 1" in lines
    assert not any(line.startswith("fine-tuning from") for line in lines)
    resumed = Run.open(str(fine)).model()
    for got, want in zip(resumed.weights, tuned.weights):
        np.testing.assert_array_equal(np.array(got), np.array(want))
    # Another source than the one it started from is refused.
    with pytest.raises(WarmStartError, match="already holds checkpoints of its own run"):
        _train(hparams, fine, 2, str(tmp_path / "other"), lines)


@pytest.mark.guarantee("one-line-errors", "--init_from_optimizer without --init_from is one "
                       "line, exit 2")
def test_flags_reach_the_options(monkeypatch, tmp_path, capsys):
    seen = []

    def train(problem, hparams, output_dir, data_dir, options, strategy, log):
        seen.append(options)
        return trainer.TrainResult(0, 0.0, 0.0, None)

    monkeypatch.setattr(trainer, "train", train)
    assert trainer_cli.main(["--problem=algorithmic_reverse", "--hparams=tiny",
                             f"--output_dir={tmp_path}", "--init_from=runs/a:best",
                             "--init_from_optimizer"]) == 0
    assert (seen[0].init_from, seen[0].init_from_optimizer) == ("runs/a:best", True)
    assert trainer_cli.main(["--problem=algorithmic_reverse", f"--output_dir={tmp_path}"]) == 0
    assert (seen[1].init_from, seen[1].init_from_optimizer) == (None, False)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:  # It needs --init_from: one line, exit 2.
        trainer_cli.main(["--problem=algorithmic_reverse", f"--output_dir={tmp_path}",
                          "--init_from_optimizer"])
    assert exc.value.code == 2 and capsys.readouterr().err.splitlines() == [
        "t2t_lite-trainer: error: --init_from_optimizer needs --init_from=RUN_DIR:ckpt-N "
        "(see t2t_lite-trainer --help)"]


@pytest.mark.guarantee("one-line-errors", "the trainer fine-tuning from a run of another "
                       "model shape prints one line naming the field, exit 2, and writes nothing")
def test_cli_mismatch_is_one_line(tmp_path, source_run, capsys):
    code = trainer_cli.main([
        "--problem=algorithmic_reverse", "--hparams=tiny",
        f"--hparams_overrides={TINY.replace('d_ff=64', 'd_ff=128')}",
        f"--output_dir={tmp_path / 'fine'}", "--eval_every_steps=0",
        f"--init_from={source_run[0]}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [
        f"t2t_lite-trainer: error: cannot fine-tune from {source_run[0]}: d_ff: 64 -> 128 "
        "(its value -> this run's); use the same model-shaping hparams and vocabularies as "
        "the source run"]
    # Refused before anything was built or written.
    assert not os.path.exists(tmp_path / "fine" / run_dir.HPARAMS_FILE)
