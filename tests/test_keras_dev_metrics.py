"""Keras fit stops on the dev metric: DevMetrics logs it, keras.callbacks.EarlyStopping reads it.

(Its own file: tests/test_early_stopping.py holds the trainer's early stopping.)
"""

import keras

from t2t_lite import registry
from t2t_lite.metrics import Metric, Score
from t2t_lite.models.transformer import Transformer
from t2t_lite.problems.algorithmic import AlgorithmicReverse
from t2t_lite.training.callbacks import DevMetrics
from t2t_lite.models.losses import LabelSmoothedCrossEntropy


class _Scripted(Metric):
    """The next value of `values` at each evaluation, and the number of hypotheses seen."""

    name = "scripted"
    values = []
    seen = []

    def score(self, hypotheses, references, sources=None):
        type(self).seen.append(len(hypotheses))
        value = type(self).values.pop(0)
        return Score(self.name, value, f"scripted: {value}")


@registry.register_problem("test_reverse_fit_dev_metric")
class _Reverse(AlgorithmicReverse):
    def eval_metrics(self):
        return [_Scripted()]


def test_keras_fit_stops_on_the_dev_metric_with_early_stopping(tiny_hparams):
    # As tests/test_early_stopping.py's trainer run: stops after the fifth evaluation.
    _Scripted.values, _Scripted.seen = [10.0, 10.3, 10.6, 10.6, 10.0, 99.0, 99.0], []
    problem = registry.problem("test_reverse_fit_dev_metric")
    keras.utils.set_random_seed(1)
    model = Transformer.from_hparams(tiny_hparams, problem.vocab_size)
    model.compile(optimizer=keras.optimizers.Adam(0.0),
                  loss=LabelSmoothedCrossEntropy(tiny_hparams.label_smoothing))
    dev = DevMetrics(problem, tiny_hparams.override("extra_length=2"), examples=2)
    stop = keras.callbacks.EarlyStopping(monitor="val_scripted", mode="max", patience=2,
                                         min_delta=0.5)
    # The dev split as training data: a smaller pipeline than train's (the rate is 0).
    history = model.fit(problem.dataset("dev", tiny_hparams, repeat=True), steps_per_epoch=1,
                        epochs=7, verbose=0, callbacks=[dev, stop])
    # The same evaluation as the trainer's: after the fifth epoch.
    assert history.history["val_scripted"] == [10.0, 10.3, 10.6, 10.6, 10.0]
    assert stop.stopped_epoch == 4
    assert [s.name for s in dev.scores] == ["scripted"] and _Scripted.seen == [2] * 5
