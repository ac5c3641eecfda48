"""The learning-rate schedule of equation 3, section 5.3 of Vaswani et al. 2017.

    lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

A linear rise for the first `warmup_steps` steps, then decay proportional to
the inverse square root of the step. `step` counts from 1: Keras passes the
optimizer's `iterations` (the number of updates already applied, from 0), so
update number `iterations + 1` uses the rate of step `iterations + 1`. Because
`iterations` is saved in every checkpoint, the rate is step-exact after a resume.
"""

from __future__ import annotations

import keras
from keras import ops


def paper_learning_rate(step, d_model, warmup_steps, scale=1.0):
    """Equation 3 at a 1-based `step` (a float or tensor)."""
    step = ops.cast(step, "float32")
    return (
        scale
        * d_model**-0.5
        * ops.minimum(ops.power(step, -0.5), step * warmup_steps**-1.5)
    )


@keras.saving.register_keras_serializable(package="t2t_lite")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Equation 3 as a Keras schedule of the optimizer's update count.

    Args:
      d_model: model width.
      warmup_steps: steps of linear warm-up (4000 in the paper).
      scale: multiplies the formula (1.0 is the paper).
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale

    def __call__(self, iterations):
        return paper_learning_rate(
            ops.cast(iterations, "float32") + 1.0, self.d_model, self.warmup_steps, self.scale
        )

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}
