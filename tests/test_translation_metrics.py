"""chrF and TER beside BLEU: sacreBLEU's own figures and signatures; --best_metric keeps best/."""

import doctest
import os

import pytest
import sacrebleu
import tensorflow as tf
from conftest import TESTDATA, data_file

from t2t_lite import registry
from t2t_lite.bin import trainer as trainer_cli
from t2t_lite.metrics import ExactMatch, Metric, MetricError, Score, improvement
from t2t_lite.metrics.base import read_lines
from t2t_lite.metrics import chrf_ter
from t2t_lite.metrics.chrf_ter import SacreChrf, SacreTer
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.training import trainer
from t2t_lite.training.evaluation import best_metric_name, read_best
from t2t_lite.training.options import EvalOptions, TrainOptions

BLEU_DATA = os.path.join(TESTDATA, "bleu")


def _pair(hyp_path, ref_path, lines=None):
    return read_lines(hyp_path)[:lines], read_lines(ref_path)[:lines]


def _assert_equal_to_sacrebleu(hyps, refs):
    chrf, ter = SacreChrf().score(hyps, refs), SacreTer().score(hyps, refs)
    assert chrf.value == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score, abs=1e-9)
    assert ter.value == pytest.approx(sacrebleu.corpus_ter(hyps, [refs]).score, abs=1e-9)
    return chrf, ter


def test_chrf_and_ter_equal_sacrebleus_own_with_signatures():
    hyps, refs = _pair(os.path.join(BLEU_DATA, "newstest2014.hyp.de"),
                       os.path.join(BLEU_DATA, "newstest2014.ref.de"))
    chrf, ter = _assert_equal_to_sacrebleu(hyps, refs)
    chrf_metric, ter_metric = sacrebleu.metrics.CHRF(), sacrebleu.metrics.TER()
    want_chrf = chrf_metric.corpus_score(hyps, [refs])
    want_ter = ter_metric.corpus_score(hyps, [refs])
    assert chrf.line == (f"chrF (sacreBLEU): {want_chrf.format()} "
                         f"{chrf_metric.get_signature()}")
    assert ter.line == (f"TER (sacreBLEU, lower is better): {want_ter.format()} "
                        f"{ter_metric.get_signature()}")
    assert "nc:6|nw:0" in chrf.line and "tok:tercom" in ter.line
    # The printed TER is the real TER (not -TER); its Score says lower is better.
    assert (chrf.name, chrf.higher_is_better) == ("chrf", True)
    assert (ter.name, ter.higher_is_better, ter.value) == ("ter", False, want_ter.score)
    assert 0.0 < ter.value < 100.0 and 0.0 < chrf.value < 100.0
    # Options reach sacreBLEU: chrF++ and case-sensitive TER are other figures.
    plus = SacreChrf(word_order=2).score(hyps, refs)
    assert plus.value == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs], word_order=2).score)
    assert "chrF2++" in plus.line and plus.value != chrf.value
    cased = SacreTer(case_sensitive=True).score(hyps, refs)
    assert cased.value == pytest.approx(
        sacrebleu.corpus_ter(hyps, [refs], case_sensitive=True).score)
    with pytest.raises(MetricError, match="2 hypotheses but 1 references"):
        SacreTer().score(["a", "b"], ["a"])
    assert SacreChrf().score([], []).value == 0.0  # An empty corpus scores, as BLEU's does.
    assert doctest.testmod(chrf_ter).failed == 0


def test_chrf_and_ter_on_real_newstest_lines():
    # newstest2013 (in tests/testdata) scored against newstest2014 (../shared/data only).
    hyp = data_file("wmt14", "newstest2013.de", lines=150)
    ref = data_file("wmt14", "newstest2014.de", lines=150)
    _assert_equal_to_sacrebleu(*_pair(hyp, ref, 150))


def test_improvement_follows_the_metrics_direction():
    assert improvement(Score("chrf", 50.0, ""), 40.0) == 10.0
    assert improvement(Score("ter", 50.0, "", higher_is_better=False), 40.0) == -10.0
    assert improvement(Score("ter", 30.0, "", higher_is_better=False), 40.0) == 10.0
    assert improvement(Score("ter", 30.0, "", higher_is_better=False), None) == float("inf")


def test_translation_problems_score_chrf_and_ter_beside_bleu():
    problem = registry.problem("translate_files")
    names = [metric.name for metric in problem.eval_metrics()]
    assert names == ["sacrebleu", "bleu_tokenized", "chrf", "ter"]
    assert best_metric_name(problem) == "sacrebleu"
    assert best_metric_name(problem, "ter") == "ter"
    with pytest.raises(MetricError) as error:
        best_metric_name(problem, "bleu")
    assert str(error.value) == ("unknown --best_metric 'bleu': translate_files's metrics are "
                                "sacrebleu, bleu_tokenized, chrf, ter")
    # What the decoder prints and the dev evaluation logs: every Score, chrF and TER included.
    hyps, refs = _pair(os.path.join(BLEU_DATA, "newstest2014.hyp.de"),
                       os.path.join(BLEU_DATA, "newstest2014.ref.de"), 10)
    scores = problem.evaluate(hyps, refs, hyps)
    assert [s.name for s in scores] == names
    assert scores[2].line == SacreChrf().score(hyps, refs).line
    assert scores[3].value == pytest.approx(sacrebleu.corpus_ter(hyps, [refs]).score)


class _ScriptedErrorRate(Metric):
    """A lower-is-better metric whose values follow a script (one per evaluation)."""

    name = "scripted_error"
    values = []

    def score(self, hypotheses, references, sources=None):
        value = type(self).values.pop(0)
        return Score(self.name, value, f"scripted error rate: {value}", higher_is_better=False)


@registry.register_problem("test_reverse_error_rate")
class _ReverseWithErrorRate(AlgorithmicReverse):
    def eval_metrics(self):
        return [ExactMatch(), _ScriptedErrorRate()]


@pytest.mark.slow  # Kept out of `make test` for its 6-minute budget; CI runs it.
def test_best_metric_keeps_best_by_the_chosen_lower_is_better_metric(tiny_hparams, tmp_path):
    _ScriptedErrorRate.values = [50.0, 20.0, 30.0]  # Dev evaluations at steps 1, 2 and 3.
    lines = []
    eval_options = EvalOptions(eval_every_steps=1, eval_examples=4, eval_decode_examples=0,
                               best_metric="scripted_error")
    trainer.train(registry.problem("test_reverse_error_rate"), tiny_hparams, str(tmp_path),
                  options=TrainOptions(train_steps=3, log_every_steps=1000, peak_flops=1e12,
                                       eval=eval_options),
                  strategy=tf.distribute.MirroredStrategy(["/cpu:0"]), log=lines.append)
    best = read_best(str(tmp_path))
    # Kept by the lowest error (step 2), not by exact_match (the first metric, 0 at every
    # step here, would have kept step 1).
    assert (best["metric"], best["value"], best["step"]) == ("scripted_error", 20.0, 2)
    assert best["higher_is_better"] is False
    assert [line.endswith("new best -> best/") for line in lines if "dev step" in line] == \
        [True, True, False]


def test_an_unknown_best_metric_fails_in_one_line(tmp_path, capsys):
    code = trainer_cli.main(["--problem=algorithmic_reverse", "--hparams=tiny",
                             f"--output_dir={tmp_path / 'run'}", "--train_steps=1",
                             "--best_metric=sacrebleu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["t2t_lite-trainer: error: unknown --best_metric 'sacrebleu': "
                   "algorithmic_reverse's metrics are exact_match"]
    assert not os.path.exists(tmp_path / "run" / "ckpt-1.index")

