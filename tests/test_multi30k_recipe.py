"""benchmarks/multi30k.py, the README's Multi30k recipe, end to end on a tiny budget."""

import json
import os
import subprocess
import sys

import pytest

from conftest import data_file, needs_data
from t2t_lite.runs import checkpoints

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@pytest.mark.slow
@needs_data("multi30k")
def test_recipe_trains_averages_decodes_and_scores(tmp_path):
    command = [sys.executable, "-m", "benchmarks.quality", "multi30k",
               f"--raw_dir={data_file('multi30k')}", f"--work_dir={tmp_path}",
               "--minutes=0.2,0.4", "--save_checkpoints_steps=1", "--average=3",
               "--test_limit=20", "--eval_decode_examples=10",
               "--hparams_overrides=num_layers=1,d_model=64,d_ff=128,batch_size=1024"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=True,
                            cwd=ROOT)
    first, second = [json.loads(line) for line in result.stdout.splitlines()]
    assert (first["minutes"], second["minutes"]) == (0.2, 0.4)
    assert 0 < first["step"] < second["step"]
    # A checkpoint every step, so the average is of the 3 ending at the stage's checkpoint
    # (fewer only when a loaded machine got the run no further than step 2).
    names = checkpoints.list_checkpoints(str(tmp_path / "run"))
    ending = names[:names.index(second["checkpoint"]) + 1]
    assert second["averaged"] == ending[-3:] and len(ending[-3:]) == min(3, second["step"])
    assert set(second["bleu"]) == {"last_greedy", "last_beam4",
                                   "averaged_greedy", "averaged_beam4"}
    assert all(0.0 <= v <= 100.0 for v in second["bleu"].values())
    assert second["dev_nll"] < first["dev_nll"]  # It learns between the two stages.
    assert "case:mixed" in second["signature"] and "tok:13a" in second["signature"]
