"""Greedy decoding and the one-token-per-row loop it shares with sampling.

`greedy_search` takes `beam_search.beam_search`'s `next_fn` contract with
K = 1; `greedy_loop` runs a `_GreedyState` step (`_greedy_step`, or
`t2t_lite.decoding.sampling`'s random one) over the same growing cache
(`beam_search._segmented_loop`). Shapes: B batch (rows), L max decode length,
V vocabulary size.
"""

from typing import Any, NamedTuple

from keras import ops

from t2t_lite.decoding.beam_search import (
    NEG_INF,
    _last_tokens,
    _segmented_loop,
    _step_log_probs,
    _write_token,
)


class _GreedyState(NamedTuple):
    """Loop state of `greedy_search`."""

    index: Any  # int32 []: position being predicted
    seq: Any  # int32 [B, L]: tokens so far, 0 after EOS / beyond `index`
    scores: Any  # float32 [B]: sum of log-probs up to and including EOS
    finished: Any  # bool [B]: EOS already produced
    cache: Any  # nested tensors, leading dim B


def _greedy_step(state, next_fn, eos_id, min_decode_length, start_id, allowed_fn=None):
    """One greedy step: append the argmax token to every unfinished sentence."""
    ids = _last_tokens(state.seq, state.index, start_id)
    logits, cache = next_fn(ids, state.index, state.cache)
    log_probs = _step_log_probs(logits, state.index, eos_id, min_decode_length)  # [B, V]
    if allowed_fn is not None:
        log_probs = ops.where(allowed_fn(cache, state.index), log_probs, NEG_INF)
    tokens = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
    return _append_token(state, tokens, log_probs, cache, eos_id)


def _append_token(state, tokens, log_probs, cache, eos_id):
    """The `_GreedyState` after one step that chose `tokens` (int32 [B]).

    A finished row gets token 0 and no score; another row adds its token's
    log-probability from `log_probs` (float32 [B, V]) and finishes on `eos_id`.
    Shared by greedy search and sampling (`t2t_lite.decoding.sampling`).
    """
    token_log_probs = ops.take_along_axis(log_probs, tokens[:, None], axis=1)[:, 0]
    tokens = ops.where(state.finished, 0, tokens)
    return _GreedyState(
        index=state.index + 1,
        seq=_write_token(state.seq[:, None], tokens[:, None], state.index)[:, 0],
        scores=state.scores + ops.where(state.finished, 0.0, token_log_probs),
        finished=ops.logical_or(state.finished, tokens == eos_id),
        cache=cache,
    )


def greedy_search(next_fn, initial_cache, batch_size, max_decode_length, eos_id, start_id=0,
                  min_decode_length=0, cache_lengths=None, grow_cache=None, allowed_fn=None,
                  own_cache=None, sequence_length=None):
    """Greedy (argmax) decoding; `beam_search` with the same `next_fn` contract, K = 1.

    Args: as `beam_search`'s (`next_fn` gets ids int32 [B] and returns logits
        float [B, V]; leaves of `initial_cache` have leading dimension B).

    Returns:
        (sequences int32 [B, L], scores float32 [B]): tokens with EOS then 0s;
        scores are sums of log-probs (no length penalty). Stops once every
        sentence has produced EOS.
    """
    def body(state):
        return _greedy_step(state, next_fn, eos_id, min_decode_length, start_id, allowed_fn)

    return greedy_loop(body, initial_cache, batch_size, max_decode_length, sequence_length,
                       cache_lengths, grow_cache, own_cache)


def greedy_loop(body, initial_cache, rows, max_decode_length, sequence_length=None,
                cache_lengths=None, grow_cache=None, own_cache=None):
    """The loop of one token per row (greedy and sampling): `body(state) -> state` on a
    `_GreedyState` of `rows` rows until every row has its EOS or L tokens.

    Returns (sequences int32 [rows, sequence_length or L], scores float32 [rows]).
    """
    sequence_length = sequence_length or max_decode_length  # The static one.
    state = _GreedyState(
        index=ops.convert_to_tensor(0, "int32"),
        seq=ops.zeros((rows, sequence_length), "int32"),
        scores=ops.zeros((rows,), "float32"),
        finished=ops.zeros((rows,), "bool"),
        cache=initial_cache,
    )

    def cond(state):
        not_done = ops.logical_not(ops.all(state.finished))
        return ops.logical_and(state.index < max_decode_length, not_done)

    state = _segmented_loop(cond, body, state, sequence_length, cache_lengths, grow_cache,
                            own_cache)
    return state.seq, state.scores
