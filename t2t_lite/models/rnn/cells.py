"""Recurrent building blocks of the RNN baselines: cells, their stacks, masks, reversal.

Keras' own layers do the recurrence: `keras.layers.LSTM` / `GRU` read a whole
(masked) source, `keras.layers.LSTMCell` / `GRUCell` take one decoder step.
A cell's state is a list: [h, c] for an LSTM, [h] for a GRU; a stack's state
is one such list per layer, bottom first. Only `keras.ops`.
Shapes: B batch, S source length, D state size (d_model).
"""

from __future__ import annotations

import keras
from keras import ops

from t2t_lite.ids import PAD_ID

CELLS = ("lstm", "gru")


def check_cell(rnn_cell: str) -> str:
    """`rnn_cell`, if it names a cell Keras has here; else ValueError."""
    if rnn_cell not in CELLS:
        raise ValueError(f"rnn_cell must be one of {', '.join(CELLS)}, not {rnn_cell!r}")
    return rnn_cell


def make_rnn(rnn_cell: str, units: int, name: str, dtype=None, go_backwards=False):
    """A whole-sequence RNN layer returning (outputs [B, S, D], *final state)."""
    layer = keras.layers.LSTM if check_cell(rnn_cell) == "lstm" else keras.layers.GRU
    return layer(units, return_sequences=True, return_state=True, go_backwards=go_backwards,
                 name=name, dtype=dtype)


def make_cell(rnn_cell: str, units: int, name: str, dtype=None):
    """One step of an RNN: `cell(x [B, in], state) -> (h [B, D], new state)`."""
    cell = keras.layers.LSTMCell if check_cell(rnn_cell) == "lstm" else keras.layers.GRUCell
    return cell(units, name=name, dtype=dtype)


def stack_step(cells, x, states):
    """One step of a stack of cells: x [B, in] -> (top h [B, D], the new states).

    Layer l reads layer l - 1's new h (the first reads x).
    """
    new_states = []
    for cell, state in zip(cells, states):
        x, state = cell(x, list(state))
        new_states.append(list(state) if isinstance(state, (list, tuple)) else [state])
    return x, new_states


def zero_state(rnn_cell: str, batch, units: int, dtype):
    """The zero state of one cell: [h, c] (LSTM) or [h] (GRU), each [B, D]."""
    zeros = ops.zeros((batch, units), dtype)
    return [zeros, zeros] if rnn_cell == "lstm" else [zeros]


def top_output(states):
    """h [B, D] of the stack's top layer."""
    return states[-1][0]


def source_mask(inputs):
    """int [B, S] ids -> bool [B, S]: True at tokens, False at padding."""
    return ops.not_equal(inputs, PAD_ID)


def reversal_index(mask):
    """bool [B, S] -> int32 [B, S]: where each position reads from when the words
    of a row (its tokens before the last, EOS) are reversed; EOS and padding stay.

    The permutation is its own inverse.
    """
    lengths = ops.sum(ops.cast(mask, "int32"), axis=1, keepdims=True)  # [B, 1]
    words = ops.maximum(lengths - 1, 0)
    positions = ops.arange(ops.shape(mask)[1], dtype="int32")[None, :]
    return ops.where(positions < words, words - 1 - positions, positions)


def gather_positions(x, index):
    """x [B, S] or [B, S, D], index int32 [B, S] -> x[b, index[b, i]] of the same shape."""
    if len(x.shape) == 2:
        return ops.take_along_axis(x, ops.cast(index, "int32"), axis=1)
    shape = ops.shape(x)
    rows = ops.arange(shape[0], dtype="int32")[:, None] * shape[1] + index
    return ops.take(ops.reshape(x, (-1, shape[2])), rows, axis=0)
