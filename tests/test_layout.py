"""The package's layout: no import circle, and each subpackage imports only what
the Layout page (docs/development/layout.md) allows.

The import graph is read statically (every `import` statement, those inside
functions included) from the source files; the registry's lazy loading of
problems, hparams sets and models goes through `importlib` by name and is the
one circle the layout allows, so it is not in this graph.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = {"t2t_lite": "t2t_lite", "problems": "t2t_lite.problems",
           "hparams": "t2t_lite.hparams"}

# Subpackage (or top-level module) -> what it may import, as docs/development/layout.md's
# table says. "ids", "errors", "atomic", "records", "progress" are the leaves everyone may use.
LEAVES = {"ids", "errors", "atomic", "records", "progress"}
ALLOWED = {
    "t2t_lite": set(),
    "ids": set(),
    "errors": set(),
    "atomic": {"errors"},
    "records": {"errors"},
    "progress": set(),
    "registry": {"errors"},
    "layers": set(),
    "metrics": set(),
    "parsing": {"metrics", "data"},
    "hparams": {"registry"},
    "models": {"layers", "registry", "hparams", "data"},
    "data": {"registry"},
    "decoding": {"data", "metrics", "hparams"},
    "problems": {"data", "metrics", "parsing", "models", "registry"},
    "runs": {"registry", "hparams", "problems", "models"},
    "training": {"data", "decoding", "runs", "metrics", "problems", "hparams", "models",
                 "registry"},
    "serving": {"runs", "decoding", "data", "registry", "problems"},
    "pictures": {"runs", "decoding", "data", "problems", "registry"},
    "bin": None,  # The CLIs may import anything.
}


def _modules() -> dict[str, pathlib.Path]:
    modules = {}
    for directory, package in SOURCES.items():
        for path in sorted((ROOT / directory).rglob("*.py")):
            parts = list(path.relative_to(ROOT / directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}"
                           in modules else node.module for alias in node.names]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _unit(module: str) -> str:
    """t2t_lite.training.trainer -> "training"; t2t_lite.registry -> "registry"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "t2t_lite"


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_subpackages_import_only_what_the_layout_allows():
    broken = []
    for module, targets in _graph().items():
        unit = _unit(module)
        allowed = ALLOWED[unit]
        if allowed is None:
            continue
        for target in targets:
            other = _unit(target)
            if other != unit and other not in allowed | LEAVES:
                broken.append(f"{module} imports {target}")
    assert broken == []


def test_the_top_level_is_small():
    top = sorted(p.stem for p in (ROOT / "t2t_lite").glob("*.py") if p.stem != "__init__")
    assert top == sorted(LEAVES | {"registry"})
    assert set(ALLOWED) >= {p.name for p in (ROOT / "t2t_lite").iterdir()
                            if (p / "__init__.py").exists()}


def test_no_library_function_over_sixty_lines():
    """docs/development/design.md: functions under about 60 lines, the CLIs' included."""
    long = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{module}.{node.name}: {lines} lines")
    assert long == []


SUBPROCESS_CALLS = {"run", "check_output", "check_call", "call"}


def _unbounded_waits(source: str) -> list[int]:
    """Lines of `subprocess.run/check_output/...` calls without `timeout=`, and of
    `.wait()`/`.communicate()` without a timeout."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        timed = any(k.arg == "timeout" for k in node.keywords)
        spawn = (isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"
                 and node.func.attr in SUBPROCESS_CALLS)
        wait = node.func.attr in ("wait", "communicate") and not node.args
        if (spawn or wait) and not timed:
            lines.append(node.lineno)
    return lines


def test_every_subprocess_a_test_starts_is_waited_for_with_a_timeout():
    """A stuck child (a collective waiting for a dead peer, a pip without network) fails its
    test instead of holding CI until its hard limit; pytest-timeout bounds the rest."""
    unbounded = [f"{path.relative_to(ROOT)}:{line}"
                 for path in sorted((ROOT / "tests").rglob("*.py"))
                 for line in _unbounded_waits(path.read_text(encoding="utf-8"))]
    assert unbounded == []


def test_the_wait_check_finds_an_unbounded_call():
    source = ("import subprocess\nsubprocess.run(['x'])\nsubprocess.run(['x'], timeout=9)\n"
              "p = subprocess.Popen(['x'])\np.wait()\np.wait(timeout=1)\np.communicate()\n")
    assert _unbounded_waits(source) == [2, 5, 7]
