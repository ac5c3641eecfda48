"""Adam whose update of each variable is one fused kernel (TensorFlow's ApplyAdam).

Section 5.3 of Vaswani et al. 2017 trains with Adam (beta_1 0.9, beta_2 0.98,
epsilon 1e-9). Keras 3's `keras.optimizers.Adam` traces each variable's update
as 40 graph ops (reads, casts, the bias-correction powers, subtract, square,
multiply, two assign_adds, sqrt, divide, assign_sub), the elementwise ones each
a pass over the variable or a slot: on a 2-core CPU its update of `base` took
182 ms, this one's 59 ms (README, `benchmarks/adam_update.py`). `FusedAdam` computes exactly Keras' update,

    alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
    m <- m + (g - m) (1 - beta_1);  v <- v + (g^2 - v) (1 - beta_2)
    theta <- theta - alpha m / (sqrt(v) + epsilon)

with t the 1-based update number, in TensorFlow's `ResourceApplyAdam` kernel:
one op and one pass per variable. Its variables (the step, the momentums and
velocities) are Keras Adam's, under the same names, so checkpoints of either
restore into the other. Another backend (JAX), AMSGrad, or a variable the
kernel has no type for (not a float) falls back to Keras' own update.
"""

from __future__ import annotations

import keras
import tensorflow as tf

_FUSED_DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)


@keras.saving.register_keras_serializable(package="t2t_lite")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` with each variable's update in one fused kernel."""

    def update_step(self, gradient, variable, learning_rate):
        if keras.backend.backend() != "tensorflow" or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        if isinstance(variable, keras.Variable):
            variable = variable.value
        dtype = variable.dtype
        if dtype not in _FUSED_DTYPES:
            return super().update_step(gradient, variable, learning_rate)
        if isinstance(gradient, tf.IndexedSlices):  # Keras' update densifies it too.
            gradient = tf.convert_to_tensor(gradient)
        index = self._get_variable_index(variable)
        momentum = self._momentums[index].value
        velocity = self._velocities[index].value
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        # Under a tf.distribute update each handle is this device's copy.
        return tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=momentum.handle, v=velocity.handle,
            beta1_power=tf.pow(beta_1, step), beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype), grad=tf.cast(gradient, dtype),
            use_locking=False)
