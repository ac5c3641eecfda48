"""Results at a glance: a few headline rows, each beside its peer of the same run.

Rendered into docs/results/index.md and between the `results:start` / `results:end`
markers of README.md by `python -m tools.gen_docs`.
"""

from __future__ import annotations

from tools.results_pages import machine, rows

START, END = "<!-- results:start -->", "<!-- results:end -->"


def _last(file: str, match) -> dict:
    found = [row for row in rows(file) if match(row)]
    if not found:
        raise LookupError(f"no row of {file} matches a headline")
    return found[-1]


def _after(file: str, anchor: dict, match) -> dict:
    """The first row after `anchor` in `file` that matches: its peer in the same run."""
    table = rows(file)
    start = next(i for i, row in enumerate(table) if row["_key"] == anchor["_key"])
    return next(row for row in table[start + 1:] if match(row))


def _before(file: str, anchor: dict, match) -> dict:
    table = rows(file)
    start = next(i for i, row in enumerate(table) if row["_key"] == anchor["_key"])
    return next(row for row in reversed(table[:start]) if match(row))


def _median(row, field="tgt_tokens_per_s"):
    value = row[field]
    return value["median"] if isinstance(value, dict) else value


def headlines(provenance: dict) -> list[tuple[str, str, str, dict, str, str]]:
    """(what, t2t_lite, peer, the t2t_lite row, its row file, its results page)."""
    out = []
    demo = _last("demo.jsonl", lambda r: "accuracy" in r)
    out.append(("`make demo`: held-out exact-sequence accuracy (algorithmic_reverse)",
                f"{demo['accuracy']['averaged']['percent']:.2f}% "
                f"({demo['accuracy']['averaged']['correct']:,}/{demo['accuracy']['averaged']['total']:,})",
                "-", demo, "demo.jsonl", "demo.md"))
    ours = _last("multi30k.jsonl", lambda r: r.get("minutes") == 60.0 and "bleu" in r
                 and r.get("system", "").startswith("t2t_lite"))
    peer = _last("multi30k.jsonl", lambda r: "bleu_test2016_60min" in r)
    out.append(("Multi30k EN-DE test2016 sacreBLEU, 60 minutes of training, one CPU core each",
                f"{ours['bleu']['averaged_beam4']}",
                f"keras-hub: {peer['bleu_test2016_60min']}", ours, "multi30k.jsonl",
                "translation.md"))
    parse = _last("parsing_side_by_side.jsonl",
                  lambda r: r.get("system") == "t2t_lite" and r.get("selected") == "averaged")
    supar = _after("parsing_side_by_side.jsonl", parse,
                   lambda r: r.get("system") == "supar_crf_con" and r.get("minutes") == 60)
    out.append((f"WSJ sample test F1, `{parse['hparams']}`, 60 minutes on one core",
                f"{parse['f1']}", f"supar, same hour: {supar['f1']}", parse,
                "parsing_side_by_side.jsonl", "parsing.md"))
    train = _last("train_side_by_side.jsonl",
                  lambda r: r.get("system") == "t2t_lite StepRunner" and r.get("size") == "base")
    torch = _before("train_side_by_side.jsonl", train,
                    lambda r: r.get("system") == "torch.nn.Transformer")
    out.append(("Training `base`, target tokens/s on 2 CPU threads (no XLA)",
                f"{_median(train):,.0f} (MFU {100 * train['mfu']:.1f}%)",
                f"torch.nn.Transformer: {_median(torch):,.0f}", train,
                "train_side_by_side.jsonl", "training-speed.md"))
    decode = _last("ctranslate2_multi30k.jsonl", lambda r: r["system"] == "t2t_lite decoder")
    ct2 = _after("ctranslate2_multi30k.jsonl", decode,
                 lambda r: r["system"] == "CTranslate2 float32")
    out.append(("Decoding Multi30k test2016 (beam 4, 2 threads), sentences/s",
                f"{decode['sentences_per_s']}",
                f"CTranslate2 float32 export: {ct2['sentences_per_s']}", decode,
                "ctranslate2_multi30k.jsonl", "translation.md"))
    return out


def table(provenance: dict, link_prefix: str) -> str:
    lines = ["| result | t2t_lite | peer | date | commit | machine | rows |",
             "|---|---|---|---|---|---|---|"]
    for what, ours, peer, row, file, page in headlines(provenance):
        commit, date = provenance.get(file, {}).get(row["_key"], ["", ""])
        lines.append(f"| {what} | **{ours}** | {peer} | {row.get('date') or date} | "
                     f"{row.get('commit') or commit} | {machine(row)} | "
                     f"[`{file}`]({link_prefix}{page}) |")
    return "\n".join(lines) + "\n"
