"""Evaluation metrics a problem declares: exact match, corpus BLEU (sacreBLEU and tokenized),
chrF and TER (sacreBLEU's, `chrf_ter`).

`base.Metric` is the interface; `base.evaluate` scores decoded text with a
problem's metrics.
"""

from t2t_lite.metrics.base import (ExactMatch, Metric, MetricError, Score, evaluate,
                                  improvement)

__all__ = ["ExactMatch", "Metric", "MetricError", "Score", "evaluate", "improvement"]
