"""The Guarantees page's tables, read from the tests' `guarantee` markers.

A test proves part of a promise when it carries

    @pytest.mark.guarantee("atomic-writes", "what it checks, in one sentence")

Its tier is read from its markers the way pytest reads them: it is slow when the function, its
class or its module (`pytestmark`) is marked `slow`. It needs data when it, its class or its
module is marked with `needs_data(...)`, or its body calls `data_file(...)` (both from
tests/conftest.py). The tests are read without importing them (no TensorFlow start-up), and
tests/test_guarantees.py checks this reading against pytest's own collection.

docs/guarantees.md keeps its prose; each promise's table sits between
`<!-- guarantee:KEY -->` and `<!-- /guarantee:KEY -->` and is rewritten by
`python -m tools.gen_docs`.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = "docs/guarantees.md"

# The promises, in the page's order: key -> section title.
PROMISES = {
    "resume": "Resume after a kill",
    "damaged-checkpoint": "A damaged checkpoint is skipped, not fatal",
    "atomic-writes": "Atomic writes",
    "one-line-errors": "One-line errors",
    "no-data-dropped": "No data silently dropped",
    "export-parity": "Exports decode as the decoder does",
    "replicas": "N replicas train as one",
}


@dataclasses.dataclass(frozen=True)
class Proof:
    """One test's part in one promise."""

    promise: str
    test: str  # pytest node id without parameters: tests/x.py::Class::test_name
    slow: bool
    needs_data: bool
    what: str

    @property
    def tier(self) -> str:
        return ("slow" if self.slow else "fast") + (", needs data" if self.needs_data else "")


def _mark_name(node: ast.AST) -> str | None:
    """`slow` for `pytest.mark.slow`, `guarantee` for `pytest.mark.guarantee(...)`."""
    if isinstance(node, ast.Call):
        node = node.func
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "mark"):
        return node.attr
    return None


def _marks(nodes) -> list[ast.AST]:
    """The marker expressions in decorators or a `pytestmark` value (one, a list or a tuple)."""
    out = []
    for node in nodes:
        out.extend(node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node])
    return out


def _calls(nodes, name: str) -> bool:
    """Whether any of `nodes` calls the plain function `name`."""
    return any(isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
               and sub.func.id == name for node in nodes for sub in ast.walk(node))


def _pytestmark(body) -> list[ast.AST]:
    return [node.value for node in body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)]


def _constants(body) -> dict[str, str]:
    """The module's plain string constants (`ATOMIC = "atomic-writes"`), by name."""
    return {t.id: node.value.value for node in body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _guarantees(function: ast.AST, where: str, constants: dict) -> list[tuple[str, str]]:
    out = []
    for mark in function.decorator_list:
        if _mark_name(mark) != "guarantee":
            continue
        args = [constants.get(a.id) if isinstance(a, ast.Name) else
                a.value if isinstance(a, ast.Constant) else None for a in mark.args]
        if len(args) != 2 or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{where}: write guarantee(\"PROMISE\", \"what it checks\") "
                             "with two plain strings (or module-level string constants)")
        if args[0] not in PROMISES:
            raise ValueError(f"{where}: unknown promise {args[0]!r}; "
                             f"known: {', '.join(PROMISES)}")
        out.append((args[0], " ".join(args[1].split())))
    return out


def read_file(path: pathlib.Path, name: str) -> list[Proof]:
    """The proofs in one test file; `name` is its path relative to the repository."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=name)
    module = _marks(_pytestmark(tree.body))
    constants = _constants(tree.body)
    proofs = []

    def visit(body, prefix, outer):
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                inner = outer + _marks(node.decorator_list + _pytestmark(node.body))
                visit(node.body, f"{prefix}::{node.name}", inner)
            elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.name.startswith("test")):
                marks = outer + _marks(node.decorator_list)
                test = f"{prefix}::{node.name}"
                slow = any(_mark_name(m) == "slow" for m in marks)
                data = _calls(marks, "needs_data") or _calls(node.body, "data_file")
                proofs.extend(Proof(key, test, slow, data, what)
                              for key, what in _guarantees(node, test, constants))

    visit(tree.body, name, module)
    return proofs


def collect(root: pathlib.Path = ROOT) -> list[Proof]:
    """Every proof under root/tests, in file order."""
    out = []
    for path in sorted((root / "tests").rglob("test_*.py")):
        out.extend(read_file(path, path.relative_to(root).as_posix()))
    return out


def table(proofs: list[Proof]) -> str:
    """The Markdown table of one promise's proofs: fast ones first, then by test id."""
    rows = sorted(proofs, key=lambda p: (p.slow, p.needs_data, p.test))
    lines = ["| test | tier | what it checks |", "|---|---|---|"]
    lines += [f"| `{p.test}` | {p.tier} | {p.what.replace('|', '&#124;')} |" for p in rows]
    return "\n".join(lines) + "\n"


def render(page: str, proofs: list[Proof]) -> str:
    """`page` with each promise's marked block rewritten from `proofs`."""
    for key in PROMISES:
        start, end = f"<!-- guarantee:{key} -->", f"<!-- /guarantee:{key} -->"
        if start not in page or end not in page:
            raise ValueError(f"{PAGE} lacks the block {start} ... {end}")
        mine = [p for p in proofs if p.promise == key]
        if not mine:
            raise ValueError(f"no test carries guarantee({key!r}, ...)")
        page = re.sub(re.escape(start) + ".*?" + re.escape(end),
                      lambda _: f"{start}\n{table(mine)}{end}", page, flags=re.S)
    return page


def page(root: pathlib.Path = ROOT) -> str:
    """The generated docs/guarantees.md."""
    return render((root / PAGE).read_text(encoding="utf-8"), collect(root))
