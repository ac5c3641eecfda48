"""A truncated or corrupted newest checkpoint.

The trainer warns, moves it to OUTPUT_DIR/unreadable/ and resumes from the one
before (ending with the weights of an unbroken run); the decoder, averager and
exporter each stop with one line naming the checkpoint and exit 2.
"""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite.training.options import EvalOptions, TrainOptions
from t2t_lite import registry
from t2t_lite.runs import checkpoints
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.bin import avg_checkpoints, decoder, exporter
from t2t_lite.runs.checkpoints import CheckpointError

from checkpoint_damage import DAMAGE, truncate

TINY = "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"


def _train(out, steps):
    lines = []
    trainer.train(registry.problem("algorithmic_reverse"),
                  registry.hparams("tiny").override(TINY), str(out),
                  options=TrainOptions(train_steps=steps, save_checkpoints_steps=2,
                                       log_every_steps=1000,
                                       eval=EvalOptions(eval_every_steps=0)),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    return lines


def _weights(out, name=None):
    model = Run.open(str(out)).model(name)
    return [np.array(w) for w in model.weights]


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    _train(out, 8)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.guarantee("damaged-checkpoint", "the trainer command with its newest checkpoint "
                       "truncated, its index corrupted or its data missing: one warning, a "
                       "resume from the one before, and the weights of an unbroken run")
def test_trainer_falls_back_to_the_previous_checkpoint(damage, straight, tmp_path):
    out = tmp_path / "run"
    _train(out, 6)
    DAMAGE[damage](str(out / "ckpt-6"))
    lines = _train(out, 8)
    warnings = [line for line in lines if line.startswith("warning:")]
    assert warnings and f"checkpoint {out / 'ckpt-6'} is unreadable" in warnings[0]
    assert len(warnings[0].splitlines()) == 1
    assert any(f"resumed from {out / 'ckpt-4'} at step 4" in line for line in lines)
    assert os.path.exists(out / "unreadable" / "ckpt-6.index")
    assert checkpoints.list_checkpoints(str(out))[-2:] == ["ckpt-6", "ckpt-8"]
    for a, b in zip(_weights(straight), _weights(out)):  # As if nothing had broken.
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.guarantee("damaged-checkpoint", "the trainer with no readable checkpoint stops with "
                       "one `no readable checkpoint` error")
def test_trainer_with_no_readable_checkpoint_says_so(tmp_path):
    _train(tmp_path, 2)
    truncate(str(tmp_path / "ckpt-2.data-00000-of-00001"))
    with pytest.raises(CheckpointError, match="no readable checkpoint"):
        _train(tmp_path, 4)


@pytest.fixture(scope="module")
def broken(straight, tmp_path_factory):
    """A copy of the straight run whose newest checkpoint (ckpt-8) is truncated."""
    out = tmp_path_factory.mktemp("broken") / "run"
    shutil.copytree(straight, out)
    truncate(str(out / "ckpt-8.data-00000-of-00001"))
    return out


def _one_error_line(capsys, prog):
    err = [x for x in capsys.readouterr().err.strip().splitlines() if x.strip()]
    assert err and err[-1].startswith(f"{prog}: error: ") and "Traceback" not in "\n".join(err)
    return err[-1]


@pytest.mark.slow
@pytest.mark.guarantee("damaged-checkpoint", "the decoder command names the unreadable checkpoint "
                       "in one line, exits 2 and writes nothing")
def test_decoder_names_the_unreadable_checkpoint(broken, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("3 1 4\n")
    code = decoder.main([f"--output_dir={broken}", f"--decode_from_file={source}",
                         f"--decode_to_file={tmp_path / 'out.txt'}"])
    assert code == 2
    line = _one_error_line(capsys, "t2t_lite-decoder")
    assert f"cannot read checkpoint {broken / 'ckpt-8'}" in line
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.slow
@pytest.mark.guarantee("damaged-checkpoint", "the averager command names the unreadable "
                       "checkpoint in one line and exits 2, writing no `averaged/`")
def test_averager_names_the_unreadable_checkpoint(broken, capsys):
    assert avg_checkpoints.main([f"--output_dir={broken}", "--last=3"]) == 2
    line = _one_error_line(capsys, "t2t_lite-avg-checkpoints")
    assert f"cannot read checkpoint {broken / 'ckpt-8'}" in line
    assert not (broken / "averaged").exists()
    assert not [n for n in os.listdir(broken) if n.startswith(".averaged")]


@pytest.mark.slow
@pytest.mark.guarantee("damaged-checkpoint", "the exporter command names the unreadable "
                       "checkpoint in one line and exits 2, leaving no export")
def test_exporter_names_the_unreadable_checkpoint(broken, tmp_path, capsys):
    export_dir = tmp_path / "export"
    assert exporter.main([f"--output_dir={broken}", f"--export_dir={export_dir}"]) == 2
    line = _one_error_line(capsys, "t2t_lite-exporter")
    assert f"cannot read checkpoint {broken / 'ckpt-8'}" in line
    assert not export_dir.exists()
