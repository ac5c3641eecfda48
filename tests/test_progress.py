"""Training progress: ETA in the periodic lines, a live Keras bar on a terminal."""

import pytest
import tensorflow as tf

from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.progress import TrainProgress
from t2t_lite.training import trainer


def test_eta_from_the_last_window(tmp_path):
    progress = TrainProgress(str(tmp_path), total_steps=100, first_step=10, log=print)
    progress.window_step = 10
    assert progress.eta(20, elapsed=5.0) == "0m40s"  # 80 steps left at 2 steps/s.
    assert progress.eta(20, elapsed=500.0) == "1h06m"  # 80 steps at 50 s each: 4000 s.
    assert progress.eta(10, elapsed=5.0) == "?"


def _train(tiny_hparams, out, bar, lines):
    return trainer.train(
        registry.problem("algorithmic_reverse"), tiny_hparams, str(out),
        options=TrainOptions(train_steps=6, log_every_steps=3, progress_bar=bar,
                                     eval=EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)


@pytest.mark.slow  # Out of the fast tier for its time; CI runs every tier.
def test_plain_lines_or_a_bar(tiny_hparams, tmp_path, capsys):
    lines = []
    _train(tiny_hparams, tmp_path / "a", False, lines)
    steps = [line for line in lines if line.startswith("step ")]
    assert [line.split()[1] for line in steps] == ["3/6", "6/6"]
    assert all(" tok/s  MFU " in line and "%  ETA " in line for line in steps)
    capsys.readouterr()

    lines = []
    _train(tiny_hparams, tmp_path / "b", True, lines)
    assert not [line for line in lines if line.startswith("step ")]  # The bar replaces them.
    out = capsys.readouterr().out
    assert "6/6" in out and "loss:" in out and "ktok/s:" in out and "lr:" in out


class _Stream:
    def __init__(self, tty):
        self.text, self.tty = "", tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return self.tty


def test_long_loops_report_rate_and_eta(monkeypatch):
    from t2t_lite import progress as progress_module

    clock = [100.0]
    monkeypatch.setattr(progress_module.time, "time", lambda: clock[0])
    stream = _Stream(tty=False)
    progress = progress_module.Progress(stream, "decoding", 100, unit="sentences", quiet_for=3)
    clock[0] += 1
    progress.advance(10)
    assert stream.text == ""  # Quick work shows nothing.
    clock[0] += 4  # 5 s in, 40 done: 8 sentences/s, 60 left.
    progress.advance(30)
    assert stream.text == "decoding: 40/100 sentences (40%), 8 sentences/s, ETA 8 s\n"
    clock[0] += 5
    progress.advance(10)  # Off a terminal, at most a line every 10 s.
    assert stream.text.count("\n") == 1
    clock[0] += 10
    progress.advance(50)
    progress.close()
    assert stream.text.splitlines()[-1] == "decoding: 100/100 sentences (100%), 5 sentences/s, 20.0 s"

    tty = _Stream(tty=True)
    quick = progress_module.Progress(tty, "decoding", 10, quiet_for=3)
    quick.advance(10)
    quick.close()
    assert tty.text == ""  # Nothing at all for work under quiet_for.


def test_decoder_shows_progress_on_long_decodes(monkeypatch, tmp_path, capsys):
    """The decoder passes a Progress to the search loop, one advance per batch."""
    from t2t_lite.decoding.decoder import Decoder
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import decode_lines

    calls = []

    class Recorder:
        def __init__(self, total):
            calls.append(("total", total))

        def advance(self, n):
            calls.append(("advance", n))

        def close(self):
            calls.append(("close",))

    class FakeDecoder(Decoder):
        def _function(self, bound, length):
            return lambda batch: (tf.zeros([batch.shape[0], 1, 3], tf.int32),
                                  tf.zeros([batch.shape[0], 1]))

    monkeypatch.setattr("t2t_lite.decoding.decoder.Decoder", FakeDecoder)
    problem = registry.problem("algorithmic_reverse")
    results = decode_lines(problem, None, ["1 2", "", "3 4 5", "6"],
                                    DecodeOptions(batch_size=2), 64,
                                    progress=Recorder)
    assert len(results) == 4
    assert calls == [("total", 3), ("advance", 2), ("advance", 1), ("close",)]
