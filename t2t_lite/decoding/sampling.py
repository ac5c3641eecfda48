"""Sampling instead of searching: temperature, top-k, nucleus (top-p), seeded.

Each step a row's next token is drawn from the model's distribution at that
position, flattened or sharpened by the temperature T (probabilities
proportional to p ** (1 / T); T = 0 is the argmax, as greedy), cut to the k most
likely tokens (top-k; Fan et al. 2018) and then to the smallest set of those
whose renormalised probability reaches top_p (the nucleus; Holtzman et al.
2020), and renormalised. Back-translation samples this way (Edunov et al. 2018).
Tokens tied with the last one kept are kept too.

The draw is the Gumbel-max trick: the argmax of log p + T * g, g ~ Gumbel(0, 1)
for each token, with the noise from a counter-based hash of (seed, the input's
key, the sample number, the position, the token). There is no random state:
sample n of the input with key i depends on (seed, i, n) only, not on the batch
it falls in, its row in it or the batch size, in the decoder and the exported
SavedModel alike. The decoder's key is the input's index in what it decodes.

A row's score is the model's own log-probability of its tokens (T = 1, no top-k
or top-p), EOS included, as greedy's. Padding (id 0) is never sampled, and a
search constraint's forbidden tokens are masked before sampling, as in
`t2t_lite.decoding.search`. So T = 0 (and top_k = 1) is greedy's argmax, except
where greedy's would be padding, which a trained model does not predict.

The loop is greedy's (`greedy.greedy_loop`, whose state and helpers it
reuses) with the argmax over noisy, filtered log-probabilities; `keras.ops`
only. Shapes: B batch, N samples per input, R = B * N rows (row b * N + n),
L maximum decode length, V vocabulary.
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.decoding import decode_policy, parallel
from t2t_lite.decoding.beam_search import NEG_INF, _last_tokens, _step_log_probs
from t2t_lite.decoding.greedy import _append_token, greedy_loop
from t2t_lite.decoding.search import cache_lengths, cached_decoder, decode_lengths
from t2t_lite.ids import EOS_ID, PAD_ID

MIN_TEMPERATURE = 1e-6  # The nucleus of T = 0 is computed at this temperature: the argmax.
_GOLDEN = 0x9E3779B9  # 2 ** 32 / golden ratio: spreads consecutive counters apart.


_MASK = 0xFFFFFFFF


def _i64(value):
    return ops.convert_to_tensor(value, "int64")


def _mul32(h, constant: int):
    """(h * constant) mod 2 ** 32 for int64 h in [0, 2 ** 32), exactly: in 16-bit halves, so
    no product overflows int64 (whose multiply, unlike uint32's, every device has)."""
    low = ops.multiply(ops.bitwise_and(h, _i64(0xFFFF)), _i64(constant))
    high = ops.multiply(ops.right_shift(h, _i64(16)), _i64(constant & 0xFFFF))
    high = ops.left_shift(ops.bitwise_and(high, _i64(0xFFFF)), _i64(16))
    return ops.bitwise_and(ops.add(low, high), _i64(_MASK))


def _mix(h):
    """murmur3's 32-bit finalizer on int64 values in [0, 2 ** 32): each input bit flips
    about half the output bits."""
    h = ops.bitwise_xor(h, ops.right_shift(h, _i64(16)))
    h = _mul32(h, 0x85EBCA6B)
    h = ops.bitwise_xor(h, ops.right_shift(h, _i64(13)))
    h = _mul32(h, 0xC2B2AE35)
    return ops.bitwise_xor(h, ops.right_shift(h, _i64(16)))


def _u32(x):
    """An integer tensor or int -> int64 in [0, 2 ** 32) (modulo 2 ** 32)."""
    return ops.bitwise_and(ops.cast(x, "int64"), _i64(_MASK))


def _combine(stream, value):
    """A new stream from `stream` and `value` (32-bit values, broadcast together)."""
    return _mix(ops.bitwise_xor(stream, _mix(_u32(ops.add(value, _i64(_GOLDEN))))))


def row_streams(seed, input_keys, num_samples=1):
    """int64 [B * N] in [0, 2 ** 32): the random stream of sample n of each input, rows
    b * N + n.

    Args:
      seed: an int, or an integer scalar tensor (taken modulo 2 ** 32).
      input_keys: int [B], each input's key (e.g. its line number).
      num_samples: N, an int or an int32 scalar tensor.
    """
    if isinstance(seed, int):
        seed = seed % 2 ** 32
    seed = _mix(_u32(seed))
    keys = _combine(seed, _u32(input_keys))  # [B]
    keys = ops.repeat(keys, num_samples, axis=0)  # [R]
    samples = ops.mod(ops.arange(ops.shape(keys)[0], dtype="int32"), num_samples)
    return _combine(keys, _u32(samples))


def uniform_noise(streams, index, vocab: int):
    """float32 [R, V] in (0, 1): the uniform draw of every row's tokens at position `index`."""
    step = _combine(streams, _u32(index))  # [R]
    tokens = _mix(_u32(ops.arange(1, vocab + 1, dtype="int32")))
    bits = _mix(ops.bitwise_xor(step[:, None], tokens[None, :]))
    # 23 bits, so that (x + 0.5) / 2 ** 23 is exact in float32 and never 0 or 1.
    return (ops.cast(ops.right_shift(bits, _i64(9)), "float32") + 0.5) * (1.0 / 2 ** 23)


def _is_number(x, value=None):
    return isinstance(x, (int, float)) and (value is None or x == value)


def keep_mask(log_probs, temperature, top_k=0, top_p=1.0):
    """bool [R, V]: the tokens each row may be sampled from, or None for all of them.

    The k most likely tokens (top_k 0: all), then of those the smallest set, most
    likely first, whose probability at the temperature, renormalised over them,
    reaches top_p. Python numbers for top_k and top_p choose the cheapest ops
    (no filter, or a top-k); tensors (the exported signature) always sort.

    Args:
      log_probs: float32 [R, V] (NEG_INF where a constraint forbids a token).
      temperature, top_k, top_p: Python numbers or scalar tensors.
    """
    if _is_number(top_k, 0) and _is_number(top_p, 1.0):
        return None
    vocab = log_probs.shape[-1]
    static_k = _is_number(top_k) and top_k > 0
    width = min(int(top_k), vocab) if static_k else vocab
    values, _ = ops.top_k(log_probs, k=width)  # [R, W], most likely first
    if static_k and _is_number(top_p, 1.0):  # Top-k alone: the k-th value is the threshold.
        return log_probs >= values[:, -1:]
    position = ops.arange(width, dtype="int32")[None, :]
    inside = position < width
    if not static_k and not _is_number(top_k):
        top_k = ops.cast(top_k, "int32")
        inside = position < ops.where(top_k > 0, top_k, width)
    scale = max(temperature, MIN_TEMPERATURE) if _is_number(temperature) else \
        ops.maximum(ops.cast(temperature, "float32"), MIN_TEMPERATURE)
    probs = ops.softmax(ops.where(inside, values / scale, NEG_INF), axis=-1)
    before = ops.cumsum(probs, axis=-1) - probs  # Mass of the more likely tokens.
    top_p = ops.cast(top_p, "float32")  # 1 keeps all, even where the cumsum rounds to 1.
    kept = ops.logical_and(inside, ops.logical_or(before < top_p, top_p >= 1.0))  # A prefix.
    count = ops.sum(ops.cast(kept, "int32"), axis=-1, keepdims=True)  # >= 1
    threshold = ops.take_along_axis(values, ops.maximum(count, 1) - 1, axis=1)
    return log_probs >= threshold


def _sample_step(state, next_fn, streams, temperature, top_k, top_p, eos_id, start_id,
                 allowed_fn=None):
    """One step: append a sampled token to every unfinished row."""
    ids = _last_tokens(state.seq, state.index, start_id)
    logits, cache = next_fn(ids, state.index, state.cache)
    log_probs = _step_log_probs(logits, state.index, eos_id, 0)  # [R, V]
    if allowed_fn is not None:
        log_probs = ops.where(allowed_fn(cache, state.index), log_probs, NEG_INF)
    is_pad = ops.arange(log_probs.shape[-1], dtype="int32") == PAD_ID
    candidates = ops.where(is_pad, NEG_INF, log_probs)  # Padding is not a token.
    keep = keep_mask(candidates, temperature, top_k, top_p)
    if keep is not None:
        candidates = ops.where(keep, candidates, NEG_INF)
    if not _is_number(temperature, 0):
        noise = uniform_noise(streams, state.index, log_probs.shape[-1])
        gumbel = -ops.log(-ops.log(noise))
        candidates = candidates + ops.cast(temperature, "float32") * gumbel
    tokens = ops.cast(ops.argmax(candidates, axis=-1), "int32")
    return _append_token(state, tokens, log_probs, cache, eos_id)


def sample_search(next_fn, initial_cache, streams, max_decode_length, eos_id, temperature,
                  top_k=0, top_p=1.0, start_id=0, cache_lengths=None, grow_cache=None,
                  allowed_fn=None, own_cache=None, sequence_length=None):
    """Samples one sequence per row; `greedy_search`'s contract with a random argmax.

    Args:
        next_fn: `(ids, index, cache) -> (logits, new_cache)`, ids int32 [R],
            logits float [R, V].
        initial_cache: nested tensors with leading dim R.
        streams: int64 [R], each row's random stream (`row_streams`).
        max_decode_length: L, maximum tokens generated, EOS included.
        temperature, top_k, top_p: as `keep_mask` (Python numbers or scalar tensors).
        start_id, cache_lengths, grow_cache, allowed_fn, own_cache, sequence_length:
            as in `greedy_search` (L may be an int32 scalar when `sequence_length` is given).

    Returns:
        (sequences int32 [R, L], scores float32 [R]): tokens with EOS then 0s;
        scores are the model's log-probabilities of them, summed.
    """
    def body(state):
        return _sample_step(state, next_fn, streams, temperature, top_k, top_p, eos_id,
                            start_id, allowed_fn)

    return greedy_loop(body, initial_cache, ops.shape(streams)[0], max_decode_length,
                       sequence_length, cache_lengths, grow_cache, own_cache)


def sample(model, inputs, max_decode_length: int, *, temperature, top_k=0, top_p=1.0,
           seed=0, num_samples=1, input_keys=None, constraint=None, in_place=False,
           sequence_length=None):
    """N samples per input from the model's cached decoder (the model contract only).

    The encoder runs once per input; its cross_cache and the self_cache are
    repeated for the N samples.

    Args:
      model: a model with the contract of `t2t_lite/models/contract.py`.
      inputs: int32 [B, S] source ids with EOS, 0-padded.
      temperature, top_k, top_p, seed, num_samples: Python numbers or scalar tensors.
      input_keys: int32 [B], each input's key for the noise; None: 0 .. B-1.
      constraint, in_place, sequence_length: as in `t2t_lite.decoding.search.search`.

    Returns:
      (ids int32 [B, N, L], scores float32 [B, N]), samples in order.
    """
    if input_keys is None:
        input_keys = ops.arange(ops.shape(inputs)[0], dtype="int32")
    static_length = sequence_length or max_decode_length
    self_cache, cross_cache = model.init_cache(inputs, cache_lengths(static_length)[0])
    if not _is_number(num_samples, 1):
        def repeat(x):
            return ops.repeat(x, num_samples, axis=0)
        self_cache, cross_cache, inputs = keras.tree.map_structure(
            repeat, (self_cache, cross_cache, inputs))
    next_fn, cache, growth = cached_decoder(
        model, self_cache, cross_cache, inputs, max_decode_length, constraint, in_place,
        static_length)
    streams = row_streams(seed, input_keys, num_samples)
    ids, scores = sample_search(next_fn, cache, streams, max_decode_length, EOS_ID,
                                temperature, top_k, top_p, sequence_length=static_length,
                                **growth)
    return (ops.reshape(ids, (-1, num_samples, static_length)),
            ops.reshape(scores, (-1, num_samples)))


def sample_padded(model, inputs, input_keys, options, source_bound=None):
    """`search.decode_padded` for sampling: inputs int32 [B, S], keys int32 [B] ->
    (ids [B, N, L'], scores [B, N]); L = decode_policy.max_decode_length(S, extra_length)
    and L' as `decode_padded`'s."""
    max_length, sequence_length = decode_lengths(inputs, options, source_bound)

    def run(inputs, input_keys):
        return sample(model, inputs, max_length, sequence_length=sequence_length,
                      temperature=options.sampling_temperature,
                      top_k=options.top_k, top_p=options.top_p, seed=options.seed,
                      num_samples=options.num_samples, input_keys=input_keys,
                      constraint=options.constraint, in_place=not options.jit_compile)

    shards = 1 if options.jit_compile else options.shards  # One XLA program runs one loop.
    return parallel.sharded(run, (inputs, input_keys), shards)
