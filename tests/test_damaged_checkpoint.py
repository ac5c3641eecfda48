"""A damaged newest checkpoint, in the fast tier: the trainer's fallback and the readers' errors.

The end-to-end forms (the trainer command resuming to the weights of an unbroken run; the
decoder, averager and exporter commands) are in tests/faults/test_corruption.py (slow).
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from checkpoint_damage import DAMAGE, truncate
from conftest import search_model
from t2t_lite.runs import averaging, checkpoints, weights
from t2t_lite.runs.checkpoints import CheckpointError


def _three_checkpoints(out):
    """ckpt-1..3 of one variable holding 1, 2, 3; returns (checkpoint, variable, make_manager)."""
    variable = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(v=variable)

    def make_manager():
        return tf.train.CheckpointManager(checkpoint, str(out), max_to_keep=5,
                                          checkpoint_name="ckpt")

    manager = make_manager()
    for step in (1, 2, 3):
        variable.assign(float(step))
        manager.save(checkpoint_number=step)
    variable.assign(-1.0)
    return checkpoint, variable, make_manager


@pytest.mark.guarantee("damaged-checkpoint", "the trainer's restore with the newest checkpoint "
                       "truncated, its index corrupted or its data missing: one `warning:` line "
                       "naming it, the checkpoint moved to `unreadable/` and no longer listed, and "
                       "the values of the one before restored")
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_the_newest_unreadable_checkpoint_is_moved_aside(damage, tmp_path):
    checkpoint, variable, make_manager = _three_checkpoints(tmp_path)
    DAMAGE[damage](str(tmp_path / "ckpt-3"))
    lines = []
    manager, path = checkpoints.restore_newest_readable(checkpoint, make_manager, str(tmp_path),
                                                       warn=lines.append)
    assert path == str(tmp_path / "ckpt-2") and float(variable.numpy()) == 2.0
    assert lines[0].startswith(f"warning: checkpoint {tmp_path / 'ckpt-3'} is unreadable")
    assert all(len(line.splitlines()) == 1 for line in lines)
    assert os.path.exists(tmp_path / "unreadable" / "ckpt-3.index")
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-1", "ckpt-2"]
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-1", "ckpt-2"]
    manager.save(checkpoint_number=4)  # The older good ones stay listed after the next save.
    assert checkpoints.list_checkpoints(str(tmp_path)) == ["ckpt-1", "ckpt-2", "ckpt-4"]


@pytest.mark.guarantee("damaged-checkpoint", "two damaged checkpoints in a row: both are moved "
                       "aside and the oldest restored; none readable: one `CheckpointError` "
                       "line saying `no readable checkpoint`")
def test_fallback_goes_back_as_far_as_it_must(tmp_path):
    checkpoint, variable, make_manager = _three_checkpoints(tmp_path)
    for step in (2, 3):
        truncate(str(tmp_path / f"ckpt-{step}.data-00000-of-00001"))
    _, path = checkpoints.restore_newest_readable(checkpoint, make_manager, str(tmp_path),
                                                  warn=lambda line: None)
    assert path == str(tmp_path / "ckpt-1") and float(variable.numpy()) == 1.0
    truncate(str(tmp_path / "ckpt-1.data-00000-of-00001"))
    with pytest.raises(CheckpointError, match="no readable checkpoint") as error:
        checkpoints.restore_newest_readable(checkpoint, make_manager, str(tmp_path),
                                            warn=lambda line: None)
    assert len(str(error.value).splitlines()) == 1


@pytest.fixture(scope="module")
def saved_model_weights(tmp_path_factory):
    """A small Transformer and its weights written as a run's checkpoint `ckpt-1`."""
    model = search_model()
    out = tmp_path_factory.mktemp("weights")
    tf.train.Checkpoint(model=weights.model_weights(model)).write(str(out / "ckpt-1"))
    return model, out


@pytest.mark.guarantee("damaged-checkpoint", "the readers the decoder, exporter and averager "
                       "use: a damaged checkpoint is one `cannot read checkpoint PATH: ...` line, "
                       "and the model's weights are left as they were")
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_readers_name_the_damaged_checkpoint(damage, saved_model_weights, tmp_path):
    model, out = saved_model_weights
    for name in os.listdir(out):
        if name.startswith("ckpt-1."):
            (tmp_path / name).write_bytes((out / name).read_bytes())
    prefix = str(tmp_path / "ckpt-1")
    weights.read_weights(model, prefix, str(tmp_path))  # Whole, it reads back.
    DAMAGE[damage](prefix)
    before = [np.array(w) for w in model.weights]
    for read in (lambda: weights.read_weights(model, prefix, str(tmp_path)),
                 lambda: averaging._read(prefix, weights.weight_keys(model))):
        with pytest.raises(CheckpointError, match="cannot read checkpoint") as error:
            read()
        assert prefix in str(error.value) and len(str(error.value).splitlines()) == 1
    for a, b in zip(before, model.weights):
        np.testing.assert_array_equal(a, np.array(b))
