"""Beam search with static shapes, written with `keras.ops` (greedy: `greedy.py`).

Beam search as used by the Transformer (Vaswani et al. 2017, section 6.1):
beam size K, hypotheses ranked by log-probability divided by the GNMT length
penalty ((5 + length) / 6) ** alpha (Wu et al. 2016), and early termination
when no alive hypothesis can still win. The scheme follows tensor2tensor's
`beam_search.py`: every step the top 2K candidates are formed from the K alive
beams; those ending in EOS may enter the K "finished" beams, the best K others
stay "alive". The helper layout follows flax `examples/wmt/decode.py`.

Only `keras.ops` is used (no backend calls) and every loop-state tensor has a
fixed shape, so the decoders run eagerly or inside `tf.function`. Shape notation:
B batch, K beam size, L max decode length, V vocabulary size.
"""

from typing import Any, NamedTuple

import keras
from keras import ops

NEG_INF = -1.0e9  # large finite negative: masked log-probs / empty slots
_VALID = 0.5 * NEG_INF  # scores below this come from masked candidates


def length_penalty(length, alpha):
    """GNMT length penalty ((5 + length) / 6) ** alpha  (float32)."""
    length = ops.cast(length, "float32")
    return ops.power((5.0 + length) / 6.0, ops.cast(alpha, "float32"))


def _expand_to_beam_size(x, beam_size):
    """Tiles x [B, ...] to [B, K, ...]."""
    x = ops.expand_dims(x, 1)
    return ops.tile(x, [1, beam_size] + [1] * (len(x.shape) - 2))


def _flatten_beam_dim(x):
    """Reshapes x [B, K, ...] to [B*K, ...] (trailing dimensions static or not)."""
    return ops.reshape(x, (-1,) + tuple(ops.shape(x)[2:]))


def _unflatten_beam_dim(x, beam_size):
    """Reshapes x [B*K, ...] to [B, K, ...] (trailing dimensions static or not)."""
    return ops.reshape(x, (-1, beam_size) + tuple(ops.shape(x)[1:]))


def gather_beams(x, beam_indices):
    """Picks beams: x [B, K_old, ...], beam_indices int32 [B, K_new] -> [B, K_new, ...]."""
    old_beams = x.shape[1]
    offsets = ops.arange(ops.shape(x)[0], dtype="int32")[:, None] * old_beams
    return ops.take(_flatten_beam_dim(x), offsets + beam_indices, axis=0)


def _write_token(seq, tokens, index):
    """Writes tokens [B, N] at position `index` of seq int32 [B, N, L]."""
    positions = ops.arange(seq.shape[-1], dtype="int32")
    return ops.where(positions == index, ops.expand_dims(tokens, -1), seq)


def _last_tokens(seq, index, start_id):
    """Token before position `index` of seq [..., L]; start_id at index 0."""
    prev = ops.take(seq, ops.maximum(index - 1, 0), axis=-1)
    return ops.where(index == 0, ops.cast(start_id, "int32"), prev)


def _step_log_probs(logits, index, eos_id, min_decode_length):
    """float32 log-softmax of logits [..., V]; EOS masked while index + 1 < min length."""
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    is_eos = ops.arange(log_probs.shape[-1], dtype="int32") == eos_id
    forbid = ops.logical_and(is_eos, index + 1 < min_decode_length)
    return ops.where(forbid, NEG_INF, log_probs)


class _BeamState(NamedTuple):
    """Loop state of `beam_search`."""

    index: Any  # int32 []: position being predicted (= tokens generated so far)
    alive_seq: Any  # int32 [B, K, L]: alive hypotheses, 0 beyond `index`
    alive_log_probs: Any  # float32 [B, K]: sum of log-probs, best first
    finished_seq: Any  # int32 [B, K, L]: hypotheses ended by EOS, 0 after it
    finished_scores: Any  # float32 [B, K]: length-penalized, best first
    finished_flags: Any  # bool [B, K]: slot holds a real finished hypothesis
    cache: Any  # nested tensors, leading dim B*K, aligned with alive_seq


def _tile_beams(cache, beam_size):
    """Every leaf [B, ...] repeated for the K beams: [B*K, ...], rows b * K + k."""
    return keras.tree.map_structure(
        lambda x: _flatten_beam_dim(_expand_to_beam_size(x, beam_size)), cache)


def _reorder_beams(cache, parents, beam_size):
    """Every leaf [B*K, ...] gathered to the beams' new order (parents int32 [B, K])."""
    return keras.tree.map_structure(
        lambda x: _flatten_beam_dim(gather_beams(_unflatten_beam_dim(x, beam_size), parents)),
        cache)


def _init_state(initial_cache, batch_size, beam_size, sequence_length, tile_cache):
    """Initial `_BeamState`: one live beam (log-prob 0) per sentence, K-1 dead."""
    shape = (batch_size, beam_size)
    first = ops.where(ops.arange(beam_size) == 0, 0.0, NEG_INF)
    return _BeamState(
        index=ops.convert_to_tensor(0, "int32"),
        alive_seq=ops.zeros(shape + (sequence_length,), "int32"),
        alive_log_probs=ops.cast(ops.broadcast_to(first, shape), "float32"),
        finished_seq=ops.zeros(shape + (sequence_length,), "int32"),
        finished_scores=ops.full(shape, NEG_INF, "float32"),
        finished_flags=ops.zeros(shape, "bool"),
        cache=tile_cache(initial_cache, beam_size),
    )


TOP_K_CHUNK = 128  # Entries per chunk in `_top_k_rows`.


def _top_k_rows(x, k, vocab):
    """Top k of each row of x float32 [N, V]: (values [N, k], int32 indices [N, k]).

    `vocab` is V, a Python int (the static width of x).

    A row's k largest entries lie in the k chunks (of TOP_K_CHUNK entries) whose
    maxima are largest, so one pass of chunk maxima and a top-k over k chunks
    replace a top-k over all V entries, which is several times slower on CPU
    for V in the tens of thousands.
    """
    if vocab < 4 * k * TOP_K_CHUNK:  # Few chunks per candidate: a plain top-k is as fast.
        values, indices = ops.top_k(x, k=k)
        return values, ops.cast(indices, "int32")
    padding = -vocab % TOP_K_CHUNK
    if padding:
        x = ops.pad(x, [[0, 0], [0, padding]], constant_values=NEG_INF)
    num_chunks = (vocab + padding) // TOP_K_CHUNK
    chunks = ops.reshape(x, (-1, num_chunks, TOP_K_CHUNK))
    _, best_chunks = ops.top_k(ops.max(chunks, axis=-1), k=k)  # [N, k]
    best_chunks = ops.cast(best_chunks, "int32")
    candidates = gather_beams(chunks, best_chunks)  # [N, k, chunk]
    values, position = ops.top_k(ops.reshape(candidates, (-1, k * TOP_K_CHUNK)), k=k)
    position = ops.cast(position, "int32")
    chunk = ops.take_along_axis(best_chunks, position // TOP_K_CHUNK, axis=1)
    return values, chunk * TOP_K_CHUNK + position % TOP_K_CHUNK


def _grow_topk(state, next_fn, beam_size, vocab_size, eos_id, min_decode_length, start_id,
               allowed_fn=None):
    """Scores all K*V extensions; returns the top 2K as (seq, log_probs, beam, cache).

    Two stages with the result of a top-2K over all K*V log-probs: each beam's
    top 2K tokens hold every candidate of the final top 2K, so neither the
    log_softmax nor a K*V-wide top-k is materialized (log-probs are logits minus
    their row's logsumexp). A forbidden EOS is masked among the 2K, which
    leaves at least 2K - 1 >= K tokens per beam for the K alive hypotheses.
    Tokens that `allowed_fn` forbids are masked after normalization: the
    allowed ones keep the model's log-probabilities (see `beam_search`).
    """
    ids = _flatten_beam_dim(_last_tokens(state.alive_seq, state.index, start_id))
    logits, cache = next_fn(ids, state.index, state.cache)
    logits = ops.cast(logits, "float32")  # [B*K, V]
    vocab = vocab_size or logits.shape[-1]
    per_beam = min(2 * beam_size, vocab)
    candidates = logits
    if allowed_fn is not None:
        candidates = ops.where(allowed_fn(cache, state.index), logits, NEG_INF)
    top_logits, top_tokens = _top_k_rows(candidates, per_beam, vocab)  # [B*K, k']
    log_probs = top_logits - ops.logsumexp(logits, axis=-1, keepdims=True)
    forbid = ops.logical_and(top_tokens == eos_id, state.index + 1 < min_decode_length)
    log_probs = ops.where(forbid, NEG_INF, log_probs)
    log_probs = _unflatten_beam_dim(log_probs, beam_size)
    log_probs = log_probs + ops.expand_dims(state.alive_log_probs, -1)  # [B, K, k']
    flat = ops.reshape(log_probs, (-1, beam_size * per_beam))
    topk_log_probs, position = ops.top_k(flat, k=2 * beam_size)  # [B, 2K]
    position = ops.cast(position, "int32")
    topk_beams = ops.floor_divide(position, per_beam)
    topk_tokens = ops.take_along_axis(
        ops.reshape(top_tokens, (-1, beam_size * per_beam)), position, axis=1)
    topk_seq = gather_beams(state.alive_seq, topk_beams)
    topk_seq = _write_token(topk_seq, topk_tokens, state.index)
    return topk_seq, topk_log_probs, topk_beams, cache


def _beam_step(state, next_fn, beam_size, vocab_size, alpha, eos_id, min_decode_length,
               start_id, allowed_fn=None, reorder_cache=_reorder_beams):
    """One decoding step: grow top-2K candidates, then the alive and finished sets."""
    topk_seq, topk_log_probs, topk_beams, cache = _grow_topk(
        state, next_fn, beam_size, vocab_size, eos_id, min_decode_length, start_id, allowed_fn)
    new_tokens = ops.take(topk_seq, state.index, axis=-1)  # [B, 2K]
    is_eos = new_tokens == eos_id
    # Grow alive: best K candidates not ending in EOS (at most K of 2K do).
    alive_scores = ops.where(is_eos, NEG_INF, topk_log_probs)
    alive_log_probs, alive_idx = ops.top_k(alive_scores, k=beam_size)
    alive_idx = ops.cast(alive_idx, "int32")
    parents = ops.take_along_axis(topk_beams, alive_idx, axis=1)  # [B, K]
    cache = reorder_cache(cache, parents, beam_size)
    # Grow finished: merge old finished with new EOS candidates, keep best K.
    new_flags = ops.logical_and(is_eos, topk_log_probs > _VALID)
    new_scores = topk_log_probs / length_penalty(state.index + 1, alpha)
    new_scores = ops.where(new_flags, new_scores, NEG_INF)
    all_scores = ops.concatenate([state.finished_scores, new_scores], axis=1)
    all_flags = ops.concatenate([state.finished_flags, new_flags], axis=1)
    all_seq = ops.concatenate([state.finished_seq, topk_seq], axis=1)
    finished_scores, fin_idx = ops.top_k(all_scores, k=beam_size)
    fin_idx = ops.cast(fin_idx, "int32")
    return _BeamState(
        index=state.index + 1,
        alive_seq=gather_beams(topk_seq, alive_idx),
        alive_log_probs=alive_log_probs,
        finished_seq=gather_beams(all_seq, fin_idx),
        finished_scores=finished_scores,
        finished_flags=ops.take_along_axis(all_flags, fin_idx, axis=1),
        cache=cache,
    )


def _is_not_finished(state, max_decode_length, alpha, best_only=False):
    """Loop condition: index < L and some sentence is not `sentence_done`."""
    done = ops.all(sentence_done(state, max_decode_length, alpha, best_only))
    return ops.logical_and(state.index < max_decode_length, ops.logical_not(done))


def sentence_done(state, max_decode_length, alpha, best_only=False):
    """bool [B]: no alive beam of the sentence can still win.

    An alive beam can at best reach its log-prob over the length penalty at L.
    Done: that bound is below the worst finished score (an empty slot is
    NEG_INF; t2t's stop_early=False), so none of the K returned changes; with
    `best_only`, below the best one (t2t's default): only the first is exact.
    """
    best_alive = state.alive_log_probs[:, 0] / length_penalty(max_decode_length, alpha)
    finished = ops.where(state.finished_flags, state.finished_scores, NEG_INF)
    bar = finished[:, 0] if best_only else ops.min(finished, axis=1)  # Sorted best first.
    return bar > best_alive


def beam_search(next_fn, initial_cache, batch_size, beam_size, max_decode_length, eos_id,
                alpha=0.6, vocab_size=None, min_decode_length=0, start_id=0,
                cache_lengths=None, grow_cache=None, allowed_fn=None, own_cache=None,
                tile_cache=_tile_beams, reorder_cache=_reorder_beams, best_only=False,
                sequence_length=None, between_segments=None):
    """Beam search decoding (Vaswani et al. 2017, section 6.1; tensor2tensor).

    Args:
        next_fn: `(ids, index, cache) -> (logits, new_cache)`: ids int32 [B*K]
            (previous tokens, batch-major, start_id at index 0), index int32
            scalar (position being predicted), logits float [B*K, V] unnormalized.
        initial_cache: nested structure of tensors with leading dim B; tiled
            to B*K and reordered along with the beams.
        batch_size: B (Python int, or a scalar tensor in graph mode).
        beam_size: K (Python int).
        max_decode_length: L, maximum tokens generated, EOS included (a scalar
            tensor when `sequence_length` is given).
        eos_id: end-of-sequence token id.
        alpha: length penalty exponent (0 ranks by plain log-probability).
        vocab_size: V; read from the logits' static shape when None.
        min_decode_length: EOS is forbidden while fewer than this many tokens
            (EOS included) would result.
        start_id: token fed at index 0.
        cache_lengths, grow_cache: a cache that grows in segments (see
            `_segmented_loop`); by default the loop runs once over L steps.
        own_cache, between_segments: optional `cache -> cache` and `state ->
            state` hooks of `_segmented_loop`.
        allowed_fn: optional `(cache, index) -> bool [B*K, V]`, called on the
            cache `next_fn` returned: the tokens each beam may take next (a
            constrained search, e.g. `t2t_lite.parsing.tree_constraint`). Forbidden
            tokens get NEG_INF after the log-softmax, so allowed tokens keep the
            model's log-probabilities (no renormalization) and a search whose
            candidates the mask never removes is exactly the unconstrained one.
            Every alive beam must have an allowed token at every step.
        tile_cache, reorder_cache: `(cache, K)` -> the beams' first cache, `(cache,
            parents int32 [B, K], K)` -> the reselected beams' (default: B*K rows).
        best_only: stop once the best is final (the other K - 1 may be worse).
        sequence_length: static length (>= L, default L) of the sequences returned.

    Returns:
        (sequences int32 [B, K, L], scores float32 [B, K]), best first. A
        sequence holds its EOS and 0 (pad) afterwards. Scores are log-prob /
        length_penalty(length). A sentence without any finished hypothesis
        returns its alive beams scored at length L; if only some of the K
        finished slots are filled, the rest hold zeros and a score of ~-1e9.
    """
    sequence_length = sequence_length or max_decode_length  # The static one.
    state = _init_state(initial_cache, batch_size, beam_size, sequence_length, tile_cache)

    def cond(state):
        return _is_not_finished(state, max_decode_length, alpha, best_only)

    def body(state):
        return _beam_step(state, next_fn, beam_size, vocab_size, alpha, eos_id,
                          min_decode_length, start_id, allowed_fn, reorder_cache)

    state = _segmented_loop(cond, body, state, sequence_length, cache_lengths, grow_cache,
                            own_cache, between_segments)
    return finalize(state, alpha)


def _segmented_loop(cond, body, state, sequence_length, cache_lengths, grow_cache,
                    own_cache=None, between_segments=None):
    """Runs `body` while `cond`, the cache growing between segments.

    With `cache_lengths` = [l_1 < l_2 < ... = L] the loop runs while index < l_1
    on a cache of l_1 positions, then `grow_cache(cache, l_2)` pads it, and so
    on: one static-shape loop per segment, none attending over all L slots from
    the first step. `own_cache` maps the initial cache (buffers a loop writing
    in place alone holds; growth and reordering give fresh ones);
    `between_segments` the state before each growth (e.g. dropping finished ones).
    """
    lengths = list(cache_lengths or [sequence_length])
    if lengths[-1] != sequence_length or lengths != sorted(set(lengths)):
        raise ValueError(f"cache_lengths must increase to {sequence_length}: {lengths}")
    for segment, length in enumerate(lengths):
        if segment:
            if between_segments is not None:
                state = between_segments(state)
            state = state._replace(cache=grow_cache(state.cache, length))
        elif own_cache is not None:  # A grown cache is a fresh buffer already.
            state = state._replace(cache=own_cache(state.cache))

        def segment_cond(state, length=length):
            return ops.logical_and(cond(state), state.index < length)

        (state,) = ops.while_loop(segment_cond, lambda state: (body(state),), (state,))
    return state


def finalize(state, alpha):
    """Returns finished beams, or alive beams for sentences with none finished."""
    any_finished = ops.any(state.finished_flags, axis=1)  # [B]
    alive_scores = state.alive_log_probs / length_penalty(state.index, alpha)
    seqs = ops.where(any_finished[:, None, None], state.finished_seq, state.alive_seq)
    scores = ops.where(any_finished[:, None], state.finished_scores, alive_scores)
    return seqs, scores
