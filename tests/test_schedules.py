"""Equation 3 (section 5.3) against values computed by hand."""

import pytest

from t2t_lite.training.schedules import TransformerSchedule, paper_learning_rate

# lrate = 512^-0.5 * min(step^-0.5, step * 4000^-1.5), by hand:
#   step 1:      0.04419417 * 1 * 3.9528471e-06   = 1.7469281e-07
#   step 4000:   0.04419417 * 0.015811388         = 6.9877124e-04 (the peak)
#   step 100000: 0.04419417 * 0.0031622777        = 1.3975425e-04
GOLDEN = [(1, 1.7469281e-07), (4000, 6.9877124e-04), (100_000, 1.3975425e-04)]


@pytest.mark.parametrize("step, expected", GOLDEN)
def test_equation_3(step, expected):
    assert float(paper_learning_rate(step, 512, 4000)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("step, expected", GOLDEN)
def test_keras_schedule_is_one_based(step, expected):
    # Keras passes the number of updates already applied: update `step` sees step - 1.
    schedule = TransformerSchedule(512, 4000)
    assert float(schedule(step - 1)) == pytest.approx(expected, rel=1e-5)


def test_warmup_is_linear_then_inverse_sqrt():
    lr = lambda s: float(paper_learning_rate(s, 512, 4000))  # noqa: E731
    assert lr(2000) == pytest.approx(lr(1000) * 2, rel=1e-5)
    assert lr(16000) == pytest.approx(lr(4000) / 2, rel=1e-5)
    assert lr(4000) > lr(3999) and lr(4000) > lr(4001)


def test_config_round_trip():
    schedule = TransformerSchedule(1024, 8000, 2.0)
    again = TransformerSchedule.from_config(schedule.get_config())
    assert float(again(10)) == float(schedule(10))
