"""The attention data model: what a trained model attends to, for one sentence pair.

The weights come from the model's own forward pass (`model.attention_weights`,
the softmax weights of `MultiHeadAttention` in inference mode), teacher-forced
on the model's greedy output or on a given target. Three kinds, each with one
[H, query, key] array per layer:

- "encoder": encoder self-attention, source x source (S x S);
- "decoder": decoder self-attention, target x decoder input (T x T); row i is
  the position that predicts target token i, and attends to the decoder inputs
  <s>, t_0, ..., t_{i-1} (the targets shifted right, section 3.1);
- "cross": encoder-decoder attention, target x source (T x S).

A model may lack a kind (the RNN attention models of `t2t_lite.models.rnn` have
only "cross", one layer of one "head": the alignment of Bahdanau et al.
2015, figure 3); only the kinds it has are kept and drawn.

Drawn by `t2t_lite.pictures.attention_png` (PNG grid) and
`t2t_lite.pictures.attention_html` (a self-contained page). Shapes: H heads,
S source length (EOS included), T target length (EOS included).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.decoding import decode_policy
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.problems.base import ProblemError

KINDS = ("encoder", "decoder", "cross")
TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention",
          "cross": "encoder-decoder attention"}
START, END = "<s>", "</s>"


@dataclasses.dataclass
class AttentionMaps:
    """Tokens and weights of one sentence pair.

    Attributes:
      source: source tokens (S, EOS last).
      target: target tokens (T, EOS last).
      weights: kind -> float32 [num_layers, H, query, key], cropped to the tokens;
        only the kinds the model has.
    """

    source: list[str]
    target: list[str]
    weights: dict[str, np.ndarray]

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of `kind`."""
        if kind == "encoder":
            return self.source, self.source
        if kind == "decoder":
            return self.target, [START] + self.target[:-1]
        return self.target, self.source

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds present, in `KINDS` order."""
        return tuple(kind for kind in KINDS if kind in self.weights)

    @property
    def num_layers(self) -> int:
        """The most layers of any kind (every kind's, for the Transformer)."""
        return max(self.weights[kind].shape[0] for kind in self.kinds)

    @property
    def num_heads(self) -> int:
        """The most heads of any kind."""
        return max(self.weights[kind].shape[1] for kind in self.kinds)


def token_label(problem, token: int, side: str) -> str:
    """The label of id `token` on an axis (side "source" or "target"): its piece."""
    if token == EOS_ID:
        return END
    if token == PAD_ID:
        return "<pad>"
    return problem.token_piece(int(token), side)


def attention_maps(model, source_ids: list[int], target_ids: list[int],
                   labels=lambda token, side: str(token)) -> AttentionMaps:
    """Runs the teacher-forced forward pass on one pair and keeps its weights.

    Args:
      model: a model whose capabilities include attention maps (`t2t_lite.models.contract`).
      source_ids, target_ids: id sequences, EOS included.
      labels: (id, "source" | "target") -> the token's label.

    Raises:
      ProblemError: the model has no attention weights.
    """
    if not model.capabilities.attention_maps:
        raise ProblemError(f"the {type(model).__name__} model has no attention to draw "
                           "(no attention_weights); train one with attention")
    features = {"inputs": np.array([source_ids], np.int32),
                "targets": np.array([target_ids], np.int32)}
    weights = model.attention_weights(features)
    stacked = {kind: np.stack([np.asarray(w, np.float32)[0] for w in weights[kind]])
               for kind in KINDS if len(weights.get(kind, ()))}
    return AttentionMaps(
        source=[labels(t, "source") for t in source_ids],
        target=[labels(t, "target") for t in target_ids],
        weights=stacked)


def sentence_maps(problem, model, hparams, text: str, target: str | None = None,
                  warn=print) -> AttentionMaps:
    """Attention maps of `text` and its greedy translation (or `target`).

    Raises:
      ProblemError: empty input or target.
    """
    from t2t_lite.decoding.decoder import Decoder
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import encode_lines

    if not text.strip():
        raise ProblemError("the input is empty; pass --input with the sentence to draw")
    source = encode_lines(problem, [text], hparams.max_length, warn)[0]
    if target is None:
        options = DecodeOptions.from_hparams(hparams, beam_size=1, batch_size=1)
        ids = Decoder(model, options).decode([source])[0][0][0]
    else:
        if not target.strip():
            raise ProblemError("the target is empty; leave --target out to draw the "
                               "model's own output")
        ids = decode_policy.source_ids(problem.encode_target(target.strip()),
                                       hparams.max_length)[:-1]
    return attention_maps(model, source, list(ids) + [EOS_ID],
                          lambda token, side: token_label(problem, token, side))
