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
    if keras.backend.backend() == "tensorflow":
        smoothed, nll = _fused_token_losses(logits, targets, label_smoothing)
    else:
        smoothed, nll = _token_losses(logits, targets, label_smoothing)
    weights = ops.cast(ops.not_equal(ops.cast(targets, "int32"), PAD_ID), "float32")
    return (
        ops.sum(smoothed * weights),
        ops.sum(nll * weights),
        ops.sum(weights),
    )


def _token_losses(logits, targets, label_smoothing):
    """(smoothed loss, -log p(target)) per position [B, T], in backend-neutral ops."""
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
    return smoothed, -true_log_prob


def _fused_token_losses(logits, targets, label_smoothing):
    """`_token_losses` in TensorFlow's fused softmax cross-entropy kernel (issue 28).

    The kernel computes the loss and its gradient (softmax - q) in one pass over
    [B, T, V]; the backend-neutral version makes several, and the gradient of its
    `take_along_axis` is a scatter into a dense [B*T, V] (`UnsortedSegmentSum`,
    7% of a `bench` training step under AVX2). The likelihood needs no second
    softmax: with z the logits, z_t the target's, S = sum_v z_v and q = off +
    (on - off) onehot(t), loss = logsumexp(z) - (on - off) z_t - off S (as
    on + off (V - 1) = 1), so -log p(t) = logsumexp(z) - z_t = loss - (eps + off)
    z_t + off S. It is logged, never differentiated.
    """
    import tensorflow as tf

    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.int32)
    if not label_smoothing:
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
        return nll, nll
    vocab_size = tf.shape(logits)[-1]
    off_value = label_smoothing / tf.cast(vocab_size - 1, tf.float32)
    labels = tf.one_hot(targets, vocab_size, on_value=1.0 - label_smoothing,
                        off_value=off_value)
    smoothed = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    target_logit = tf.gather(logits, targets[..., None], batch_dims=len(targets.shape))[..., 0]
    nll = tf.stop_gradient(smoothed - (label_smoothing + off_value) * target_logit
                           + off_value * tf.reduce_sum(logits, axis=-1))
    return smoothed, nll


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
