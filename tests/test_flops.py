"""Training FLOPs (the analytic count), MFU in the trainer's log and TensorBoard, the ledger."""

import glob

import pytest
import tensorflow as tf

from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.training import trainer
from t2t_lite.runs.weights import build_model
from t2t_lite.training.flops import FlopCounter, FlopLedger, compute_dtype, format_flops, matmul_peak


def test_counter_is_the_hand_count(tiny_hparams):
    h = tiny_hparams  # No attention biases; FFN biases; 2 or 3 LayerNorms a layer.
    model = build_model(h, 70)
    d, f, n, v = h.d_model, h.d_ff, h.num_layers, 70
    ffn = 2 * d * f + f + d
    counter = FlopCounter.for_model(model)
    assert counter.encoder_weights == n * (4 * d * d + ffn + 2 * 2 * d)
    assert counter.decoder_weights == n * (8 * d * d + ffn + 3 * 2 * d) + v * d
    assert (counter.d_model, counter.num_layers) == (d, n)
    b, s, t = 3, 5, 7
    dense = 6 * b * (counter.encoder_weights * s + counter.decoder_weights * t)
    attention = 12 * b * d * n * (s * s + t * t + t * s)
    assert counter.train_flops(b, s, t) == dense + attention


def test_other_models_count_all_weights_per_target_token():
    class Plain:
        def count_params(self):
            return 1000
    counter = FlopCounter.for_model(Plain())
    assert counter.train_flops(2, 9, 4) == 6 * 1000 * 2 * 4


def test_peak_and_formatting():
    assert matmul_peak() > 1e9  # Any machine that trains does a GFLOP/s.
    assert compute_dtype("mixed_bfloat16") == "bfloat16" and compute_dtype("float32") == "float32"
    assert format_flops(1.234e15) == "1.23 PFLOP" and format_flops(5e9) == "5 GFLOP"


def test_ledger_resumes_from_the_restored_step(tmp_path):
    ledger = FlopLedger(str(tmp_path), 0)
    for step, total in ((10, 1.0), (20, 2.5), (30, 4.0)):
        ledger.total = total
        ledger.record(step)
    assert FlopLedger(str(tmp_path), 30).total == 4.0
    assert FlopLedger(str(tmp_path), 25).total == 2.5  # The newest at or below it.
    older = FlopLedger(str(tmp_path), 20)
    older.total += 1.0
    older.record(21)  # Resumed from 20: the later steps are another history now.
    assert FlopLedger(str(tmp_path), 100).at_step == {10: 1.0, 20: 2.5, 21: 3.5}
    (tmp_path / FlopLedger.FILE).write_text("not json")
    assert FlopLedger(str(tmp_path), 30).total == 0.0


def _train(hparams, output_dir, steps, lines, peak=None):
    return trainer.train(
        registry.problem("algorithmic_reverse"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, log_every_steps=3,
                                     save_checkpoints_steps=3, peak_flops=peak,
                                     eval=EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)


def test_trainer_reports_mfu_and_total_flops(tiny_hparams, tmp_path):
    lines = []
    straight = _train(tiny_hparams, tmp_path / "a", 6, lines, peak=1e9)
    steps = [line for line in lines if line.startswith("step ")]
    mfus = [float(line.split("MFU ")[1].split("%")[0]) for line in steps]
    assert len(mfus) == 2 and all(m > 0 for m in mfus)
    assert straight.mfu == pytest.approx(mfus[-1] / 100, abs=0.01)
    assert any(line.startswith("training FLOPs: ") for line in lines)
    tags = set()
    for path in glob.glob(str(tmp_path / "a" / "train" / "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    assert {"mfu", "model_flops_per_second", "tokens_per_second"} <= tags

    # Stopped at 3 and resumed: the same batches, hence the same total.
    _train(tiny_hparams, tmp_path / "b", 3, [])
    resumed = _train(tiny_hparams, tmp_path / "b", 6, [])
    assert straight.train_flops > 0
    assert resumed.train_flops == pytest.approx(straight.train_flops, rel=1e-12)
