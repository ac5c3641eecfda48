"""One optimizer step under a tf.distribute strategy, with gradient accumulation.

The loss is normalized by the number of non-padding target tokens in the
whole global batch (summed over replicas and accumulated micro-batches), so
R replicas, or one replica accumulating R micro-batches, compute exactly the
gradient one replica would compute on the same global batch:

    gradient = sum over all tokens of d loss(token) / total tokens

Each replica differentiates its *sum* of token losses; the token total is
all-reduced; the Keras optimizer sums the replicas' gradients when it applies
them (keras/src/backend/tensorflow/optimizer.py, `_all_reduce_sum_gradients`).

With a `keras.optimizers.LossScaleOptimizer` (precision "mixed_float16") the
summed loss is multiplied by the loss scale before differentiating; the
optimizer divides it out, and skips the update (halving the scale) when a
gradient overflowed on any replica (`_skip_together`).
"""

from __future__ import annotations

import keras
import tensorflow as tf


SUM = tf.distribute.ReduceOp.SUM


def _skip_together(grads, context):
    """The gradients, made non-finite on every replica when one replica's are.

    Under a MirroredStrategy, Keras' LossScaleOptimizer decides whether to skip
    an update from the first replica's own gradients, before the replicas' are
    summed (`_tf_apply` in keras/src/optimizers/loss_scale_optimizer.py): an
    overflow on another replica would be applied and turn the weights into
    NaN. Adding 0 (or NaN on every replica) leaves finite gradients exact.
    """
    if context.num_replicas_in_sync == 1:
        return grads
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])
    overflows = context.all_reduce(SUM, 1.0 - tf.cast(finite, tf.float32))
    poison = tf.where(overflows > 0.0, float("nan"), 0.0)
    return [g + tf.cast(poison, g.dtype) for g in grads]


class StepRunner:
    """Builds the traced step functions for a model, optimizer and strategy.

    Args:
      model: a built Transformer (created in `strategy.scope()`).
      optimizer: a built Keras optimizer (created in `strategy.scope()`).
      strategy: the tf.distribute strategy.
      label_smoothing: epsilon_ls.
      accum_steps: micro-batches per optimizer update.
      jit_compile: compile the per-replica step with XLA.
    """

    def __init__(self, model, optimizer, strategy, label_smoothing, accum_steps=1,
                 jit_compile=False):
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.label_smoothing = label_smoothing
        self.accum_steps = accum_steps
        self.variables = model.trainable_variables
        self.accumulators = []
        if accum_steps > 1:
            with strategy.scope():
                on_read = dict(
                    trainable=False,
                    synchronization=tf.VariableSynchronization.ON_READ,
                    aggregation=tf.VariableAggregation.SUM,
                )
                self.accumulators = [
                    tf.Variable(tf.zeros_like(v.value), **on_read) for v in self.variables
                ]
                self.token_accumulator = tf.Variable(0.0, **on_read)
        wrap = (lambda fn: tf.function(fn, jit_compile=True)) if jit_compile else (lambda f: f)
        self._replica_update = wrap(self._update)
        self._replica_accumulate = wrap(self._accumulate)
        # One trace for every batch shape: the global batch goes in whole and
        # each replica slices its own rows (`_replica_rows`).
        signature = [{name: tf.TensorSpec([None, None], tf.int32)
                      for name in ("inputs", "targets")}]
        self._update_step = tf.function(self._run_update, input_signature=signature)
        self._accumulate_step = tf.function(self._run_accumulate, input_signature=signature)

    def _gradients(self, batch):
        """Per replica: gradients of the summed loss, and the loss sums."""
        with tf.GradientTape() as tape:
            # The model's own objective and logged sums (the model contract's `loss_sums`).
            sums = self.model.loss_sums(batch, self.label_smoothing, training=True)
            scaled = sums.objective
            if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
                scaled = self.optimizer.scale_loss(scaled)
        grads = tape.gradient(scaled, self.variables)
        return grads, sums.loss, sums.nll, sums.tokens

    def _replica_rows(self, batch):
        """This replica's contiguous share of the rows of the global batch."""
        context = tf.distribute.get_replica_context()
        replicas = context.num_replicas_in_sync
        if replicas == 1:
            return batch
        index = context.replica_id_in_sync_group
        rows = tf.shape(batch["targets"])[0]
        start, end = index * rows // replicas, (index + 1) * rows // replicas
        return {name: value[start:end] for name, value in batch.items()}

    def _accumulate(self, batch):
        grads, loss_sum, nll_sum, tokens = self._gradients(self._replica_rows(batch))
        for accumulator, grad in zip(self.accumulators, grads):
            accumulator.assign_add(grad)
        self.token_accumulator.assign_add(tokens)
        return loss_sum, nll_sum, tokens

    def _update(self, batch):
        grads, loss_sum, nll_sum, tokens = self._gradients(self._replica_rows(batch))
        local_tokens = tokens
        if self.accumulators:
            grads = [g + a for g, a in zip(grads, self.accumulators)]
            local_tokens = tokens + self.token_accumulator
        context = tf.distribute.get_replica_context()
        total_tokens = tf.maximum(context.all_reduce(SUM, local_tokens), 1.0)
        grads = [g / tf.cast(total_tokens, g.dtype) for g in grads]
        if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
            grads = _skip_together(grads, context)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        for accumulator in self.accumulators:
            accumulator.assign(tf.zeros_like(accumulator))
        if self.accumulators:
            self.token_accumulator.assign(0.0)
        return loss_sum, nll_sum, tokens

    def _reduce(self, per_replica):
        return [self.strategy.reduce(SUM, value, axis=None) for value in per_replica]

    def _run_update(self, batch):
        return self._reduce(self.strategy.run(self._replica_update, args=(batch,)))

    def _run_accumulate(self, batch):
        return self._reduce(self.strategy.run(self._replica_accumulate, args=(batch,)))

    def step(self, micro_batches):
        """One optimizer update over `accum_steps` global micro-batches.

        Returns:
          (summed smoothed loss, summed NLL, target tokens) as Python floats.
        """
        totals = [0.0, 0.0, 0.0]
        for i, batch in enumerate(micro_batches):
            fn = self._update_step if i == len(micro_batches) - 1 else self._accumulate_step
            values = fn({name: tf.cast(batch[name], tf.int32)
                         for name in ("inputs", "targets")})
            totals = [t + float(v) for t, v in zip(totals, values)]
        return tuple(totals)
