"""Exporting a trained run as a TensorFlow SavedModel that serves ids and text.

    export(output_dir, export_dir) -> EXPORT_DIR/<version>/   (TensorFlow Serving layout)

Signatures:
  translate_ids:   inputs int32 [B, S] (EOS included, 0-padded)
                   -> ids int32 [B, L] (best beam, EOS then 0s), scores float32 [B]
  serving_default: inputs tf.string [B] -> outputs tf.string [B], scores float32 [B]
                   (only for problems with a SentencePiece vocabulary: translation)

Decoding is `decoding.search` exactly as `decoding.Decoder` runs it: the
batch is cut to its longest row, padded to a power of two (at least 8), and
searched with max_decode_length = padded length + extra_length, so the exported
model gives the ids t2t_lite-decoder gives. The search needs a static length, so
the exported function holds one traced search per padded length 8, 16, 32, ...
up to the first that holds max_length, and picks the branch at run time
(`tf.switch_case`); inputs longer than hparams.max_length are truncated to
max_length - 1 tokens + EOS (as t2t_lite-decoder truncates file lines).

serving_default tokenizes with tensorflow_text's SentencepieceTokenizer (the
op holds the model bytes as an attribute; the .model file is also attached as
a SavedModel asset, assets/vocab.<problem>.model), appends EOS, decodes and
detokenizes in the graph. An input with no tokens (empty or blank) gives ""
and score 0, as t2t_lite-decoder does for empty lines.

A SavedModel with a tensorflow_text op cannot be loaded by a process that has
not imported tensorflow_text (the op is not registered), even to run another
signature. So for translation problems a second, ids-only SavedModel is
written to EXPORT_DIR/<version>/ids/ (same weights, only translate_ids); for
algorithmic problems the main SavedModel has no such op and is ids-only.

The version directory is written under a temporary name inside EXPORT_DIR and
renamed at the end, so a failed export leaves no partial version. The
temporary name holds the exporting process's id; the next export removes those
of processes that no longer run (an export killed by a signal).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time

import tensorflow as tf

from t2t_lite import checkpoints, decoding
from t2t_lite.model import EOS_ID

IDS_SUBDIR = "ids"


class ExportError(ValueError):
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


TMP_PREFIX = ".tmp-export-"


def _process_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # Someone else's process.
        return True
    return True


def remove_stale_temporaries(export_dir: str) -> list[str]:
    """Removes EXPORT_DIR/.tmp-export-<pid>-* left by processes that are gone."""
    removed = []
    for name in sorted(os.listdir(export_dir)):
        pid = name[len(TMP_PREFIX):].split("-", 1)[0] if name.startswith(TMP_PREFIX) else ""
        if pid.isdigit() and not _process_running(int(pid)):
            shutil.rmtree(os.path.join(export_dir, name), ignore_errors=True)
            removed.append(name)
    return removed


def directory_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(path) for f in files)


def _truncate(ids, max_length: int):
    """ids int32 [B, S] -> [B, min(S, max_length)]; long rows keep max_length-1 tokens + EOS."""
    positions = tf.range(1, tf.shape(ids)[1] + 1)
    last = tf.reduce_max(tf.where(ids != 0, positions[None, :], 0), axis=1)  # [B] lengths
    cut = ids[:, :max_length]
    at_end = tf.range(tf.shape(cut)[1]) == max_length - 1
    return tf.where(tf.logical_and((last > max_length)[:, None], at_end[None, :]),
                    tf.constant(EOS_ID, tf.int32), cut)


def _decode_ids(model, ids, options: decoding.DecodeOptions, max_length: int):
    """decoding.Decoder's search in the graph: ids [B, S] -> (best ids [B, L], scores [B])."""
    ids = _truncate(tf.cast(ids, tf.int32), max_length)
    positions = tf.range(1, tf.shape(ids)[1] + 1)
    longest = tf.maximum(1, tf.reduce_max(tf.where(ids != 0, positions[None, :], 0)))
    buckets = decoding.source_buckets(max_length)
    # The first bucket that holds the longest row, as decoding.Decoder pads.
    index = tf.reduce_sum(tf.cast(tf.constant(buckets) < longest, tf.int32))
    padded = tf.gather(tf.constant(buckets), index)
    widest = buckets[-1] + options.extra_length

    def branch(length):
        def fn():
            x = ids[:, :length]
            x = tf.pad(x, [[0, 0], [0, length - tf.shape(x)[1]]])
            x = tf.ensure_shape(x, [None, length])
            seqs, scores = decoding.search(model, x, options.beam_size, options.alpha,
                                           length + options.extra_length)
            best = tf.pad(seqs[:, 0, :], [[0, 0], [0, widest - length - options.extra_length]])
            return tf.ensure_shape(best, [None, widest]), scores[:, 0]
        return fn

    best, scores = tf.switch_case(index, [branch(n) for n in buckets])
    return best[:, :padded + options.extra_length], scores


def _strip_after_eos(ids):
    """int32 [B, L] -> ragged [B, (N)]: tokens before the first EOS, padding dropped."""
    before_eos = tf.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=1) == 0
    return tf.ragged.boolean_mask(ids, tf.logical_and(before_eos, ids != 0))


class _IdsModule(tf.Module):
    """Tracks the model weights; translate_ids closes over the Keras model."""

    def __init__(self, model, options, max_length):
        super().__init__(name="t2t_lite_export")
        self.model_weights = checkpoints.model_weights(model)
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


class _TextModule(_IdsModule):
    """Adds serving_default: text in, text out, tokenized with tensorflow_text."""

    def __init__(self, model, options, max_length, vocab_file):
        super().__init__(model, options, max_length)
        import tensorflow_text as tf_text

        with open(vocab_file, "rb") as f:
            self.tokenizer = tf_text.SentencepieceTokenizer(model=f.read(), out_type=tf.int32)
        self.vocab_asset = tf.saved_model.Asset(vocab_file)
        tokenizer = self.tokenizer

        def serve(inputs):
            tokens = tokenizer.tokenize(inputs)[:, :max_length - 1]  # ragged [B, (n)]
            counts = tf.cast(tokens.row_lengths(), tf.int32)
            dense = tf.pad(tokens.to_tensor(), [[0, 0], [0, 1]])
            positions = tf.range(tf.shape(dense)[1])
            dense = tf.where(positions[None, :] == counts[:, None], EOS_ID, dense)
            ids, scores = _decode_ids(model, dense, options, max_length)
            text = tokenizer.detokenize(_strip_after_eos(ids))
            empty = counts == 0
            return {"outputs": tf.where(empty, "", text),
                    "scores": tf.where(empty, 0.0, scores)}

        self.serve = tf.function(serve, input_signature=[
            tf.TensorSpec([None], tf.string, name="inputs")])


def _save(module, path, signatures):
    tf.saved_model.save(module, path, signatures=signatures)


def export(output_dir: str, export_dir: str, checkpoint: str | None = None,
           beam_size: int | None = None, alpha: float | None = None,
           extra_length: int | None = None, data_dir: str | None = None,
           log=lambda _: None) -> ExportResult:
    """Exports the run in output_dir to export_dir/<next version>/; see the module doc."""
    from t2t_lite import registry

    start = time.time()
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise ExportError(f"{export_dir} exists and is not a directory")
    model, hparams, info, path = checkpoints.load_model(output_dir, checkpoint)
    problem = registry.problem(info["problem"])
    problem.set_data_dir(data_dir or info.get("data_dir"))
    options = decoding.DecodeOptions.from_hparams(
        hparams, beam_size=beam_size, alpha=alpha, extra_length=extra_length)
    if options.beam_size < 1 or options.extra_length < 0:
        raise ExportError("beam_size must be >= 1 and extra_length >= 0")
    max_length = int(hparams.max_length)
    text = getattr(type(problem), "vocab_file", None) is not None
    vocab_file = problem.vocab_file if text else None  # Raises ProblemError if missing.
    if text and not os.path.exists(vocab_file):
        problem.vocab  # noqa: B018  (raises the ProblemError that says what to run)

    os.makedirs(export_dir, exist_ok=True)
    for name in remove_stale_temporaries(export_dir):
        log(f"removed {name}, left by an interrupted export")
    tmp = tempfile.mkdtemp(dir=export_dir, prefix=f"{TMP_PREFIX}{os.getpid()}-")
    try:
        ids_module = _IdsModule(model, options, max_length)
        ids_signatures = {"translate_ids": ids_module.translate_ids.get_concrete_function()}
        if text:
            log("tracing serving_default and translate_ids")
            module = _TextModule(model, options, max_length, vocab_file)
            signatures = {"serving_default": module.serve.get_concrete_function(),
                          "translate_ids": module.translate_ids.get_concrete_function()}
            _save(module, tmp, signatures)
            _save(ids_module, os.path.join(tmp, IDS_SUBDIR), ids_signatures)
        else:
            log("tracing translate_ids")
            signatures = ids_signatures
            _save(ids_module, tmp, signatures)
        version = next_version(export_dir)
        final = os.path.join(export_dir, str(version))
        os.chmod(tmp, 0o755)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ExportResult(
        path=final, version=version, signatures=tuple(sorted(signatures)),
        ids_path=os.path.join(final, IDS_SUBDIR) if text else final,
        checkpoint=path, seconds=time.time() - start, size_bytes=directory_size(final))
