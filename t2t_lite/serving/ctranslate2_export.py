"""Exporting a trained translation run to CTranslate2 (translating with the export:
`t2t_lite.serving.ctranslate2_serving`).

    export_ctranslate2(output_dir, export_dir, quantization="float32")
        -> EXPORT_DIR/<version>/   (the SavedModel export's version numbering)

EXPORT_DIR/<version>/ is a CTranslate2 model directory (`model.bin`, `config.json`,
`shared_vocabulary.json` or `source_`/`target_vocabulary.json`), the run's
SentencePiece model(s) (`sentencepiece.model`, or `source.model` + `target.model`)
and `t2t_lite.json` (the decoding settings `ctranslate2_serving.translate_ids` / `translate_text`
follow). It is written with CTranslate2's specification API (`TransformerSpec`,
`validate`, `optimize(quantization=...)`, `save`) into a temporary directory in
EXPORT_DIR, renamed at the end (`t2t_lite.atomic`): a failed export leaves nothing.

What maps to what (t2t_lite.models.transformer.Transformer -> TransformerSpec):

- norms: post-norm LayerNorm(x + Sublayer(x)) (the paper) -> `pre_norm=False`, no
  final stack norm; `normalize_before` -> `pre_norm=True` with `encoder_norm` /
  `decoder_norm` as the stacks' `layer_norm`. `layer_norm_epsilon` -> config
  `layer_norm_epsilon` (CTranslate2's default would be 1e-5).
- embeddings: the shared matrix (section 3.4) fills the encoder embedding, the
  decoder embedding and the output projection (no bias); with
  `shared_embedding=false` the source matrix fills the encoder's, the target
  matrix the other two. Both are scaled by sqrt(d_model) (`scale_embeddings`).
- attention: Keras kernels [in, out] transposed to [out, in]; self-attention's
  W^Q, W^K, W^V fused into one [3D, D] matrix, encoder-decoder attention's W^K,
  W^V into one [2D, D]; no biases (CTranslate2's are optional). CTranslate2
  splits heads as d_model / h, so d_k = d_v = d_model / h is required.
- feed-forward: ffn_inner -> linear_0, ffn_output -> linear_1, ReLU.
- positions: the model's own `position` layer at positions 0..P-1 is written as
  both stacks' `position_encodings/encodings` (the paper's interleaved sin/cos,
  or the learned table with its last row repeated past max_length, as t2t_lite
  does); CTranslate2's built-in sinusoid concatenates the sin and cos halves.
  Both stacks start at position 0, as t2t_lite's. P = max(1024, the longest
  decode t2t_lite's policy allows).
- ids: the vocabularies are the SentencePiece pieces in id order (0 `<pad>`, 1
  `</s>`, 2 `<unk>`), so ids match. CTranslate2 appends EOS to every source
  (`add_source_eos`) and truncates it to max_length keeping EOS
  (`max_input_length`), t2t_lite's rule. The decoder starts from id 0, as
  t2t_lite's: `decoder_start_token` (and `bos_token`) is `<pad>`.

Decoding with the export (`ctranslate2_serving.translate_ids`, `translate_text`) follows
`t2t_lite.decoding.decode_policy`: each source's maximum output length is its
padded length (8, 16, 32, ...) + extra_length, with min_decoding_length 0.
Greedy search gives t2t_lite's ids and its score (the sum of log-probs, EOS
included) with `length_penalty=0`. Beam search differs in two ways CTranslate2
has no option for: its length penalty is length^p (length without EOS) where
t2t_lite's is GNMT's ((5 + length) / 6)^alpha, and it stops once beam_size
hypotheses have finished (tensor2tensor stops when no alive beam can still
win). With alpha = 0 and length_penalty = 0 both rank by log-probability and
give the same best hypothesis but for ties, the length limit and one corner: an
EOS outside a step's top K candidates ends a hypothesis for t2t_lite only, so
where they differ t2t_lite's is the likelier. `t2t_lite.json` records the run's
beam size and a length_penalty near alpha's ranking (`LENGTH_PENALTY_SCALE`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import numpy as np

from t2t_lite import atomic, registry
from t2t_lite.data.text_encoder import UNK_ID, SubwordVocab
from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID, PAD_ID

QUANTIZATIONS = ("float32", "int8", "int8_float32")
METADATA_FILE = "t2t_lite.json"
FORMAT = "t2t_lite-ctranslate2"
MIN_POSITIONS = 1024  # Rows of the position table at least (decoding may not go past it).
# CTranslate2 divides by length^p, t2t_lite by GNMT's ((5 + L) / 6)^alpha: their slopes in
# log L, p and alpha * L / (5 + L), agree at L = 25 tokens for p = alpha * 25 / 30.
LENGTH_PENALTY_SCALE = 25 / 30
INSTALL_HINT = 'pip install "t2t_lite[ctranslate2]"'


class CTranslate2Error(UserError, ValueError):
    """A run or request CTranslate2 cannot serve; the message says why."""


@dataclasses.dataclass(frozen=True)
class CTranslate2Export:
    """What `export_ctranslate2` wrote."""

    path: str  # EXPORT_DIR/<version>
    version: int
    quantization: str
    checkpoint: str
    seconds: float
    size_bytes: int


def import_ctranslate2():
    """The `ctranslate2` module, or CTranslate2Error naming the extra to install."""
    try:
        import ctranslate2
    except ImportError:
        raise CTranslate2Error(f"the ctranslate2 package is not installed: {INSTALL_HINT}") \
            from None
    return ctranslate2


def check_hparams(hparams) -> None:
    """Raises CTranslate2Error if CTranslate2's TransformerSpec cannot express the model."""
    if hparams.model != "transformer":
        raise CTranslate2Error(
            f"the run's model is {hparams.model!r}; CTranslate2's TransformerSpec expresses "
            "only t2t_lite's Transformer (hparams.model=transformer)")
    per_head = hparams.d_model // hparams.num_heads
    if hparams.d_model % hparams.num_heads or (hparams.key_dim, hparams.value_dim) != \
            (per_head, per_head):
        raise CTranslate2Error(
            f"d_k={hparams.key_dim}, d_v={hparams.value_dim} with d_model={hparams.d_model} "
            f"and num_heads={hparams.num_heads}: CTranslate2 needs d_k = d_v = d_model / h")


def check_problem(problem) -> tuple[str, str]:
    """The (source, target) SentencePiece files of a problem CTranslate2 can serve.

    Raises:
      CTranslate2Error: no vocabulary files (ids only, e.g. algorithmic), a
        word-level source, or a search constraint (parsing).
    """
    from t2t_lite.serving.export import vocab_files

    files = vocab_files(problem)
    if files is None:
        raise CTranslate2Error(
            f"{problem.name} has no SentencePiece vocabulary (its ids are the data), so "
            "there are no tokens for CTranslate2's vocabulary; use --format=saved_model")
    for side, path in zip(("source", "target"), files):
        if SubwordVocab.load(path).model_type == "word":
            raise CTranslate2Error(
                f"{path}: a word-level {side} vocabulary; its unknown-word classes are "
                "applied in Python, which CTranslate2 cannot do")
    if problem.decode_constraint() is not None:
        raise CTranslate2Error(
            f"{problem.name} decodes under a search constraint, which CTranslate2 cannot "
            "apply; use --format=saved_model")
    return files


def _array(weight) -> np.ndarray:
    return np.array(weight.numpy(), dtype=np.float32)


def _set_linear(spec, dense_layers) -> None:
    """Keras Dense layers ([in, out] kernels) -> one fused [sum(out), in] LinearSpec."""
    spec.weight = np.concatenate([_array(d.kernel).T for d in dense_layers])
    if dense_layers[0].use_bias:
        spec.bias = np.concatenate([_array(d.bias) for d in dense_layers])


def _set_norm(spec, norm) -> None:
    spec.gamma = _array(norm.gamma)
    spec.beta = _array(norm.beta)


def _set_attention(spec, attention, norm, self_attention: bool) -> None:
    """A t2t_lite MultiHeadAttention (no biases) -> a MultiHeadAttentionSpec."""
    q, k, v = attention.query_dense, attention.key_dense, attention.value_dense
    groups = [[q, k, v]] if self_attention else [[q], [k, v]]
    for linear, dense_layers in zip(spec.linear, groups):
        _set_linear(linear, dense_layers)
    _set_linear(spec.linear[-1], [attention.output_dense])
    _set_norm(spec.layer_norm, norm)


def _set_feed_forward(spec, layer) -> None:
    _set_linear(spec.linear_0, [layer.feed_forward.inner_dense])
    _set_linear(spec.linear_1, [layer.feed_forward.output_dense])
    _set_norm(spec.layer_norm, layer.feed_forward_norm)


def position_table(model, rows: int) -> np.ndarray:
    """float32 [rows, D]: what the model's own positional layer adds at positions 0..rows-1."""
    dummy = np.zeros((1, rows, model.layer_config.d_model), np.float32)
    return np.array(model.position(dummy, start_index=0), dtype=np.float32)


def build_spec(ct2, model, hparams, source_pieces, target_pieces, positions: int):
    """The TransformerSpec holding `model`'s weights (see the module docstring)."""
    spec = ct2.specs.TransformerSpec.from_config(
        hparams.num_layers, hparams.num_heads, pre_norm=hparams.normalize_before,
        activation=ct2.specs.common_spec.Activation.RELU)
    table = position_table(model, positions)
    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = _array(model.source_embedding.embeddings)
    decoder.embeddings.weight = _array(model.target_embedding.embeddings)
    decoder.projection.weight = _array(model.softmax_embedding.embeddings)
    encoder.position_encodings.encodings = table
    decoder.position_encodings.encodings = table.copy()
    for layer_spec, layer in zip(encoder.layer, model.encoder_layers):
        _set_attention(layer_spec.self_attention, layer.self_attention,
                       layer.self_attention_norm, self_attention=True)
        _set_feed_forward(layer_spec.ffn, layer)
    for layer_spec, layer in zip(decoder.layer, model.decoder_layers):
        _set_attention(layer_spec.self_attention, layer.self_attention,
                       layer.self_attention_norm, self_attention=True)
        _set_attention(layer_spec.attention, layer.cross_attention,
                       layer.cross_attention_norm, self_attention=False)
        _set_feed_forward(layer_spec.ffn, layer)
    if hparams.normalize_before:
        _set_norm(encoder.layer_norm, model.encoder_norm)
        _set_norm(decoder.layer_norm, model.decoder_norm)
    spec.register_source_vocabulary(source_pieces)
    spec.register_target_vocabulary(target_pieces)
    config = spec.config
    config.layer_norm_epsilon = float(hparams.layer_norm_epsilon)
    config.unk_token = target_pieces[UNK_ID]
    config.eos_token = target_pieces[EOS_ID]
    config.bos_token = config.decoder_start_token = target_pieces[PAD_ID]
    config.add_source_eos = True
    config.add_source_bos = False
    return spec


def _pieces(path: str) -> list[str]:
    vocab = SubwordVocab.load(path)
    return [vocab.id_to_piece(i) for i in range(vocab.vocab_size)]


def save_model(model, hparams, vocab_paths: tuple[str, str], directory: str,
               quantization: str = "float32", settings: dict | None = None) -> None:
    """Writes `model` as a CTranslate2 model into the existing empty `directory`.

    Args:
      model: a t2t_lite Transformer (`check_hparams` passed for `hparams`).
      vocab_paths: the (source, target) SentencePiece model files (may be one file).
      settings: decoding settings recorded in t2t_lite.json; default
        `decode_settings(hparams)`, whose keys it overrides.
    """
    if quantization not in QUANTIZATIONS:
        raise CTranslate2Error(f"quantization must be one of {', '.join(QUANTIZATIONS)}, "
                               f"not {quantization!r}")
    if type(model) is not registry.model("transformer"):
        raise CTranslate2Error(f"{type(model).__name__} is not t2t_lite's Transformer; "
                               "CTranslate2's TransformerSpec cannot express it")
    ct2 = import_ctranslate2()
    settings = {**decode_settings(hparams), **(settings or {})}
    positions = max(MIN_POSITIONS, settings["source_buckets"][-1] + settings["extra_length"])
    source, target = vocab_paths
    spec = build_spec(ct2, model, hparams, _pieces(source), _pieces(target), positions)
    names = ({"source": "sentencepiece.model", "target": "sentencepiece.model"}
             if source == target else {"source": "source.model", "target": "target.model"})
    for path, name in dict(zip((source, target), names.values())).items():
        spec.register_file(path, name)
    spec.validate()
    spec.optimize(quantization=quantization)
    spec.save(directory)
    settings.update(format=FORMAT, quantization=quantization, positions=positions,
                    source_spm=names["source"], target_spm=names["target"])
    atomic.write_text(os.path.join(directory, METADATA_FILE),
                      json.dumps(settings, indent=2, sort_keys=True) + "\n")


def decode_settings(hparams, beam_size=None, alpha=None, extra_length=None) -> dict:
    """What t2t_lite.json records: the run's decode policy and search defaults."""
    from t2t_lite.decoding import decode_policy

    alpha = hparams.alpha if alpha is None else alpha
    if (beam_size is not None and beam_size < 1) or (extra_length or 0) < 0:
        raise CTranslate2Error("beam_size must be >= 1 and extra_length >= 0")
    return {"max_length": int(hparams.max_length),
            "source_buckets": decode_policy.source_buckets(int(hparams.max_length)),
            "extra_length": int(hparams.extra_length if extra_length is None else extra_length),
            "beam_size": int(hparams.beam_size if beam_size is None else beam_size),
            "alpha": float(alpha),
            "length_penalty": round(float(alpha) * LENGTH_PENALTY_SCALE, 4)}


def export_ctranslate2(output_dir: str, export_dir: str, checkpoint: str | None = None,
                       quantization: str = "float32", data_dir: str | None = None,
                       beam_size=None, alpha=None, extra_length=None,
                       log=lambda _: None) -> CTranslate2Export:
    """Exports the run in output_dir to export_dir/<next version>/; see the module doc.

    Raises:
      CTranslate2Error: a run CTranslate2 cannot express (one line says why), an
        unknown quantization, or ctranslate2 not installed.
      ExportError, RunDirError, CheckpointError: as the SavedModel export.
    """
    from t2t_lite.runs.run import Run
    from t2t_lite.serving import export as saved_model

    start = time.time()
    if quantization not in QUANTIZATIONS:
        raise CTranslate2Error(f"--quantization must be one of {', '.join(QUANTIZATIONS)}, "
                               f"not {quantization!r}")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise saved_model.ExportError(f"{export_dir} exists and is not a directory")
    run = Run.open(output_dir, data_dir)
    check_hparams(run.hparams)  # Before loading weights: the cheap refusals first.
    import_ctranslate2()
    vocabs = check_problem(run.problem)
    path = run.checkpoint(checkpoint)
    model = run.model(path)
    settings = decode_settings(run.hparams, beam_size, alpha, extra_length)
    settings.update(problem=run.problem_name, checkpoint=path)
    os.makedirs(export_dir, exist_ok=True)
    for stale in atomic.remove_temporaries(export_dir, saved_model.STAGING_NAME):
        log(f"removed {os.path.basename(stale)}, left by an interrupted export")
    with atomic.staging_directory(export_dir, saved_model.STAGING_NAME, owned=True) as tmp:
        log(f"converting to CTranslate2 ({quantization})")
        save_model(model, run.hparams, vocabs, tmp, quantization, settings)
        version = saved_model.next_version(export_dir)
        final = os.path.join(export_dir, str(version))
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    return CTranslate2Export(path=final, version=version, quantization=quantization,
                             checkpoint=path, seconds=time.time() - start,
                             size_bytes=saved_model.directory_size(final))
