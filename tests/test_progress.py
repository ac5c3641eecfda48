"""Training progress: ETA in the periodic lines, a live Keras bar on a terminal."""

import tensorflow as tf

from t2t_lite import evaluation, registry, trainer


def test_eta_from_the_last_window(tmp_path):
    progress = trainer._Progress(str(tmp_path), total_steps=100, first_step=10, log=print)
    progress.window_step = 10
    assert progress.eta(20, elapsed=5.0) == "0m40s"  # 80 steps left at 2 steps/s.
    assert progress.eta(20, elapsed=500.0) == "1h06m"  # 80 steps at 50 s each: 4000 s.
    assert progress.eta(10, elapsed=5.0) == "?"


def _train(tiny_hparams, out, bar, lines):
    return trainer.train(
        registry.problem("algorithmic_reverse"), tiny_hparams, str(out),
        options=trainer.TrainOptions(train_steps=6, log_every_steps=3, progress_bar=bar,
                                     eval=evaluation.EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)


def test_plain_lines_or_a_bar(tiny_hparams, tmp_path, capsys):
    lines = []
    _train(tiny_hparams, tmp_path / "a", False, lines)
    steps = [line for line in lines if line.startswith("step ")]
    assert [line.split()[1] for line in steps] == ["3/6", "6/6"]
    assert all(" tok/s  ETA " in line for line in steps)
    capsys.readouterr()

    lines = []
    _train(tiny_hparams, tmp_path / "b", True, lines)
    assert not [line for line in lines if line.startswith("step ")]  # The bar replaces them.
    out = capsys.readouterr().out
    assert "6/6" in out and "loss:" in out and "ktok/s:" in out and "lr:" in out
