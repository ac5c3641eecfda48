"""t2t_lite-decoder --score_file: teacher-forced log-probabilities of given pairs, no search."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import NO_EVAL

from t2t_lite.runs.run import Run
from t2t_lite import registry
from t2t_lite.bin import decoder as decoder_cli
from t2t_lite.data.text_encoder import DataError
from t2t_lite.decoding.scoring import read_pairs, score_pairs
from t2t_lite.ids import EOS_ID
from t2t_lite.runs import weights
from t2t_lite.training import trainer
from t2t_lite.training.options import TrainOptions

PAIRS = [("3 1 4", "4 1 3"), ("5 9 2 6", "6 2 9 5"), ("7", "0 0 0 1 2 3 4 5 6"),
         ("2 2 8", ""), ("9 8 7 6 5 4 3", "3 4 5 6 7 8 9"), ("", "1")]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """algorithmic_reverse, 100 steps: short inputs' beams end within 8 extra positions."""
    out = tmp_path_factory.mktemp("run")
    hparams = registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256,"
        "max_length=16")
    trainer.train(registry.problem("algorithmic_reverse"), hparams, str(out),
                  options=TrainOptions(eval=NO_EVAL, train_steps=100, log_every_steps=1000),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lambda _: None)
    return str(out)


def _teacher_forced(model, problem, source, target):
    """log p(target + EOS | source + EOS), one pair alone, unpadded, in float64."""
    inputs = (problem.encode(source) if source else []) + [EOS_ID]
    targets = (problem.encode_target(target) if target else []) + [EOS_ID]
    logits = model({"inputs": tf.constant([inputs]), "targets": tf.constant([targets])},
                   training=False).numpy()[0].astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return log_probs[np.arange(len(targets)), targets].sum(), len(targets)


def _write_pairs(path, pairs):
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def test_scores_are_the_teacher_forced_log_probabilities(run_dir, tmp_path, capsys):
    pairs_file, out = _write_pairs(tmp_path / "pairs.tsv", PAIRS), tmp_path / "scores.txt"
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--score_file={pairs_file}",
                             f"--score_to_file={out}", "--batch_size=4"]) == 0
    assert "scored 6 pairs" in capsys.readouterr().err
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(rows) == len(PAIRS) and all(len(row) == 3 for row in rows)

    model = Run.open(run_dir).model()
    problem = registry.problem("algorithmic_reverse")
    for (source, target), (total, mean, count) in zip(PAIRS, rows):
        want, tokens = _teacher_forced(model, problem, source, target)
        assert int(count) == tokens
        assert float(total) == pytest.approx(want, abs=1e-3), (source, target)
        assert float(mean) == pytest.approx(want / tokens, abs=1e-3)
    # The right target scores far better than a wrong one (the model has learned a bit).
    assert float(rows[0][0]) > float(rows[2][0])

    # The library, one pair per batch: the same scores (padding and batching do not count).
    alone = score_pairs(problem, model, PAIRS, 16, batch_size=1)
    np.testing.assert_allclose([s.log_prob for s in alone], [float(r[0]) for r in rows],
                               atol=1e-4)


def test_the_best_of_the_beams_candidates_is_the_beams_best(run_dir, tmp_path, capsys):
    sources = ["3 1 4", "5 9 2 6", "8 8 1", "2 7"]
    source_file = tmp_path / "in.txt"
    source_file.write_text("\n".join(sources) + "\n")
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--decode_from_file={source_file}",
                             "--beam_size=4", "--alpha=0", "--extra_length=8",
                             "--return_beams"]) == 0
    beams = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert len(beams) == len(sources) and all(len(b) == 8 for b in beams)
    candidates = [(source, text) for source, b in zip(sources, beams) for text in b[0::2]]
    pairs_file = _write_pairs(tmp_path / "candidates.tsv", candidates)
    assert decoder_cli.main([f"--output_dir={run_dir}", f"--score_file={pairs_file}"]) == 0
    scores = [float(line.split("\t")[0]) for line in capsys.readouterr().out.splitlines()]
    for i, b in enumerate(beams):
        beam_scores = [float(s) for s in b[1::2]]
        rescored = scores[4 * i:4 * i + 4]
        # With alpha = 0 a beam's score is its log-probability, EOS included.
        np.testing.assert_allclose(rescored, beam_scores, atol=2e-3)
        assert int(np.argmax(rescored)) == 0, (sources[i], b, rescored)


@pytest.mark.parametrize("content, message", [
    ("3 1 4\t4 1 3\n5 9 2 6\n", "line 2: no tab; each line must be source<TAB>target"),
    ("3 1\t1 3\tx\n", "line 1: 2 tabs"),
    ("", "is empty; pass source<TAB>target lines to score"),
])
def test_bad_pairs_files_fail_in_one_line(run_dir, tmp_path, capsys, content, message):
    path = tmp_path / "pairs.tsv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_pairs(str(path))
    code = decoder_cli.main([f"--output_dir={run_dir}", f"--score_file={path}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("t2t_lite-decoder: error: ") and message in err[0]


@pytest.mark.parametrize("flags, message", [
    (["--score_file=missing.tsv"], "missing.tsv: file not found"),
    (["--score_file=p.tsv", "--decode_interactive"], "drop --decode_from_file"),
    (["--score_file=p.tsv", "--sampling_temperature=1"], "drop --sampling_temperature"),
    (["--score_to_file=s.txt"], "--score_to_file needs --score_file"),
])
def test_flags_that_do_not_fit_fail_in_one_line(tmp_path, capsys, flags, message):
    code = decoder_cli.main([f"--output_dir={tmp_path}"] + flags)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err
