"""Label-smoothed cross entropy (section 5.4) against a hand-computed case."""

import numpy as np
import pytest

from t2t_lite.models.losses import smoothed_cross_entropy, smoothed_cross_entropy_sums


def test_hand_computed_case():
    # V = 3, logits [0, 1, 2], target 2, epsilon 0.1 -> q = [0.05, 0.05, 0.9].
    # logsumexp = log(1 + e + e^2) = 2.4076059; log p = [-2.4076059, -1.4076059, -0.4076059]
    # loss = 0.05 * 2.4076059 + 0.05 * 1.4076059 + 0.9 * 0.4076059 = 0.5576059
    logits = np.array([[[0.0, 1.0, 2.0], [5.0, -3.0, 0.5]]], np.float32)
    targets = np.array([[2, 0]], np.int32)  # The second position is padding.
    loss_sum, nll_sum, tokens = smoothed_cross_entropy_sums(logits, targets, 0.1)
    assert float(tokens) == 1.0
    assert float(loss_sum) == pytest.approx(0.5576059, abs=1e-6)
    assert float(nll_sum) == pytest.approx(0.4076059, abs=1e-6)


def test_mean_over_real_tokens_only():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 4, 7)).astype(np.float32)
    targets = np.array([[3, 4, 1, 0], [2, 1, 0, 0]], np.int32)
    mean = float(smoothed_cross_entropy(logits, targets, 0.1))
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    q = np.full((2, 4, 7), 0.1 / 6)
    for b in range(2):
        for t in range(4):
            q[b, t, targets[b, t]] = 0.9
    per_token = -(q * log_p).sum(-1)
    mask = targets != 0
    assert mean == pytest.approx(per_token[mask].mean(), rel=1e-5)


def test_no_smoothing_is_plain_nll():
    logits = np.array([[[1.0, 2.0, 3.0, 4.0]]], np.float32)
    targets = np.array([[3]], np.int32)
    loss_sum, nll_sum, _ = smoothed_cross_entropy_sums(logits, targets, 0.0)
    assert float(loss_sum) == pytest.approx(float(nll_sum), abs=1e-7)


def _random_case(seed=0, vocab=11):
    rng = np.random.default_rng(seed)
    logits = (3 * rng.normal(size=(3, 5, vocab))).astype(np.float32)
    targets = rng.integers(1, vocab, size=(3, 5)).astype(np.int32)
    targets[1, 3:] = 0  # Padding.
    targets[2, 1:] = 0
    return logits, targets


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_fused_kernel_equals_the_plain_ops_with_gradients(epsilon):
    """TensorFlow's fused kernel gives the backend-neutral ops' sums and gradient."""
    import tensorflow as tf

    from t2t_lite.models import losses

    logits, targets = _random_case()
    weights = tf.cast(targets != 0, tf.float32)
    results = {}
    for name, token_losses in [("plain", losses._token_losses),
                               ("fused", losses._fused_token_losses)]:
        z = tf.constant(logits)
        with tf.GradientTape() as tape:
            tape.watch(z)
            smoothed, nll = token_losses(z, targets, epsilon)
            loss = tf.reduce_sum(smoothed * weights)
        results[name] = (float(loss), float(tf.reduce_sum(nll * weights)),
                         tape.gradient(loss, z).numpy())
    plain, fused = results["plain"], results["fused"]
    assert fused[0] == pytest.approx(plain[0], rel=1e-6)
    assert fused[1] == pytest.approx(plain[1], rel=1e-5)
    np.testing.assert_allclose(fused[2], plain[2], rtol=1e-5, atol=1e-7)
    assert np.abs(plain[2][2, 1:]).max() == 0.0  # Padding gets no gradient.


def test_training_graph_uses_the_fused_kernel():
    """The traced loss gradient is the fused kernel's, with no dense scatter over V."""
    import tensorflow as tf

    logits, targets = _random_case(vocab=64)

    @tf.function
    def gradient(z):
        with tf.GradientTape() as tape:
            tape.watch(z)
            loss_sum, _, _ = smoothed_cross_entropy_sums(z, targets, 0.1)
        return tape.gradient(loss_sum, z)

    graph = gradient.get_concrete_function(tf.constant(logits)).graph
    kinds, todo = set(), [tensor.op for tensor in graph.outputs]
    seen = set()
    while todo:  # The ops the gradient is computed from (what runs once unused ops are pruned).
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        kinds.add(op.type)
        todo += [tensor.op for tensor in op.inputs] + list(op.control_inputs)
    assert "SoftmaxCrossEntropyWithLogits" in kinds
    assert not kinds & {"UnsortedSegmentSum", "LogSoftmax", "ScatterNd"}
