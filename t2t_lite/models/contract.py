"""The model contract: what a registered model provides to the trainer, decoder and exporters.

A class registered with `t2t_lite.registry.register_model(name)` (`hparams.model`
names it; `t2t_lite.runs.weights.build_model` builds it) implements
`Seq2SeqModel`. `ModelBase` gives every optional member its default, so a new
model subclasses it (with `keras.Model`) and writes only what it changes. The
trainer, checkpoints, averaging, decoding and export then work with it
unchanged, and no caller asks a model what it has: what it can do beyond the
required members is declared in `capabilities`.

Required:

- `from_hparams(hparams, source_vocab_size, target_vocab_size=None)`, a
  classmethod: builds the model and creates its weights (the target vocabulary
  defaults to the source's).
- `call(features, training=None)`: features {"inputs": int [B, S],
  "targets": int [B, T]} -> float32 logits [B, T, V] (teacher forced; the
  decoder input is the targets shifted right with 0 as the start symbol).
- `target_vocab_size`: V, an int attribute.
- `init_cache(inputs, max_decode_length) -> (self_cache, cross_cache)`: encodes
  int32 sources [B, S] (0-padded, EOS included) and returns two nested
  structures of tensors whose leaves all have leading dimension B:
  `self_cache` changes every step and has room for `max_decode_length`
  positions, `cross_cache` is fixed for the source batch.
- `decode_step(ids, index, self_cache, cross_cache) -> (logits, self_cache)`:
  ids int32 [B] (the token at position index - 1, 0 at index 0), index int32
  scalar (the position predicted) -> float32 logits [B, V] and the new
  self_cache (same structure and shapes).
- `grow_self_cache(self_cache, length)`: the self_cache padded to room for
  `length` positions (decoding grows it 16, 32, ..., L).

With defaults in `ModelBase`:

- `adapt(problem)`: takes what the model needs from the problem before
  training, saved with its weights (the trainer calls it right after building
  the model; Keras `fit` users call it themselves). Default: nothing.
- `loss_sums(batch, label_smoothing, training=False) -> LossSums`: the summed
  training objective (what the trainer differentiates, before dividing by the
  global count of target tokens) and the logged sums. Default: the label-smoothed
  cross entropy of `call`'s logits (section 5.4); a model with an auxiliary loss
  adds it to the objective.
- `flop_profile() -> FlopProfile`: the weights each source and target token goes
  through, for the trainer's FLOP count and MFU. Default: every weight, per
  target token.
- `capabilities`: a `Capabilities`, each true field a promise of the members it
  names. Default: none.

Decoding (`t2t_lite.decoding.search.search`) uses only this contract: it repeats
the cross_cache leaves for the K beams, and beam search reorders the self_cache
leaves along their first dimension (grouped beams: only their ancestry).
Checkpoints name weights by their Keras paths, so a model's weights keep their
names as long as its layers do.

Ids: 0 is padding (and the decoder's start symbol, as in tensor2tensor), 1 is EOS.
Shapes: B batch, S source length, T target length, V target vocabulary.
"""

from __future__ import annotations

import dataclasses
import typing

from keras import ops

from t2t_lite.errors import UserError
from t2t_lite.models.losses import smoothed_cross_entropy_sums


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a model can do beyond the required members; each field promises its members.

    Attributes:
      in_place_cache: `decode_step(..., in_place=True)` (and `decode_beams_step`'s,
        with grouped_beams), a step that, traced in a TensorFlow graph, updates
        the self_cache in place, and `own_self_cache(self_cache)`, a copy into
        buffers nobody else holds (a search owns its cache at each loop's start
        and never reads a self_cache it passed to a step again). Faster
        decoding without XLA.
      grouped_beams: `beam_self_cache(self_cache, K)`, `grow_beam_cache(self_cache,
        length)` and `decode_beams_step(ids, index, self_cache, cross_cache,
        ancestry)`: beams that share one cross_cache row and a self_cache of K
        slots never reordered (`t2t_lite.layers.beam_decoder`).
      attention_maps: `attention_weights(features)` -> {"encoder": [B, H, S, S]
        per layer, "decoder": [B, H, T, T] per layer, "cross": [B, H, T, S] per
        layer}, the softmax weights of the model's own forward pass (pictures).
    """

    in_place_cache: bool = False
    grouped_beams: bool = False
    attention_maps: bool = False


# The members each capability promises (`check_model_class` checks them).
CAPABILITY_MEMBERS = {
    "in_place_cache": ("own_self_cache",),
    "grouped_beams": ("beam_self_cache", "grow_beam_cache", "decode_beams_step"),
    "attention_maps": ("attention_weights",),
}


class LossSums(typing.NamedTuple):
    """A batch's summed losses (float32 scalars), each over its non-padding target tokens.

    objective: what training differentiates (the token loss, weighted, plus any
      auxiliary loss); loss, nll: the logged label-smoothed loss and negative
      log-likelihood; tokens: the count of non-padding target tokens.
    """

    objective: typing.Any
    loss: typing.Any
    nll: typing.Any
    tokens: typing.Any


@dataclasses.dataclass(frozen=True)
class FlopProfile:
    """The weights a model's tokens go through, for counting training FLOPs.

    Attributes:
      encoder_weights: weights each source token goes through (encoder layers).
      decoder_weights: weights each target token goes through (decoder layers and
        the pre-softmax projection).
      d_model, num_layers: for the attention products (0 layers: none).
      decoder: False when training runs no decoder (its attention is not counted).
    """

    encoder_weights: int
    decoder_weights: int
    d_model: int = 0
    num_layers: int = 0
    decoder: bool = True


@typing.runtime_checkable
class Seq2SeqModel(typing.Protocol):
    """The contract of a registered model (this module's docstring says each member)."""

    target_vocab_size: int
    capabilities: Capabilities

    @classmethod
    def from_hparams(cls, hparams, source_vocab_size: int,
                     target_vocab_size: int | None = None): ...

    def __call__(self, features, training=None): ...

    def adapt(self, problem) -> None: ...

    def loss_sums(self, batch, label_smoothing: float, training: bool = False) -> LossSums: ...

    def flop_profile(self) -> FlopProfile: ...

    def init_cache(self, inputs, max_decode_length): ...

    def decode_step(self, ids, index, self_cache, cross_cache): ...

    def grow_self_cache(self, self_cache, length): ...


# The members every model class has (its own or `ModelBase`'s); `target_vocab_size`
# is set on the instance.
CLASS_MEMBERS = ("from_hparams", "call", "adapt", "loss_sums", "flop_profile",
                 "capabilities", "init_cache", "decode_step", "grow_self_cache")


class ModelContractError(UserError, TypeError):
    """A registered model class that lacks a member of the contract."""


def check_model_class(cls, name: str) -> None:
    """Raises ModelContractError when the model class registered as `name` lacks a member."""
    missing = [member for member in CLASS_MEMBERS if not hasattr(cls, member)]
    if missing:
        raise ModelContractError(
            f"model {name!r} ({cls.__name__}) lacks {', '.join(missing)} of the model contract; "
            "subclass t2t_lite.models.contract.ModelBase for the defaults")


def check_capabilities(instance) -> None:
    """Raises ModelContractError when a built model declares a capability without its members.

    Run once when the model is built (`t2t_lite.runs.weights.build_model`), so no
    caller ever needs to ask a model whether it has a member.
    """
    declared = dataclasses.asdict(instance.capabilities)
    missing = [member for capability, members in CAPABILITY_MEMBERS.items()
               if declared[capability] for member in members if not hasattr(instance, member)]
    if missing:
        raise ModelContractError(
            f"{type(instance).__name__} declares capabilities without {', '.join(missing)}; "
            "implement them or leave the capability false")


class ModelBase:
    """The defaults of the contract's optional members, and what building from hparams shares.

    A subclass' own constructor arguments come from hparams (`hparams_kwargs`: by
    default each field of `hparams.model_config`, under its name); `build_weights`
    creates every weight.
    """

    capabilities = Capabilities()

    @classmethod
    def hparams_kwargs(cls, hparams) -> dict:
        """A subclass' own constructor arguments from `hparams`: its config's fields."""
        config = hparams.model_config
        return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    def build_weights(self):
        """Creates every weight by running a one-token batch."""
        ids = ops.ones((1, 2), dtype="int32")
        self({"inputs": ids, "targets": ids})

    def adapt(self, problem) -> None:
        """Takes nothing from the problem."""
        del problem

    def loss_sums(self, batch, label_smoothing: float, training: bool = False) -> LossSums:
        """The label-smoothed cross entropy of the teacher-forced logits, summed."""
        loss, nll, tokens = smoothed_cross_entropy_sums(
            self(batch, training=training), batch["targets"], label_smoothing)
        return LossSums(loss, loss, nll, tokens)

    def flop_profile(self) -> FlopProfile:
        """Every weight, per target token (6 x weights x target tokens per step)."""
        return FlopProfile(0, self.count_params())
