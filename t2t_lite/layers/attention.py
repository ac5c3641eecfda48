"""Multi-head scaled dot-product attention, section 3.2 of Vaswani et al. 2017.

`Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V`, computed by `num_heads`
heads in parallel on projections of width d_k (queries, keys) and d_v
(values); the heads are concatenated and projected by W^O back to d_model.
Illegal connections (padding, future positions) get a large negative score
before the softmax.

Shapes: B batch, T query length, S key length, H heads, D d_model.

The key/value cache is an explicit argument (keras-hub discipline), never
hidden state:
- no cache: keys and values are computed from `value`;
- `cache` and `cache_index`: decoder self-attention, one new position at a time.
  The new key/value is written at `cache_index` of a fixed-size cache
  {"key": [B, H, L, d_k], "value": [B, H, L, d_v]} and the updated cache is
  returned; positions after `cache_index` must be masked by the caller.
  With `in_place=True` (traced TensorFlow graphs only) the write updates the
  cache's buffer in place instead of copying it (`write_position`).
- `cache` without `cache_index`: encoder-decoder attention, keys and values were
  computed once from the encoder output (`compute_cache`).

`return_attention_scores=True` also returns the softmax weights [B, H, T, S]
(float32, before attention dropout) that this call multiplied the values with,
for pictures (`t2t_lite.pictures.visualize`); the output itself is unchanged.
"""

from __future__ import annotations

import math

import keras
from keras import ops

# Added to the scores of illegal connections (the paper's -inf; finite avoids NaN
# in rows that are fully masked, e.g. padding queries).
NEG_INF = -1e9


def _traced_tensorflow():
    """True while tracing a TensorFlow graph (the in-place ops are TensorFlow's alone)."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.executing_eagerly()


def own_buffers(structure):
    """A copy of every tensor of `structure` into a buffer nothing else holds.

    What in-place writes (`write_position`) need at the start of a loop: a cache that is
    a constant (zeros folded by the graph optimizer) or shared with the caller
    must not be written in place. Outside a traced TensorFlow graph: unchanged.
    """
    if not _traced_tensorflow():
        return structure
    import tensorflow as tf

    return keras.tree.map_structure(lambda x: tf.raw_ops.DeepCopy(x=x), structure)


def write_position(cache, new, index, in_place: bool = False):
    """`cache` [..., L, d] with `new` [..., 1, d] written at position `index`.

    Copies the cache (`ops.slice_update`), or, with `in_place` in a traced
    TensorFlow graph, writes the new rows into the cache's own buffer. Without
    XLA, TensorFlow copies the whole cache [B, H, L, d] to write one position
    (`ops.slice_update`, a select and a scatter all copy); in place, a write
    touches only the new rows. The caller guarantees what makes that safe:
    every cache it passes in is a buffer it alone holds (`own_buffers` at the
    start of a loop, or a fresh result such as a reordering's gather), and it
    never reads a cache again after passing it to a write (a search's loop
    state). XLA updates in place by itself and has no kernel for these ops: a
    search compiled with XLA passes False. The leading dimensions are [B, H]
    (one sequence per row) or [B, H, K] (`MultiHeadAttention.beams_call`).
    """
    rank = len(cache.shape)
    if not (in_place and _traced_tensorflow()):
        return ops.slice_update(cache, [0] * (rank - 2) + [index, 0], new)
    import tensorflow as tf

    shape, depth = tf.shape(cache), cache.shape[-1]
    rows = tf.reshape(cache, [-1, depth])  # [prod(leading) * L, d]: a view of the same buffer.
    written = tf.range(tf.reduce_prod(shape[:-2])) * shape[-2] + index  # Row (..., index).
    rows = tf.raw_ops.InplaceUpdate(x=rows, i=written, v=tf.reshape(new, [-1, depth]))
    return tf.ensure_shape(tf.reshape(rows, shape), cache.shape)


@keras.saving.register_keras_serializable(package="t2t_lite")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention (section 3.2.2) with an optional explicit KV cache.

    Args:
      num_heads: h.
      d_model: width of the output (and of the inputs).
      key_dim: d_k, query/key width per head.
      value_dim: d_v, value width per head.
      attention_dropout_rate: dropout on the attention weights.
    """

    def __init__(self, num_heads, d_model, key_dim, value_dim,
                 attention_dropout_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.d_model = d_model
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.attention_dropout_rate = attention_dropout_rate

    def _dense(self, units, name):
        # W^Q, W^K, W^V and W^O are plain matrices in the paper (no bias), as in
        # tensor2tensor's attention.
        return keras.layers.Dense(
            units,
            use_bias=False,
            kernel_initializer="glorot_uniform",
            name=name,
            dtype=self.dtype_policy,
        )

    def build(self, query_shape, value_shape=None):
        value_shape = value_shape or query_shape
        heads = self.num_heads
        self.query_dense = self._dense(heads * self.key_dim, "query")
        self.key_dense = self._dense(heads * self.key_dim, "key")
        self.value_dense = self._dense(heads * self.value_dim, "value")
        self.output_dense = self._dense(self.d_model, "attention_output")
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build(tuple(query_shape[:-1]) + (heads * self.value_dim,))
        self.dropout = keras.layers.Dropout(
            self.attention_dropout_rate, dtype=self.dtype_policy, name="dropout"
        )
        self.built = True

    def _split_heads(self, x, depth):
        """[B, T, H * depth] -> [B, H, T, depth] (heads first: no copy per step)."""
        shape = ops.shape(x)
        if x.shape[1] == 1:  # One position (a decoding step): the same layout, no copy.
            return ops.reshape(x, (shape[0], self.num_heads, 1, depth))
        x = ops.reshape(x, (shape[0], shape[1], self.num_heads, depth))
        return ops.transpose(x, (0, 2, 1, 3))

    def compute_cache(self, value):
        """Keys and values [B, H, S, d] of `value` [B, S, D] for cached cross-attention."""
        return {
            "key": self._split_heads(self.key_dense(value), self.key_dim),
            "value": self._split_heads(self.value_dense(value), self.value_dim),
        }

    def call(self, query, value=None, *, attention_mask=None, attention_bias=None, cache=None,
             cache_index=None, in_place=False, training=None, return_attention_scores=False):
        """Attends from `query` [B, T, D] to `value` [B, S, D].

        Args:
          attention_mask: bool, broadcastable to [B, T, S]; True = may attend.
          attention_bias: float32, broadcastable to [B, H, T, S], added to the
            scores before the mask (`relative_position.RelativePositionBias`).
          cache: see the module docstring.
          cache_index: int32 scalar, the position written in a self-attention cache.
          in_place: write that position in place (`write_position`).
          return_attention_scores: also return the attention weights.

        Returns:
          [B, T, D], or ([B, T, D], updated cache) when `cache` is given; with
          `return_attention_scores`, the float32 weights [B, H, T, S] are appended
          as the last element of a tuple.
        """
        q = self._split_heads(self.query_dense(query), self.key_dim)
        if cache is None:
            value = query if value is None else value
            kv = self.compute_cache(value)
        elif cache_index is None:
            kv = cache
        else:
            new = self.compute_cache(query)
            kv = {name: write_position(cache[name], new[name], cache_index, in_place)
                  for name in ("key", "value")}
        mask = None
        if attention_mask is not None:
            mask = ops.expand_dims(ops.cast(attention_mask, "bool"), axis=1)
        context, probabilities = self._attend(q, kv["key"], kv["value"], mask, attention_bias,
                                              training)  # [B, H, T, d_v]
        if context.shape[2] != 1:  # One position: [B, H, 1, d_v] is already [B, 1, H, d_v].
            context = ops.transpose(context, (0, 2, 1, 3))  # [B, T, H, d_v]
        shape = ops.shape(context)
        context = ops.reshape(context, (shape[0], -1, self.num_heads * self.value_dim))
        output = self.output_dense(context)
        result = (output,) if cache is None else (output, kv)
        if return_attention_scores:
            result += (probabilities,)
        return result[0] if len(result) == 1 else result

    def _attend(self, q, key, value, mask, bias, training):
        """softmax(q key^T / sqrt(d_k) + bias, masked) value for q [B, H, T, d_k] and
        key, value [B, H, S, d]: (context [B, H, T, d_v], float32 weights [B, H, T, S]).
        `mask` (bool) and `bias` are broadcastable to [B, H, T, S]."""
        q = q * ops.cast(1.0 / math.sqrt(self.key_dim), q.dtype)
        scores = ops.cast(ops.einsum("bhtd,bhsd->bhts", q, key), "float32")
        if bias is not None:
            scores = scores + ops.cast(bias, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, NEG_INF)
        probabilities = ops.softmax(scores, axis=-1)  # float32 [B, H, T, S]
        weights = self.dropout(ops.cast(probabilities, q.dtype), training=training)
        return ops.einsum("bhts,bhsd->bhtd", weights, value), probabilities

    def _beams_first(self, x, beam_size, depth):
        """[B*K, 1, H * depth] -> [B, H, K, depth]: the K beams of a sentence side by side."""
        x = ops.reshape(x, (-1, beam_size, self.num_heads, depth))
        return ops.einsum("bkhd->bhkd", x)  # TensorFlow: 4x faster than a (oneDNN) transpose.

    def beams_call(self, query, beam_size, cache, attention_mask, cache_index=None,
                   in_place=False):
        """One decoding step of the K beams of each sentence, attended as a group.

        The beams of a sentence share one cache, so a step neither repeats the
        encoder's keys per beam nor reorders the self-attention cache when beams
        are reselected (`t2t_lite.decoding.search`, grouped beams):
        - self-attention (`cache_index` given): cache {"key": [B, H, K, L, d_k],
          "value": [B, H, K, L, d_v]}, slot k holding what the beam in slot k
          wrote at each position; the step writes slot k's row at `cache_index`
          and attends over all K x L rows, `attention_mask` bool [B, 1, K, K*L]
          picking each beam's own history;
        - encoder-decoder attention: cache {"key": [B, H, S, d_k], "value":
          [B, H, S, d_v]} (not repeated), `attention_mask` bool [B, 1, 1, S].

        Args:
          query: [B*K, 1, D], rows b * K + k.
          beam_size: K (a Python int).

        Returns:
          [B*K, 1, D], and the updated cache for self-attention.
        """
        q = self._beams_first(self.query_dense(query), beam_size, self.key_dim)  # [B, H, K, d_k]
        kv = cache
        if cache_index is not None:
            new = {"key": self.key_dense(query), "value": self.value_dense(query)}
            depth = {"key": self.key_dim, "value": self.value_dim}
            kv = {name: write_position(
                cache[name], ops.expand_dims(self._beams_first(new[name], beam_size, depth[name]),
                                             3), cache_index, in_place)
                  for name in ("key", "value")}
        key, value = kv["key"], kv["value"]
        if cache_index is not None:  # [B, H, K, L, d] -> [B, H, K*L, d], a view.
            shape = ops.shape(key)
            key = ops.reshape(key, (shape[0], shape[1], -1, self.key_dim))
            value = ops.reshape(value, (shape[0], shape[1], -1, self.value_dim))
        context, _ = self._attend(q, key, value, attention_mask, None, False)  # [B, H, K, d_v]
        context = ops.einsum("bhkd->bkhd", context)
        context = ops.reshape(context, (-1, 1, self.num_heads * self.value_dim))
        output = self.output_dense(context)
        return output if cache_index is None else (output, kv)

    def compute_output_shape(self, query_shape, value_shape=None):
        return tuple(query_shape[:-1]) + (self.d_model,)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            d_model=self.d_model,
            key_dim=self.key_dim,
            value_dim=self.value_dim,
            attention_dropout_rate=self.attention_dropout_rate,
        )
        return config
