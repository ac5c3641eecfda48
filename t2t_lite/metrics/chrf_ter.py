"""chrF and TER from sacreBLEU, with their signatures, beside BLEU for translation.

* `SacreChrf`: character n-gram F-score (Popovic, 2015), sacreBLEU's `CHRF`
  (chrF2: character 6-grams, beta 2; `word_order=2` gives chrF++). Higher is better.
* `SacreTer`: translation edit rate (Snover et al., 2006), sacreBLEU's `TER`
  (tercom tokenization, case-insensitive by default). Lower is better: its
  Score keeps the real TER as `value` and says `higher_is_better=False`, so
  the decoder prints and TensorBoard shows the TER, while `best/`
  (`--best_metric=ter`) and early stopping keep the lowest one.

Both score detokenized text, as sacreBLEU's BLEU does, and give the same
figure as `sacrebleu.corpus_chrf` / `sacrebleu.corpus_ter` with the same options.

>>> hyp, ref = ["Das Haus ist klein."], ["Das Haus ist sehr klein."]
>>> SacreTer().score(hyp, ref).line.split(" nrefs")[0]
'TER (sacreBLEU, lower is better): TER = 20.00'
"""

from __future__ import annotations

from typing import Sequence

from sacrebleu.metrics import CHRF, TER

from t2t_lite.metrics.base import Metric, Score, check_lengths


def _corpus_score(metric, hypotheses: Sequence[str], references: Sequence[str]):
    """sacreBLEU's corpus score; an empty corpus scores as one empty pair (it cannot score none)."""
    check_lengths(hypotheses, references)
    if not hypotheses:
        hypotheses, references = [""], [""]
    return metric.corpus_score(list(hypotheses), [list(references)])


class SacreChrf(Metric):
    """sacreBLEU's chrF (chrF2 by default) of detokenized text, with its signature."""

    name = "chrf"

    def __init__(self, char_order: int = CHRF.CHAR_ORDER, word_order: int = CHRF.WORD_ORDER,
                 beta: int = CHRF.BETA, lowercase: bool = False):
        self.options = dict(char_order=char_order, word_order=word_order, beta=beta,
                            lowercase=lowercase)

    def score(self, hypotheses, references, sources=None) -> Score:
        metric = CHRF(**self.options)
        result = _corpus_score(metric, hypotheses, references)
        return Score(self.name, result.score,
                     f"chrF (sacreBLEU): {result.format()} {metric.get_signature()}")


class SacreTer(Metric):
    """sacreBLEU's TER of detokenized text, with its signature; lower is better."""

    name = "ter"

    def __init__(self, normalized: bool = False, no_punct: bool = False,
                 case_sensitive: bool = False):
        self.options = dict(normalized=normalized, no_punct=no_punct,
                            case_sensitive=case_sensitive)

    def score(self, hypotheses, references, sources=None) -> Score:
        metric = TER(**self.options)
        result = _corpus_score(metric, hypotheses, references)
        return Score(self.name, result.score,
                     f"TER (sacreBLEU, lower is better): {result.format()} "
                     f"{metric.get_signature()}", higher_is_better=False)
