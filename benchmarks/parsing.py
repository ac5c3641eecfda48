"""Labelled F1 (EVALB, COLLINS.prm) of a wsj_parsing run, with and without the tree constraint.

    python -m benchmarks.parse scores --output_dir=runs/parse --checkpoints=ckpt-3900,ckpt-7800

For each checkpoint, decodes the problem's test split (held-out files) with
the run's decoding hparams (beam 21, alpha 0.3, input + 300 for `parsing` and
`parsing_small`), once per mode (--modes: the decoder's constrained search,
the tree constraint without the tag dictionary, the unconstrained search), and
prints one JSON line each: step, F1 as EVALB computes it (error sentences left
out), F1 counting error sentences as unparsed, the error count, and the wall
time of the decode. The recipe that trains such a run is in the README
("Constituency parsing").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--checkpoints", default="", help="comma-separated (default newest)")
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--split", default="test")
    parser.add_argument("--beam_size", type=int, default=None)
    parser.add_argument("--alpha", type=float, default=None,
                        help="the length penalty's alpha (default: the run's hparams)")
    parser.add_argument("--system", default=None, help="a name for the rows (side by side)")
    parser.add_argument("--field", action="append", default=[],
                        help="key=value added to every row (numbers stay numbers)")
    parser.add_argument("--modes", default="constrained,tree_only,unconstrained",
                        help="constrained: the decoder's default (the tree constraint and, "
                             "with a word-level source, the tag dictionary); tree_only: "
                             "without the tag dictionary; unconstrained: neither")
    parser.add_argument("--trees_out", default=None,
                        help="also write DIR/CHECKPOINT.MODE.{gold,test}.trees (the split's "
                             "references and the parses, one per line) for evalb_row.py")
    parser.add_argument("--span_bias", type=float, default=None,
                        help="span_transformer: the decoding bias of a span's phrase "
                             "log-odds (default: the run's hparams)")


def main(args):

    from t2t_lite.runs.run import Run
    from t2t_lite.decoding.options import DecodeOptions
    from t2t_lite.decoding.splits import decode_split
    from t2t_lite.metrics.evalb import evaluate, load_params, strict_f1

    from benchmarks.machine import cpu_model

    params = dataclasses.replace(load_params("COLLINS"), max_error=None)  # Score every line.
    extra = {"cpu": cpu_model(), **dict(_field(item) for item in args.field)}
    if args.system:
        extra = {"system": args.system, "model": None, **extra}
    for name in args.checkpoints.split(",") if args.checkpoints else [None]:
        run = Run.open(args.output_dir, args.data_dir)
        path = run.checkpoint(name)
        model, hparams, problem = run.model(path), run.hparams, run.problem
        if hparams.model == "span_transformer":  # Its decoding bias, as run or as given.
            if args.span_bias is not None:
                model.span_bias = args.span_bias
            extra["span_bias"] = model.span_bias
        for mode in args.modes.split(","):
            options = DecodeOptions.from_hparams(
                hparams, beam_size=args.beam_size, alpha=args.alpha,
                constraint=None if mode == "unconstrained" else problem.decode_constraint(
                    tag_dictionary=mode == "constrained"))
            start = time.time()
            report = decode_split(problem, model, args.split, options)
            seconds = time.time() - start
            result = evaluate(report.references, report.hypotheses, params)
            if args.trees_out:
                _write_trees(args.trees_out, f"{os.path.basename(path)}.{mode}", report)
            t = result.all
            if "model" in extra:
                extra["model"] = hparams.model
            print(json.dumps({**extra,
                "checkpoint": os.path.basename(path), "mode": mode, "split": args.split,
                "sentences": t.sentences, "beam_size": options.beam_size,
                "alpha": options.alpha, "extra_length": options.extra_length,
                "f1": round(t.fmeasure, 2), "recall": round(t.recall, 2),
                "precision": round(t.precision, 2),
                "f1_errors_as_unparsed": round(strict_f1(result, report.references, params), 2),
                "errors": t.errors, "skipped": t.skipped,
                "tagging": round(t.tag_accuracy, 2),
                **unknown_word_tagging(problem, report.hypotheses, report.references),
                "decode_seconds": round(seconds, 1)}),
                flush=True)


def unknown_word_tagging(problem, hypotheses, references) -> dict:
    """Tagging accuracy (every word, punctuation too) split by whether the word-level
    source vocabulary knows the word: {"unknown_share", "tagging_known",
    "tagging_unknown"} in percent; {} for a BPE source. A sentence whose trees
    disagree on the words (an unparsed line) counts as all wrong."""
    from t2t_lite.data import word_classes
    from t2t_lite.parsing import ptb

    vocab = problem.source_vocab
    if vocab.model_type != "word":
        return {}
    pieces = set(word_classes.CLASS_PIECES)
    classes = {i for i in range(vocab.vocab_size) if vocab.id_to_piece(i) in pieces}
    right, total = {True: 0, False: 0}, {True: 0, False: 0}
    for hypothesis, reference in zip(hypotheses, references):
        gold = ptb.read_trees(reference)[0]
        words, gold_tags = ptb.words(gold), ptb.tags(gold)
        try:
            tree = ptb.read_trees(hypothesis)[0]
            tags = ptb.tags(tree) if ptb.words(tree) == words else [None] * len(words)
        except ptb.TreeError:
            tags = [None] * len(words)
        for word, gold_tag, tag in zip(words, gold_tags, tags):
            unknown = problem.encode(ptb.unescape_word(word))[0] in classes
            total[unknown] += 1
            right[unknown] += tag == gold_tag
    words = total[True] + total[False]
    return {"unknown_share": round(100 * total[True] / max(words, 1), 2),
            "tagging_known": round(100 * right[False] / max(total[False], 1), 2),
            "tagging_unknown": round(100 * right[True] / max(total[True], 1), 2)}


def _write_trees(directory: str, name: str, report) -> None:
    """The references and hypotheses of a decode, one tree per line, as two files."""
    os.makedirs(directory, exist_ok=True)
    for kind, trees in (("gold", report.references), ("test", report.hypotheses)):
        with open(os.path.join(directory, f"{name}.{kind}.trees"), "w", encoding="utf-8") as f:
            f.writelines(tree + "\n" for tree in trees)


def _field(item: str):
    key, value = item.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value
