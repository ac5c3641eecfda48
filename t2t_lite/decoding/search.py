"""The search glue: beam search (or greedy) over a model's cached decoder.

Only the model contract (`t2t_lite/models/contract.py`) is used: `init_cache`,
`decode_step`, `grow_self_cache`, `target_vocab_size`. The maximum output
length (padded source length + `extra_length`; section 6.1: input length + 50)
follows `t2t_lite.decoding.decode_policy`, as the exported SavedModel does.
Shapes: B batch, S source length, K beam size, L maximum decode length.
"""

from __future__ import annotations

import functools

import keras
from keras import ops

from t2t_lite.decoding import beam_search, decode_policy, greedy, parallel
from t2t_lite.ids import EOS_ID


FIRST_CACHE_LENGTH = 16


def cache_lengths(max_decode_length: int) -> list[int]:
    """Self-attention cache sizes the search grows through: 16, 32, ... below L, then L."""
    lengths, length = [], FIRST_CACHE_LENGTH
    while length < max_decode_length:
        lengths.append(length)
        length *= 2
    return lengths + [max_decode_length]


def search(model, inputs, beam_size: int, alpha: float, max_decode_length: int,
           min_decode_length: int = 0, constraint=None, in_place: bool = False,
           grouped: bool = False, best_only: bool = False, sequence_length: int | None = None):
    """Beam search (greedy for beam 1) over the model's cached decoder.

    Uses only the model contract (`t2t_lite/models/contract.py`). The cross_cache
    (e.g. encoder-decoder keys and values) is computed once and repeated for the
    K beams; the self_cache grows 16, 32, ... L positions, and is reordered when
    beams are reselected (`grouped` changes both).

    A `constraint` masks the tokens it forbids (`cached_decoder`); None
    (translation) runs the plain search.

    Args:
      model: a model with the contract of `t2t_lite/models/contract.py`.
      inputs: int32 [B, S] source ids with EOS, 0-padded.
      in_place: a model with the `in_place_cache` capability writes its
        self_cache in place when traced in a TensorFlow graph; never under XLA.
      grouped: a beam search (K > 1, no constraint) over a model that
        `decodes_grouped_beams()` runs its K beams as a group
        (`t2t_lite.layers.beam_decoder`): the cross_cache is not repeated and
        the self_cache is never reordered (faster without XLA, slower with it:
        README, "Grouped beams"), and, in place, finished sentences leave the
        batch (`t2t_lite.decoding.compaction`). False: the plain search.
      best_only, sequence_length: as `beam_search.beam_search`'s (L may then be
        a tensor: one traced search serves every source length, `decode_padded`).

    Returns:
      (ids int32 [B, K, L], scores float32 [B, K]), best first; K = 1 for greedy.
    """
    static_length = sequence_length or max_decode_length
    self_cache, cross_cache = model.init_cache(inputs, cache_lengths(static_length)[0])
    grouped = (grouped and beam_size > 1 and constraint is None
               and model.capabilities.grouped_beams)
    compaction = None
    if grouped:
        next_fn, self_cache, growth = grouped_beams_decoder(
            model, self_cache, cross_cache, beam_size, static_length, in_place)
        if in_place and keras.backend.backend() == "tensorflow":  # Shapes may change.
            from t2t_lite.decoding.compaction import Compaction  # TensorFlow's alone.

            compaction = growth["between_segments"] = Compaction(
                ops.shape(inputs)[0], max_decode_length, alpha, best_only)
    else:
        if beam_size > 1:  # Rows b * K + k, as beam_search flattens them.
            cross_cache = keras.tree.map_structure(
                lambda x: ops.repeat(x, beam_size, axis=0), cross_cache)
        next_fn, self_cache, growth = cached_decoder(
            model, self_cache, cross_cache, inputs, max_decode_length, constraint, in_place,
            static_length)
    growth.update(min_decode_length=min_decode_length, sequence_length=static_length)
    batch = ops.shape(inputs)[0]
    if beam_size == 1:
        ids, scores = greedy.greedy_search(
            next_fn, self_cache, batch, max_decode_length, EOS_ID, **growth)
        return ids[:, None, :], scores[:, None]
    ids, scores = beam_search.beam_search(
        next_fn, self_cache, batch, beam_size, max_decode_length, EOS_ID, alpha=alpha,
        vocab_size=model.target_vocab_size, best_only=best_only, **growth)
    return (ids, scores) if compaction is None else compaction.merge(ids, scores)


def _step(step, in_place: bool):
    """The model's step, asked to write its self_cache in place when `in_place`."""
    return functools.partial(step, in_place=True) if in_place else step


def _own_cache(model, in_place: bool):
    """The model's `own_self_cache` when the search writes in place and the model declares it."""
    return model.own_self_cache if in_place and model.capabilities.in_place_cache else None


def cached_decoder(model, self_cache, cross_cache, inputs, max_decode_length, constraint=None,
                   in_place: bool = False, sequence_length: int | None = None):
    """The callbacks a search (beam, greedy or sampling) runs over the model's cached decoder.

    A `constraint` (`initial_state(inputs)`, `update(state, ids)`,
    `allowed(state, index, L)`, as `t2t_lite.parsing.tree_constraint.TreeConstraint`)
    keeps its per-row state beside the self_cache, updates it with each row's
    last token, lets its optional `adjust_logits(state, logits)` change the
    model's logits, and masks the tokens it forbids (`allowed_fn`); None runs
    the plain decoder.

    Args:
      self_cache, cross_cache: `model.init_cache`'s, rows already repeated as
        the search's rows are (the cross_cache for beams; both for samples).
      inputs: int32 [rows, S], the source of each self_cache row (for the constraint).
      in_place: the search writes the self_cache in place (`search`): the
        growth gets `own_cache`, the model's `own_self_cache`, if it has one.
      sequence_length: the static bound of a max_decode_length tensor (`search`).

    Returns:
      (next_fn, initial cache, dict(cache_lengths=, grow_cache=[, allowed_fn=, own_cache=])).
    """
    growth = dict(cache_lengths=cache_lengths(sequence_length or max_decode_length),
                  grow_cache=model.grow_self_cache)
    own = _own_cache(model, in_place)
    step = _step(model.decode_step, own is not None)
    if own is not None:
        growth["own_cache"] = own
    if constraint is None:
        def next_fn(ids, index, cache):
            return step(ids, index, cache, cross_cache)
        return next_fn, self_cache, growth
    adjust = getattr(constraint, "adjust_logits", None)

    def constrained_next_fn(ids, index, cache):
        model_cache, state = cache
        logits, model_cache = step(ids, index, model_cache, cross_cache)
        state = constraint.update(state, ids)
        return (adjust(state, logits) if adjust else logits), (model_cache, state)

    if own is not None:
        growth["own_cache"] = lambda cache: (own(cache[0]), cache[1])
    growth.update(
        grow_cache=lambda cache, n: (model.grow_self_cache(cache[0], n), cache[1]),
        allowed_fn=lambda cache, index: constraint.allowed(
            cache[1], index, max_decode_length))
    return constrained_next_fn, (self_cache, constraint.initial_state(inputs)), growth


def grouped_beams_decoder(model, self_cache, cross_cache, beam_size: int,
                          max_decode_length: int, in_place: bool = False):
    """`cached_decoder` for a beam search over grouped beams (`search`'s `grouped`).

    The loop's cache is (the model's K-slot self_cache, ancestry int32 [B, K, l],
    cross_cache): `next_fn` marks position `index` of every beam as its own
    slot's, and the search reorders only the ancestry when it reselects beams
    (`t2t_lite.layers.beam_decoder`). `self_cache` and `cross_cache` are
    `init_cache`'s, neither repeated, so every leaf of the cache has the
    sentences as its leading dimension (`t2t_lite.decoding.compaction`).

    Returns:
      (next_fn, initial cache, dict(cache_lengths=, grow_cache=, tile_cache=,
      reorder_cache=[, own_cache=])).
    """
    lengths = cache_lengths(max_decode_length)
    own = _own_cache(model, in_place)
    step = _step(model.decode_beams_step, own is not None)
    batch = ops.shape(cross_cache["input_mask"])[0]
    slots = ops.reshape(ops.arange(beam_size, dtype="int32"), (1, beam_size, 1))
    ancestry = ops.zeros((batch, beam_size, lengths[0]), "int32")

    def next_fn(ids, index, cache):
        slot_cache, ancestry, cross = cache
        ancestry = ops.where(ops.arange(ancestry.shape[-1]) == index, slots, ancestry)
        logits, slot_cache = step(ids, index, slot_cache, cross, ancestry)
        return logits, (slot_cache, ancestry, cross)

    def grow_cache(cache, length):
        slot_cache, ancestry, cross = cache
        padding = [[0, 0], [0, 0], [0, length - ancestry.shape[-1]]]
        return model.grow_beam_cache(slot_cache, length), ops.pad(ancestry, padding), cross

    def reorder_cache(cache, parents, beam_size):
        return cache[0], beam_search.gather_beams(cache[1], parents), cache[2]

    growth = dict(cache_lengths=lengths, grow_cache=grow_cache,
                  tile_cache=lambda cache, beam_size: cache, reorder_cache=reorder_cache)
    if own is not None:
        growth["own_cache"] = lambda cache: (own(cache[0]),) + cache[1:]
    return next_fn, (model.beam_self_cache(self_cache, beam_size), ancestry, cross_cache), growth


def decode_lengths(inputs, options, source_bound: int | None = None):
    """(L, static sequence length or None) for a padded batch inputs int32 [B, S].

    L = decode_policy.max_decode_length(S, extra_length): a Python int when S
    is static. A batch traced with an unknown S (one function for every padded
    length, `t2t_lite.decoding.decoder.Decoder`) gets L as an int32 scalar and
    the static length of the padded length `source_bound` no batch exceeds.
    """
    if inputs.shape[1] is not None:
        return decode_policy.max_decode_length(inputs.shape[1], options.extra_length), None
    if source_bound is None:
        raise ValueError("a batch of unknown source length needs its source_bound")
    return (decode_policy.max_decode_length(ops.shape(inputs)[1], options.extra_length),
            decode_policy.max_decode_length(source_bound, options.extra_length))


def decode_padded(model, inputs, options, source_bound: int | None = None):
    """inputs int32 [B, S] (S a padded source length) -> (ids [B, K, L'], scores [B, K]).

    The search of `t2t_lite.decoding.decoder.Decoder` and of the exported SavedModel alike:
    L = decode_policy.max_decode_length(S, extra_length) output positions are
    searched; L' is L, or, for a batch traced with an unknown S, the decode
    length of `source_bound` (`decode_lengths`; positions past L hold 0). Only
    the best beam is searched to the end unless `options.return_beams`
    (`search`'s `best_only`). Without XLA the self_cache is written in place,
    the beams are grouped (`search`'s `in_place` and `grouped`) and the batch is
    decoded as `options.shards` searches side by side (`t2t_lite.decoding.parallel`).
    """
    max_length, sequence_length = decode_lengths(inputs, options, source_bound)
    without_xla = not options.jit_compile

    def run(inputs):
        return search(model, inputs, options.beam_size, options.alpha, max_length,
                      constraint=options.constraint, in_place=without_xla, grouped=without_xla,
                      best_only=not options.return_beams, sequence_length=sequence_length)

    # One XLA program runs one loop at a time: its searches would not overlap.
    return parallel.sharded(run, (inputs,), options.shards if without_xla else 1)
