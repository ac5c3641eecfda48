"""The Metric interface: ExactMatch, SacreBleu and TokenizedBleu Scores, evaluate, errors."""

import os

import pytest
import sacrebleu

from t2t_lite.metrics import ExactMatch, Metric, MetricError, Score, evaluate
from t2t_lite.metrics.base import read_lines
from t2t_lite.metrics.bleu import SacreBleu, TokenizedBleu, tokenized_bleu

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "bleu")


def _lines(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def test_exact_match_values():
    score = ExactMatch().score(["4 1 3", "2", "7 7"], ["4 1 3", "2 2", "7 7"])
    assert score == Score("exact_match", pytest.approx(200 / 3),
                          "exact-sequence accuracy: 66.67% (2/3)")
    assert ExactMatch().score(["a"], ["a"]).value == 100.0
    assert ExactMatch().score(["a "], ["a"]).value == 0.0  # Exact: whitespace counts.
    empty = ExactMatch().score([], [])
    assert (empty.value, empty.line) == (0.0, "exact-sequence accuracy: 0.00% (0/0)")


def test_sacrebleu_value_and_signature_equal_sacrebleu():
    hyps, refs = _lines("newstest2014.hyp.de"), _lines("newstest2014.ref.de")
    score = SacreBleu().score(hyps, refs)
    metric = sacrebleu.BLEU()
    want = metric.corpus_score(hyps, [refs])
    signature = str(metric.get_signature())
    assert score.name == "sacrebleu"
    assert score.value == pytest.approx(want.score, abs=1e-9)
    assert "tok:13a" in signature and "nrefs:1" in signature
    assert score.line == f"sacreBLEU (detokenized, report this): {want.format()} {signature}"
    intl = SacreBleu(tokenize="intl").score(hyps, refs)
    assert "tok:intl" in intl.line
    assert intl.value == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="intl").score)


def test_tokenized_bleu_uses_its_language():
    hyps, refs = _lines("newstest2014.hyp.de"), _lines("newstest2014.ref.de")
    score = TokenizedBleu("de").score(hyps, refs)
    assert score.name == "bleu_tokenized"
    assert score.value == pytest.approx(tokenized_bleu(hyps, refs, "de").score)
    assert score.line == ("tokenized BLEU (paper-comparable, moses + compound splitting, de): "
                          f"{tokenized_bleu(hyps, refs, 'de').format()}")
    # English and German Moses rules differ on "don't": the language reaches the tokenizer.
    hyp, ref = ["I don't know ."], ["I don't know it ."]
    en, de = TokenizedBleu("en").score(hyp, ref), TokenizedBleu("de").score(hyp, ref)
    assert en.value == pytest.approx(tokenized_bleu(hyp, ref, "en").score)
    assert de.value == pytest.approx(tokenized_bleu(hyp, ref, "de").score)
    assert en.value != de.value and ", en): " in en.line


def test_identical_text_scores_100():
    refs = _lines("newstest2014.ref.de")
    for metric in (ExactMatch(), SacreBleu(), TokenizedBleu("de")):
        assert metric.score(refs, refs).value == pytest.approx(100.0)


class _Length(Metric):
    name = "length"

    def score(self, hypotheses, references, sources=None):
        return Score(self.name, float(len(sources)), f"sources: {len(sources)}")


def test_evaluate_keeps_the_declared_order_and_passes_sources():
    scores = evaluate([_Length(), ExactMatch()], ["a", "b"], ["a", "c"], ["x", "y"])
    assert [s.name for s in scores] == ["length", "exact_match"]
    assert scores[0].line == "sources: 2" and scores[1].value == 50.0


@pytest.mark.parametrize("metric", [ExactMatch(), SacreBleu(), TokenizedBleu("de")])
def test_mismatched_lengths_raise_metric_error(metric):
    with pytest.raises(MetricError, match="2 hypotheses but 1 references"):
        metric.score(["a", "b"], ["a"])
    with pytest.raises(MetricError):
        evaluate([metric], ["a"], [])


def test_metric_is_abstract():
    with pytest.raises(TypeError):
        Metric()


def test_read_lines(tmp_path):
    path = tmp_path / "ref.txt"
    path.write_bytes("a\r\nb\n\nc".encode("utf-8"))
    assert read_lines(str(path)) == ["a\r", "b", "", "c"]  # Only "\n" ends a line.
    path.write_bytes(b"ok\n\xff\n")
    with pytest.raises(MetricError, match=r"ref.txt is not UTF-8 \(invalid start byte at "
                       r"byte 3\)"):
        read_lines(str(path))
