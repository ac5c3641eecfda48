"""Label-smoothed cross entropy (section 5.4) against a hand-computed case."""

import numpy as np
import pytest

from t2t_lite.training.losses import smoothed_cross_entropy, smoothed_cross_entropy_sums


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
