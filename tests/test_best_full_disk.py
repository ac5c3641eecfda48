"""`best/` under a full disk (README "Atomic writes"): the old best/ stays whole, no staging stays.

A dev evaluation that finds a new best replaces `best/` with the trainer's
`save_weights`, `weights.write_weights_dir`: through a staging folder
(`.best-tmp-*`), moving the old one aside (`.best-old-*`) for the rename
(`t2t_lite.atomic.replace_directory`). ENOSPC while the staging folder is
written, or between the two renames, must leave the old `best/` (or, in the
second case, leave it aside so that the next run puts it back); the next run
removes every staging folder before it trains. (That the evaluator writes
best/ this way: tests/test_evaluation.py; kills during it:
tests/faults/test_trainer_kills.py.)
"""

import errno
import glob
import hashlib
import os

import pytest
import tensorflow as tf

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.training.evaluation import BEST_FILE
from t2t_lite.training.options import EvalOptions, TrainOptions

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _train(hparams, output_dir, steps):
    return trainer.train(
        registry.problem("algorithmic_reverse"), hparams, str(output_dir),
        options=TrainOptions(train_steps=steps, log_every_steps=1000, peak_flops=1e9,
                             eval=EvalOptions(eval_every_steps=0)),
        strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda line: None)


def _tree_hash(directory):
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))}


def _staging(out):
    return glob.glob(os.path.join(out, ".best-*"))


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
@pytest.mark.guarantee("atomic-writes", "best/ under ENOSPC, while staging and at the rename: "
                       "the old best/ stays whole (aside, in the second case, until the next "
                       "trainer run puts it back)")
def test_full_disk_while_saving_best_keeps_the_old_one(tiny_hparams, tmp_path, monkeypatch):
    out = str(tmp_path)
    _train(tiny_hparams, out, 1)
    model = Run.open(out).model()
    best = os.path.join(out, "best")
    weights.write_weights_dir(model, best, {"step": 1, "metric": "m", "value": 1.0}, BEST_FILE)
    old = _tree_hash(best)
    model.weights[0].assign(model.weights[0] + 1.0)  # A better model to save.
    record = {"step": 2, "metric": "m", "value": 2.0}

    write = tf.train.Checkpoint.write

    def full_while_staging(self, file_prefix, *args, **kwargs):
        if ".best-tmp-" in str(file_prefix):
            raise ENOSPC
        return write(self, file_prefix, *args, **kwargs)

    monkeypatch.setattr(tf.train.Checkpoint, "write", full_while_staging)
    with pytest.raises(OSError, match="No space left"):
        weights.write_weights_dir(model, best, record, BEST_FILE)
    monkeypatch.undo()
    assert _tree_hash(best) == old and not _staging(out)

    replace = os.replace

    def full_at_the_second_rename(src, dst):  # The old best/ is aside by now.
        if ".best-tmp-" in src and dst == best:
            raise ENOSPC
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", full_at_the_second_rename)
    with pytest.raises(OSError, match="No space left"):
        weights.write_weights_dir(model, best, record, BEST_FILE)
    monkeypatch.undo()
    assert not os.path.exists(best)  # The fault hit between the renames: the old one is aside.
    assert [os.path.basename(p).startswith(".best-old-") for p in _staging(out)] == [True]

    _train(tiny_hparams, out, 1)  # The next run starts (nothing left to train): best/ is back.
    assert _tree_hash(best) == old and not _staging(out)
    Run.open(out).model("best")  # Whole: it loads.
