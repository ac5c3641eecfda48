"""The decoder stack's step over grouped beams: no cache reordering, no repeated keys.

A beam search keeps K hypotheses per sentence. The plain cached step treats the
B*K rows as unrelated sequences: the encoder's keys and values are repeated K
times, and when the beams are reselected every self-attention cache is gathered
into the new beam order, a copy of the whole [B*K, H, L, d] cache every step
(about an eighth of a step without XLA; README, "Grouped beams").

Here the K beams of a sentence share their caches instead:
- encoder-decoder attention reads one [B, H, S, d] copy of the keys and values,
  the K queries of a sentence side by side ([B, H, K, d] x [B, H, S, d]);
- the self-attention cache is [B, H, K, L, d]: slot k holds, at each position,
  what the beam then in slot k wrote there. Slots are never reordered: the
  search keeps each beam's ancestry int32 [B, K, L] (which slot holds its
  position t) and reorders only that; a beam attends over all K x L rows of
  its sentence, masked to the rows of its own history.

Every beam reads exactly the keys and values the plain step's reordered cache
would give it, so the scores equal the plain step's up to the order of float
sums (`tests/test_grouped_beams.py`). Shapes: B batch, K beams, H heads, L cache
positions, S source length, D d_model, V target vocabulary.
"""

from __future__ import annotations

import keras
from keras import ops


class GroupedBeamsMixin:
    """`beam_self_cache`, `grow_beam_cache` and `decode_beams_step` for a
    Transformer-like model with `decoder_layers`, `target_embedding`,
    `target_dropout`, `_embed` and `_logits` (`t2t_lite.models.transformer.Transformer`)."""

    # The cached decoder the grouped step mirrors: a subclass that changes one keeps the plain step.
    MIRRORED = ("init_cache", "_init_cache_from", "decode_step", "_decode_layers_step")

    def decodes_grouped_beams(self):
        """True unless a subclass changes the cached decoder (the Transformer's)."""
        cls = type(self)
        base = next(c for c in cls.__mro__ if GroupedBeamsMixin in c.__bases__)
        return all(getattr(cls, name) is getattr(base, name) for name in self.MIRRORED)

    @staticmethod
    def beam_self_cache(self_cache, beam_size):
        """The `init_cache` self_cache [B, H, L, d] per layer as K slots [B, H, K, L, d]."""
        def slots(x):
            return ops.repeat(ops.expand_dims(x, 2), beam_size, axis=2)
        return keras.tree.map_structure(slots, self_cache)

    @staticmethod
    def grow_beam_cache(self_cache, length):
        """Pads the slot caches [B, H, K, l, d] with zeros to `length` positions."""
        def pad(x):
            return ops.pad(x, [[0, 0], [0, 0], [0, 0], [0, length - x.shape[3]], [0, 0]])
        return keras.tree.map_structure(pad, self_cache)

    def decode_beams_step(self, ids, index, self_cache, cross_cache, ancestry, in_place=False):
        """One cached decoder step of the K beams of each sentence.

        Args:
          ids: int [B*K], the token of beam k of sentence b at position `index - 1`
            in row b * K + k (0 = start at index 0).
          index: int32 scalar, the position being predicted.
          self_cache: per decoder layer {"key": [B, H, K, L, d_k], "value": ...}
            (`beam_self_cache`, `grow_beam_cache` or the previous step).
          cross_cache: `init_cache`'s, not repeated ([B, H, S, d] per layer).
          ancestry: int32 [B, K, L]: the slot holding position t of beam k's
            history for t <= index (k itself at `index`, where this step writes).
          in_place: write the self_cache in place, as `decode_step`'s.

        Returns:
          (float32 logits [B*K, V] for position `index`, updated self_cache).
        """
        beam_size, length = ancestry.shape[1], ancestry.shape[2]
        x = self._embed(ops.expand_dims(ids, 1), self.target_embedding,
                        self.target_dropout, False, start_index=index)
        slots = ops.reshape(ops.arange(beam_size, dtype="int32"), (1, 1, beam_size, 1))
        own = ops.expand_dims(ops.cast(ancestry, "int32"), 2) == slots  # [B, K, K, L]
        own = ops.logical_and(own, ops.arange(length) <= index)
        self_mask = ops.reshape(own, (-1, 1, beam_size, beam_size * length))
        cross_mask = ops.expand_dims(cross_cache["input_mask"], 1)  # [B, 1, 1, S]
        new_self_cache = []
        for layer, own_cache, cross in zip(self.decoder_layers, self_cache,
                                           cross_cache["layers"]):
            x, new = layer.beams_step(x, beam_size, {"self": own_cache, "cross": cross}, index,
                                      self_mask, cross_mask, in_place)
            new_self_cache.append(new)
        return self._logits(x)[:, 0, :], new_self_cache
