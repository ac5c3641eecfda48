"""Writes (or, with --check, compares) every generated documentation page.

    python -m tools.gen_docs               # rewrite docs/reference/, docs/results/, README's table
    python -m tools.gen_docs --check       # exit 1 and name each page that differs
    python -m tools.gen_docs --provenance  # refresh benchmarks/results/provenance.json (git blame)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import glance, reference_pages, results_pages, results_specs  # noqa: E402

RESULTS_INDEX = """{generated}# Results

Every figure on these pages is a row in `benchmarks/results/*.jsonl`, written by the script
that measured it; the pages are rendered from the rows by `python -m tools.gen_docs`, and a
test fails when a committed page differs from what it renders. Each table names its rows' date,
commit, machine and the command that reproduces them. Figures from different machines or runs
are not comparable: read each one beside its peer of the same run. How the benchmarks are run:
[Benchmarks](../development/benchmarks.md).

## At a glance

{glance}
## Pages

- [The demo and export](demo.md)
- [Translation quality](translation.md): Multi30k, the RNN baselines, CTranslate2, fine-tuning
- [Constituency parsing](parsing.md): beside supar's chart parser
- [Training speed](training-speed.md): beside torch and keras-hub
- [Decoding and serving speed](decoding-speed.md): beside Hugging Face and CTranslate2
"""


def pages() -> dict[str, str]:
    """Repository-relative path -> the generated text."""
    provenance = results_pages.load_provenance()
    out = {f"docs/{path}": text for path, text in reference_pages.pages().items()}
    for page in results_specs.PAGES:
        out[f"docs/{page.path}"] = results_pages.render_page(page, provenance)
    out["docs/results/index.md"] = RESULTS_INDEX.format(
        generated=results_pages.GENERATED, glance=glance.table(provenance, ""))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if glance.START in readme and glance.END in readme:
        head, rest = readme.split(glance.START, 1)
        _, tail = rest.split(glance.END, 1)
        out["README.md"] = (head + glance.START + "\n" + glance.table(provenance, "docs/results/")
                            + glance.END + tail)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gen_docs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--provenance", action="store_true",
                        help="refresh benchmarks/results/provenance.json from git blame first")
    args = parser.parse_args(argv)
    if args.provenance:
        text = json.dumps(results_pages.blame_provenance(), indent=1, sort_keys=True) + "\n"
        results_pages.PROVENANCE.write_text(text, encoding="utf-8")
    stale = []
    for path, text in pages().items():
        target = ROOT / path
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("gen_docs: error: these pages differ from what `python -m tools.gen_docs` "
              "renders; run it and commit: " + ", ".join(stale), file=sys.stderr)
        return 1
    for path in stale if not args.check else []:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
