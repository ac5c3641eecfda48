"""Registered hparams sets of the RNN baselines (t2t_lite.models.rnn): Multi30k and tiny.

The Multi30k sets match `multi30k`'s (the Transformer's) data, batching,
schedule and budget of 30-60 CPU minutes, so the lecture's comparison is of
architectures: d_model 256 is every RNN's state size (per direction in
Bahdanau's encoder), num_layers the depth of the encoder and of the decoder.
Equation 3's learning rate is halved (a peak near 1e-3, Adam's usual rate for
LSTMs; the trainer clips no gradients). The tiny sets are for tests and demos.
Every set is `base().replace(...)` through one of two helpers (`model` and the RNN
config's fields, `t2t_lite.models.rnn.config`, by their plain names).
"""

from __future__ import annotations

from t2t_lite.hparams.hparams import HParams
from t2t_lite.hparams.transformer import base
from t2t_lite.registry import register_hparams


def _multi30k(**changes) -> HParams:
    """`multi30k`'s data, batching and schedule fields, with `changes`."""
    return base().replace(
        d_model=256,
        dropout_rate=0.2,  # As multi30k: 29K pairs see ~20 epochs in an hour.
        warmup_steps=1000,
        learning_rate_scale=0.5,  # Peak 0.99e-3 (equation 3 with d_model 256: 1.98e-3).
        batch_size=2048,
        max_length=100,
        **changes,
    )


def _tiny(**changes) -> HParams:
    """A CPU-sized recurrent model for tests and algorithmic tasks, with `changes`."""
    return base().replace(
        num_layers=1,
        d_model=32,
        dropout_rate=0.0,
        warmup_steps=100,  # Short runs: reach the peak rate (0.018) early.
        batch_size=256,
        max_length=16,
        train_steps=2000,
        **changes,
    )


@register_hparams("rnn_multi30k")
def rnn_multi30k() -> HParams:
    """Sutskever et al. 2014 on Multi30k: 2 x 256 LSTM encoder and decoder, source reversed."""
    return _multi30k(model="rnn_seq2seq", num_layers=2, rnn_cell="lstm", reverse_source=True)


@register_hparams("bahdanau_multi30k")
def bahdanau_multi30k() -> HParams:
    """Bahdanau et al. 2015 on Multi30k: one bidirectional GRU layer (256 each way), GRU decoder."""
    return _multi30k(model="bahdanau", num_layers=1, rnn_cell="gru")


@register_hparams("luong_multi30k")
def luong_multi30k() -> HParams:
    """Luong et al. 2015 on Multi30k: 2 x 256 LSTMs, general scores, input feeding."""
    return _multi30k(model="luong", num_layers=2, rnn_cell="lstm", attention_score="general",
                     input_feeding=True)


@register_hparams("rnn_tiny")
def rnn_tiny() -> HParams:
    """`rnn_seq2seq` at test size: one 32-unit LSTM layer each side."""
    return _tiny(model="rnn_seq2seq")


@register_hparams("bahdanau_tiny")
def bahdanau_tiny() -> HParams:
    """`bahdanau` at test size: one bidirectional 32-unit GRU layer, a GRU decoder."""
    return _tiny(model="bahdanau", rnn_cell="gru")


@register_hparams("luong_tiny")
def luong_tiny() -> HParams:
    """`luong` at test size: one 32-unit LSTM layer each side, general scores, input feeding."""
    return _tiny(model="luong")
