"""Translating with a CTranslate2 export of `ctranslate2_export`: SentencePiece, then
`ctranslate2.Translator`, then SentencePiece, with the decoding settings the export
recorded in its t2t_lite.json (beam size, length penalty, t2t_lite's per-source length
limit and input truncation). Imports neither TensorFlow nor, until a model is loaded,
ctranslate2.
"""

from __future__ import annotations

import dataclasses
import json
import os

from t2t_lite.data.text_encoder import SubwordVocab, normalize
from t2t_lite.ids import strip_ids
from t2t_lite.serving.ctranslate2_export import (METADATA_FILE, CTranslate2Error,
                                                 import_ctranslate2)


@dataclasses.dataclass
class LoadedModel:
    """An exported model, loaded: the translator, vocabularies and t2t_lite.json."""

    path: str
    translator: object  # ctranslate2.Translator
    source_vocab: SubwordVocab
    target_vocab: SubwordVocab
    settings: dict

    def __post_init__(self):
        self.target_ids = {self.target_vocab.id_to_piece(i): i
                           for i in range(self.target_vocab.vocab_size)}


def load(model_dir: str, device: str = "cpu", compute_type: str = "default",
         **translator_options) -> LoadedModel:
    """Loads an export of `export_ctranslate2` (`translator_options`: e.g. intra_threads)."""
    metadata = os.path.join(model_dir, METADATA_FILE)
    if not os.path.exists(metadata):
        raise CTranslate2Error(f"{model_dir} holds no {METADATA_FILE}: not a t2t_lite "
                               "CTranslate2 export (t2t_lite-exporter --format=ctranslate2)")
    with open(metadata, encoding="utf-8") as f:
        settings = json.load(f)
    ct2 = import_ctranslate2()
    translator = ct2.Translator(model_dir, device=device, compute_type=compute_type,
                                **translator_options)
    return LoadedModel(model_dir, translator,
                       SubwordVocab.load(os.path.join(model_dir, settings["source_spm"])),
                       SubwordVocab.load(os.path.join(model_dir, settings["target_spm"])),
                       settings)


def _max_decoding_length(settings: dict, num_tokens: int, extra_length: int) -> int:
    """decode_policy's limit for one source: its padded length (EOS included) + extra_length."""
    length = min(num_tokens + 1, settings["max_length"])
    padded = next(b for b in settings["source_buckets"] if b >= length)
    return min(padded + extra_length, settings["positions"])


def translate_ids(model, sources: list[list[int]], beam_size: int | None = None,
                  length_penalty: float | None = None, extra_length: int | None = None,
                  max_batch_size: int = 64, **options) -> list[tuple[list[int], float]]:
    """Source ids (no EOS) -> (target ids without EOS and padding, score) per source.

    Args:
      model: a `LoadedModel` or an export's directory.
      beam_size, length_penalty, extra_length: default to t2t_lite.json's
        (length_penalty 0 when beam_size is 1: the greedy score is the sum of
        log-probs, as t2t_lite's).
      options: more `ctranslate2.Translator.translate_batch` arguments.
    """
    model = model if isinstance(model, LoadedModel) else load(model)
    settings = model.settings
    beam_size = beam_size or settings["beam_size"]
    if length_penalty is None:
        length_penalty = 0.0 if beam_size == 1 else settings["length_penalty"]
    extra = settings["extra_length"] if extra_length is None else extra_length
    groups = {}  # Sources with the same length limit, decoded together.
    for i, ids in enumerate(sources):
        groups.setdefault(_max_decoding_length(settings, len(ids), extra), []).append(i)
    piece = model.source_vocab.id_to_piece
    results = [None] * len(sources)
    for limit, members in sorted(groups.items()):
        outputs = model.translator.translate_batch(
            [[piece(t) for t in sources[i]] for i in members], beam_size=beam_size,
            length_penalty=length_penalty, max_decoding_length=limit,
            min_decoding_length=0, max_input_length=settings["max_length"],
            return_scores=True, max_batch_size=max_batch_size, **options)
        for i, out in zip(members, outputs):
            ids = strip_ids(model.target_ids[p] for p in out.hypotheses[0])
            results[i] = (ids, float(out.scores[0]))
    return results


def translate_text(model, lines: list[str], beam_size: int | None = None,
                   length_penalty: float | None = None, **options) -> list[str]:
    """Translates text lines with an export: SentencePiece, CTranslate2, SentencePiece.

    Each line is normalized and encoded with the source .model (as t2t_lite-decoder
    encodes it), translated (`translate_ids`: EOS appended by CTranslate2, stripped
    from the output) and decoded with the target .model; a blank line gives "".

    Args:
      model: a `LoadedModel` or an export's directory (EXPORT_DIR/<version>).
      beam_size, length_penalty, options: as for `translate_ids`.
    """
    model = model if isinstance(model, LoadedModel) else load(model)
    sources = [model.source_vocab.encode(normalize(line)) for line in lines]
    results = translate_ids(model, sources, beam_size, length_penalty, **options)
    return [model.target_vocab.decode(ids) if source else ""
            for source, (ids, _) in zip(sources, results)]


