"""Decoding a problem's text: a whole split, scored, or lines of a file.

Text is encoded and decoded with the problem's vocabularies, truncated as
`t2t_lite.decoding.decode_policy` says, and scored with the problem's own
metrics (`Problem.evaluate`).
"""

from __future__ import annotations

import dataclasses

from t2t_lite.decoding import decode_policy
from t2t_lite.decoding.decoder import decoder_for
from t2t_lite.decoding.options import DecodeOptions
from t2t_lite.metrics.base import Score


@dataclasses.dataclass(frozen=True)
class SplitReport:
    """Decoding of a problem's split, scored with the problem's own metrics.

    Attributes:
      sources, hypotheses, references: text, one per example, in split order.
      scores: `problem.evaluate(hypotheses, references, sources)`, in the order
        of `problem.eval_metrics()`.
    """

    sources: list[str]
    hypotheses: list[str]
    references: list[str]
    scores: list[Score]

    def score(self, name: str) -> Score:
        """The Score called `name` (KeyError if the problem has no such metric)."""
        for score in self.scores:
            if score.name == name:
                return score
        raise KeyError(f"no score {name!r}; the scores are "
                       f"{', '.join(s.name for s in self.scores)}")


def decode_split(problem, model, split: str, options: DecodeOptions,
                 data_dir: str | None = None, progress=None) -> SplitReport:
    """Decodes every example of `split` and scores it with `problem.evaluate`.

    `progress`: fn(total) -> a `t2t_lite.progress.Progress`, or None.
    """
    examples = list(problem.examples(split, data_dir).as_numpy_iterator())
    decoded = decoder_for(model, options).decode([list(ex["inputs"]) for ex in examples],
                                             progress and progress(len(examples)))
    sources = [problem.decode_inputs(ex["inputs"]) for ex in examples]
    hypotheses = [problem.format_output(s, problem.decode(best[0][0]))
                  for s, best in zip(sources, decoded)]
    references = [problem.format_output(s, problem.decode(ex["targets"]))
                  for s, ex in zip(sources, examples)]
    scores = problem.evaluate(hypotheses, references, sources)
    return SplitReport(sources, hypotheses, references, scores)


def encode_lines(problem, lines: list[str], max_length: int, warn=print) -> list[list[int]]:
    """Source lines -> id sequences with EOS; empty lines stay empty; long ones truncated.

    Truncation is `decode_policy.source_ids` (max_length - 1 tokens + EOS), with a
    warning naming the line.
    """
    sources = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            sources.append([])
            continue
        tokens = problem.encode(line.strip())
        ids = decode_policy.source_ids(tokens, max_length)
        if len(ids) < len(tokens) + 1:
            warn(f"line {number}: {len(tokens) + 1} tokens, truncated to "
                 f"max_length={max_length}")
        sources.append(ids)
    return sources


def decode_lines(problem, model, lines: list[str], options: DecodeOptions,
                 max_length: int, warn=print, progress=None) -> list[list[tuple[str, float]]]:
    """Decodes text lines; each result is [(text, score), ...], best first.

    An empty input line gives [("", 0.0)] (N of them when sampling N); samples of
    line i are keyed i. `progress`: as for `decode_split`.
    """
    sources = encode_lines(problem, lines, max_length, warn)
    nonempty = [i for i, ids in enumerate(sources) if ids]
    decoded = decoder_for(model, options).decode([sources[i] for i in nonempty],
                                             progress and progress(len(nonempty)),
                                             keys=nonempty)  # Samples keyed by line.
    empty = [("", 0.0)] * (options.num_samples if options.sampling else 1)
    results = [list(empty) for _ in sources]
    for i, beams in zip(nonempty, decoded):
        results[i] = [(problem.format_output(lines[i].strip(), problem.decode(ids)), score)
                      for ids, score in beams]
    return results
