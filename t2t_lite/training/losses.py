"""Label-smoothed cross entropy, section 5.4 of Vaswani et al. 2017.

With label smoothing epsilon_ls the target distribution puts 1 - epsilon_ls on
the true token and spreads epsilon_ls evenly over the other V - 1 tokens
(tensor2tensor's convention):

    loss(t) = -(1 - eps) log p(t) - sum_{v != t} eps / (V - 1) log p(v)

The loss is summed over non-padding target tokens (EOS included) and divided by
their number, so a batch of long sentences weighs as much per token as a batch
of short ones. Everything here is float32, whatever the compute dtype.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.ids import PAD_ID


def smoothed_cross_entropy_sums(logits, targets, label_smoothing):
    """Sums over real tokens: (smoothed loss, negative log-likelihood, token count).

    Args:
      logits: float [B, T, V].
      targets: int [B, T]; PAD_ID marks padding.
      label_smoothing: epsilon_ls in [0, 1).

    Returns:
      Three float32 scalars. Divide the first two by the third for the means.
    """
    logits = ops.cast(logits, "float32")
    vocab_size = ops.shape(logits)[-1]
    log_probs = ops.log_softmax(logits, axis=-1)  # [B, T, V]
    targets = ops.cast(targets, "int32")
    true_log_prob = ops.squeeze(
        ops.take_along_axis(log_probs, ops.expand_dims(targets, -1), axis=-1), -1
    )  # [B, T]
    off_value = label_smoothing / ops.cast(vocab_size - 1, "float32")
    on_value = 1.0 - label_smoothing
    # sum_v q(v) log p(v) with q = off everywhere, plus (on - off) at the target.
    smoothed = -(off_value * ops.sum(log_probs, axis=-1) + (on_value - off_value) * true_log_prob)
    weights = ops.cast(ops.not_equal(targets, PAD_ID), "float32")
    return (
        ops.sum(smoothed * weights),
        ops.sum(-true_log_prob * weights),
        ops.sum(weights),
    )


def smoothed_cross_entropy(logits, targets, label_smoothing):
    """Mean label-smoothed cross entropy per non-padding target token."""
    loss_sum, _, tokens = smoothed_cross_entropy_sums(logits, targets, label_smoothing)
    return loss_sum / ops.maximum(tokens, 1.0)


@keras.saving.register_keras_serializable(package="t2t_lite")
class LabelSmoothedCrossEntropy(keras.losses.Loss):
    """`smoothed_cross_entropy` as a Keras loss, for `model.compile(loss=...)`.

    y_true: int [B, T] target ids (PAD_ID = padding); y_pred: logits [B, T, V].
    The value is the mean smoothed loss per non-padding target token of the
    (per-replica) batch, as the trainer computes it (section 5.4).
    """

    def __init__(self, label_smoothing=0.1, name="label_smoothed_cross_entropy", **kwargs):
        super().__init__(name=name, reduction="sum", **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        return smoothed_cross_entropy(y_pred, y_true, self.label_smoothing)

    def get_config(self):
        return {"label_smoothing": self.label_smoothing, "name": self.name}
