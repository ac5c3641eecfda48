"""docs/guarantees.md's tables are what the tests' `guarantee` markers say (tools/guarantees.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tools import guarantees  # noqa: E402

SAMPLE = '''
import pytest
from conftest import needs_data

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]
PROMISE = "resume"

@pytest.mark.guarantee(PROMISE, "a module-level slow mark")
def test_module_slow():
    pass
'''

CLASS_SAMPLE = '''
import pytest

@pytest.mark.slow
class TestSlowClass:
    @pytest.mark.guarantee("atomic-writes", "slow from its class")
    def test_in_class(self):
        pass

class TestFastClass:
    pytestmark = needs_data("x")

    @pytest.mark.parametrize("n", [1, 2])
    @pytest.mark.guarantee("atomic-writes", "fast,   in a class,
    needs data")
    def test_fast(self, n):
        pass

@pytest.mark.guarantee("replicas", "fast")
@pytest.mark.guarantee("resume", "two promises")
def test_two(tmp_path):
    data_file("x")

def test_unmarked():
    pass
'''.replace('fast,   in a class,\n    needs data', 'fast,   in a class, needs data')


def test_the_reader_follows_pytest_marker_rules(tmp_path):
    (tmp_path / "a.py").write_text(SAMPLE)
    (tmp_path / "b.py").write_text(CLASS_SAMPLE)
    a = guarantees.read_file(tmp_path / "a.py", "a.py")
    assert [(p.promise, p.test, p.tier) for p in a] == [("resume", "a.py::test_module_slow",
                                                          "slow")]
    b = guarantees.read_file(tmp_path / "b.py", "b.py")
    assert [(p.promise, p.test, p.tier, p.what) for p in b] == [
        ("atomic-writes", "b.py::TestSlowClass::test_in_class", "slow", "slow from its class"),
        ("atomic-writes", "b.py::TestFastClass::test_fast", "fast, needs data",
         "fast, in a class, needs data"),
        ("replicas", "b.py::test_two", "fast, needs data", "fast"),
        ("resume", "b.py::test_two", "fast, needs data", "two promises"),
    ]


def test_an_unknown_promise_or_a_computed_text_is_refused(tmp_path):
    (tmp_path / "c.py").write_text('import pytest\n@pytest.mark.guarantee("speed", "x")\n'
                                   'def test_x():\n    pass\n')
    with pytest.raises(ValueError, match="unknown promise 'speed'"):
        guarantees.read_file(tmp_path / "c.py", "c.py")
    (tmp_path / "d.py").write_text('import pytest\n@pytest.mark.guarantee("resume", f"{1}")\n'
                                   'def test_x():\n    pass\n')
    with pytest.raises(ValueError, match="two plain strings"):
        guarantees.read_file(tmp_path / "d.py", "d.py")


def test_the_page_is_what_the_markers_say():
    with open(os.path.join(guarantees.ROOT, guarantees.PAGE), encoding="utf-8") as f:
        assert f.read() == guarantees.page(), (
            "docs/guarantees.md differs from the tests' guarantee markers; run "
            "`python -m tools.gen_docs` and commit it")


def test_every_promise_has_a_fast_test():
    proofs = guarantees.collect()
    for key in guarantees.PROMISES:
        fast = [p.test for p in proofs if p.promise == key and not p.slow and not p.needs_data]
        assert fast, f"no fast test that does not need data proves {key!r}"


def test_the_reading_agrees_with_pytest_collection(request):
    """Each collected test carrying a guarantee marker is read with the tier pytest gives it
    (its `slow` marker, from the function, class or module), and each proof read from a file
    this session collected is collected (unless its tier was deselected with -m)."""
    static = {(p.test, p.promise): p for p in guarantees.collect()}
    seen = set()
    for item in request.session.items:
        node = item.nodeid.split("[", 1)[0]
        for mark in item.iter_markers("guarantee"):
            proof = static.get((node, mark.args[0]))
            assert proof is not None, f"{node}: guarantee({mark.args[0]!r}) was not read"
            assert proof.slow == (item.get_closest_marker("slow") is not None), node
            seen.add((node, mark.args[0]))
    # Files whose every test this session selected (-k picks tests by name within a file).
    files = {item.nodeid.split("::", 1)[0] for item in request.session.items
             if not request.config.option.keyword}
    tiers = {"not slow": {False}, "slow": {True}}.get(request.config.option.markexpr,
                                                      {False, True})
    expected = {key for key, p in static.items()
                if key[0].split("::", 1)[0] in files and p.slow in tiers}
    assert expected <= seen, sorted(expected - seen)
