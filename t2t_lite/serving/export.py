"""Exporting a trained run as a TensorFlow SavedModel that serves ids and text.

    export(output_dir, export_dir) -> EXPORT_DIR/<version>/   (TensorFlow Serving layout)

Signatures:
  translate_ids:   inputs int32 [B, S] (EOS included, 0-padded)
                   -> ids int32 [B, L] (best beam, EOS then 0s), scores float32 [B]
  sample_ids:      (only with `sampling=True`, t2t_lite-exporter --sampling) inputs
                   int32 [B, S], temperature, top_k, top_p, seed, num_samples ->
                   ids int32 [B, N, L], scores float32 [B, N]: `t2t_lite.serving.sampling`
  serving_default: inputs tf.string [B] -> outputs tf.string [B], scores float32 [B]
                   (problems with SentencePiece vocabularies: translation, core ops
                   only by default; or the
                   problem's own `Problem.serving_module`: parsing's sentences in,
                   trees out, `t2t_lite.parsing.serving`, core ops only)

Decoding follows `t2t_lite.decoding.decode_policy`, the rules `t2t_lite.decoding.decoder.Decoder` follows
too, so the exported model gives the ids t2t_lite-decoder gives: inputs longer
than hparams.max_length are truncated to max_length - 1 tokens + EOS, the batch
is cut to its longest row, padded to a power of two (at least 8), and searched
(`decode_padded`) with max_decode_length = padded length +
extra_length, under the problem's search constraint (`Problem.decode_constraint`,
parsing's tree constraint and tag dictionary, as constants in the graph).
translate_ids holds one traced search for every padded length; a constrained
search, which needs a static source length, holds one per padded length 8, 16,
32, ... up to the first that holds max_length and picks the branch at run time
(`decode_policy.tf_search`).

translate_ids is traced once. serving_default calls that same function: it
tokenizes with the source vocabulary, appends EOS (`decode_policy.tf_source_ids`),
calls translate_ids and detokenizes with the target vocabulary (the same file
when the problem shares one). An input with no tokens (empty or blank) gives ""
and score 0, as t2t_lite-decoder does for empty lines. The .model files are
attached as SavedModel assets (e.g. assets/vocab.<problem>.model).

The tokenizer (`text_ops`, t2t_lite-exporter --text_ops) is by default "core":
`t2t_lite.serving.sentencepiece_ops.CoreSentencePiece`, SentencePiece's BPE in core
TensorFlow ops, so the SavedModel, every signature of it, loads and runs in any
TensorFlow binary: stock TensorFlow Serving, `saved_model_cli run`, a process that
never imports tensorflow_text. "tensorflow_text" uses tensorflow_text's
SentencepieceTokenizer instead (its custom op tokenizes 2-3 times faster, a small
part of a request's time next to the search); a SavedModel holding that op cannot
be loaded by a process that has not imported tensorflow_text, even to run another
signature, so that variant also writes an ids-only copy to EXPORT_DIR/<version>/ids/
(same weights, the same translate_ids). Algorithmic problems have no text
signature.

The weights are saved as the Keras variables' backing tf.Variables
(`model_weights(..., backing=True)`): a session-based loader (TF Serving's
SavedModelBundle, `saved_model_cli run`) binds only variables saved as themselves.

The version directory is written under a temporary name inside EXPORT_DIR and
renamed at the end, so a failed export leaves no partial version. The
temporary name holds the exporting process's id; the next export removes those
of processes that no longer run (an export killed by a signal): see
`t2t_lite.atomic`.
"""

from __future__ import annotations

import dataclasses
import os
import time

import tensorflow as tf

from t2t_lite import atomic
from t2t_lite.runs.run import Run
from t2t_lite.runs.weights import model_weights
from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.decoding.search import decode_padded
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.data.text_encoder import SubwordVocab
from t2t_lite.errors import UserError
from t2t_lite.serving import sampling as sampling_signature
from t2t_lite.serving.sentencepiece_ops import CoreSentencePiece

IDS_SUBDIR = "ids"


class ExportError(UserError, ValueError):
    """An export directory that cannot be used; the message says why."""


@dataclasses.dataclass(frozen=True)
class ExportResult:
    path: str  # EXPORT_DIR/<version>
    version: int
    signatures: tuple[str, ...]
    ids_path: str  # SavedModel whose translate_ids loads without tensorflow_text
    checkpoint: str
    seconds: float
    size_bytes: int


def next_version(export_dir: str) -> int:
    """1 + the largest integer-named entry of export_dir (1 when none)."""
    if not os.path.isdir(export_dir):
        return 1
    versions = [int(n) for n in os.listdir(export_dir) if n.isdigit()]
    return max(versions, default=0) + 1


# A version is staged as EXPORT_DIR/.tmp-export-<pid>-XXXX (`atomic.staging_directory`).
STAGING_NAME = "export"


def directory_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(path) for f in files)


def _decode_ids(model, ids, options: DecodeOptions, max_length: int):
    """The decoder's search in the graph: ids [B, S] -> (best ids [B, L], scores [B]).

    The rows are truncated, measured and padded by `decode_policy`, and searched by
    `decode_padded` (`decode_policy.tf_search`: one search for every padded
    length; one per bucket for a constrained search).
    """
    def search(inputs, source_bound):
        seqs, scores = decode_padded(model, inputs, options, source_bound)
        return seqs[:, 0, :], scores[:, 0]

    ids = decode_policy.tf_truncate(tf.cast(ids, tf.int32), max_length)
    return decode_policy.tf_search(ids, max_length, options.extra_length, search,
                                   per_bucket=options.constraint is not None)


def _strip_after_eos(ids):
    """int32 [B, L] -> ragged [B, (N)]: tokens before the first EOS, padding dropped."""
    before_eos = tf.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=1) == 0
    return tf.ragged.boolean_mask(ids, tf.logical_and(before_eos, ids != PAD_ID))


class _IdsModule(tf.Module):
    """translate_ids, traced once; tracks the model weights and the decoding settings."""

    def __init__(self, model, options, max_length):
        super().__init__(name="t2t_lite_export")
        # The tf.Variables under the Keras variables: a session-based loader (TF Serving,
        # saved_model_cli run) finds only variables saved as themselves.
        self.model_weights = model_weights(model, backing=True)
        self.beam_size = tf.Variable(options.beam_size, trainable=False, name="beam_size")
        self.alpha = tf.Variable(options.alpha, trainable=False, name="alpha")
        self.extra_length = tf.Variable(options.extra_length, trainable=False,
                                        name="extra_length")
        self.max_length = tf.Variable(max_length, trainable=False, name="max_length")

        def translate_ids(inputs):
            ids, scores = _decode_ids(model, inputs, options, max_length)
            return {"ids": ids, "scores": scores}

        self.translate_ids = tf.function(translate_ids, input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="inputs")])


TEXT_OPS = ("core", "tensorflow_text")


def _tokenizer(model_proto: bytes, index: int, text_ops: str):
    """A SentencePiece tokenizer with tokenize/detokenize for the text signature.

    "core": `CoreSentencePiece` (core TensorFlow ops: any TensorFlow binary loads the
    SavedModel, TF Serving's included); "tensorflow_text": tensorflow_text's op.
    """
    # Distinct names: tensorflow_text's SentencePiece resources are kernel-owned and keyed
    # by node name, so two unnamed tokenizers in one SavedModel load as one.
    if text_ops == "core":
        return CoreSentencePiece(model_proto, name=f"vocab_{index}")
    import tensorflow_text as tf_text

    return tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.int32,
                                          name=f"vocab_{index}")


class _TextModule(tf.Module):
    """serving_default (text in, text out) around an _IdsModule's translate_ids.

    The search is the ids module's one traced translate_ids, which serve() calls
    and which is also this module's translate_ids signature. Tokenizes with the
    source vocabulary and detokenizes with the target vocabulary (`_tokenizer`).
    """

    def __init__(self, ids_module: _IdsModule, max_length: int, source_vocab: str,
                 target_vocab: str, text_ops: str = "core"):
        super().__init__(name="t2t_lite_export_text")
        self.ids_module = ids_module
        self.translate_ids = ids_module.translate_ids
        tokenizers = {}
        for i, path in enumerate(dict.fromkeys([source_vocab, target_vocab])):
            with open(path, "rb") as f:
                tokenizers[path] = _tokenizer(f.read(), i, text_ops)
        self.vocab_assets = [tf.saved_model.Asset(path) for path in tokenizers]
        self.source_tokenizer = source = tokenizers[source_vocab]
        self.target_tokenizer = target = tokenizers[target_vocab]
        translate_ids = ids_module.translate_ids

        def serve(inputs):
            tokens = source.tokenize(inputs)  # ragged [B, (n)]
            out = translate_ids(decode_policy.tf_source_ids(tokens, max_length))
            text = target.detokenize(_strip_after_eos(out["ids"]))
            empty = tokens.row_lengths() == 0
            return {"outputs": tf.where(empty, "", text),
                    "scores": tf.where(empty, 0.0, out["scores"])}

        self.serve = tf.function(serve, input_signature=[
            tf.TensorSpec([None], tf.string, name="inputs")])


def vocab_files(problem) -> tuple[str, str] | None:
    """`problem.vocab_files()`, each checked to exist; None for ids-only problems.

    Raises:
      ExportError: a vocabulary file is missing (says which datagen to run).
    """
    files = problem.vocab_files()
    if files is None:
        return None
    for path in files:
        if not os.path.exists(path):
            raise ExportError(f"no vocabulary {path}: run t2t_lite-datagen "
                              f"--problem={problem.name} --data_dir={os.path.dirname(path)} "
                              "first")
    return files


def check_in_graph_source(path: str) -> None:
    """Raises ExportError if the source vocabulary at `path` cannot run in the graph."""
    if SubwordVocab.load(path).model_type == "word":
        raise ExportError(f"{path} is a word-level vocabulary: its unknown-word classes "
                          "are applied in Python, not in the graph, so the run cannot be "
                          "exported; decode it with t2t_lite-decoder")


def _save(module, path, signatures):
    tf.saved_model.save(module, path, signatures=signatures)


def export(output_dir: str, export_dir: str, checkpoint: str | None = None,
           beam_size: int | None = None, alpha: float | None = None,
           extra_length: int | None = None, data_dir: str | None = None,
           log=lambda _: None, sampling: bool = False,
           text_ops: str = "core") -> ExportResult:
    """Exports the run in output_dir to export_dir/<next version>/; see the module doc."""
    start = time.time()
    if text_ops not in TEXT_OPS:
        raise ExportError(f"text_ops must be one of {', '.join(TEXT_OPS)}, not {text_ops!r}")
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise ExportError(f"{export_dir} exists and is not a directory")
    run = Run.open(output_dir, data_dir)
    options = DecodeOptions.from_hparams(
        run.hparams, beam_size=beam_size, alpha=alpha, extra_length=extra_length,
        constraint=run.problem.decode_constraint())  # DecodeOptions checks the values.
    path = run.checkpoint(checkpoint)
    model = run.model(path)
    max_length = int(run.hparams.max_length)
    ids_module = _IdsModule(model, options, max_length)
    if sampling:  # Tracked by the module, so saved with it and its ids-only copy.
        ids_module.sample_ids = sampling_signature.sample_ids_function(
            model, options, max_length)
    # The problem's own text signature (parsing: words in, trees out, core ops only),
    # else SentencePiece text in and out (tensorflow_text), else ids only.
    module = run.problem.serving_module(ids_module, lambda tokens: ids_module.translate_ids(
        decode_policy.tf_source_ids(tokens, max_length)))
    vocabs = vocab_files(run.problem) if module is None else None
    if vocabs:
        check_in_graph_source(vocabs[0])
        module = _TextModule(ids_module, max_length, *vocabs, text_ops=text_ops)

    os.makedirs(export_dir, exist_ok=True)
    for stale in atomic.remove_temporaries(export_dir, STAGING_NAME):
        log(f"removed {os.path.basename(stale)}, left by an interrupted export")
    with atomic.staging_directory(export_dir, STAGING_NAME, owned=True) as tmp:
        log("tracing translate_ids")
        signatures = {"translate_ids": ids_module.translate_ids.get_concrete_function()}
        if sampling:
            log(f"tracing {sampling_signature.SIGNATURE}")
            signatures[sampling_signature.SIGNATURE] = \
                ids_module.sample_ids.get_concrete_function()
        if module is not None:
            log("tracing serving_default (around the same translate_ids)")
            signatures["serving_default"] = module.serve.get_concrete_function()
        _save(module or ids_module, tmp, signatures)
        custom_ops = bool(vocabs) and text_ops == "tensorflow_text"
        if custom_ops:  # tensorflow_text's ops in the main SavedModel: an ids-only copy.
            _save(ids_module, os.path.join(tmp, IDS_SUBDIR),
                  {k: f for k, f in signatures.items() if k != "serving_default"})
        version = next_version(export_dir)
        final = os.path.join(export_dir, str(version))
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    return ExportResult(
        path=final, version=version, signatures=tuple(sorted(signatures)),
        ids_path=os.path.join(final, IDS_SUBDIR) if custom_ops else final,
        checkpoint=path, seconds=time.time() - start,
        size_bytes=directory_size(final))
