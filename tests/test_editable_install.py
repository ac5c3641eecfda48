"""`pip install -e .` gives a working `import t2t_lite.problems`, with an old pip beside `wheel`.

Python 3.11's bundled pip (23.2.1), with `wheel` installed and no `[build-system]` in a
pyproject.toml, falls back to `setup.py develop`, which ignores setup.py's `package_dir`
mapping of problems/ and hparams/ into `t2t_lite`: `import t2t_lite.problems` then fails.
The project's pyproject.toml names setuptools >= 64 as its build system, so every pip takes
the PEP 660 editable path. This builds a fresh virtual environment with the interpreter's own
bundled pip (ensurepip), installs `wheel`, installs a copy of the tracked tree editable
(no dependencies: they come from this environment's site-packages, added after the install
as a plain path), and imports the mapped packages from the copy.
"""

import pathlib
import subprocess
import sysconfig
import venv

import pytest
from conftest import tracked_copy

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _pip(env: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(env / "bin" / "python"), "-m", "pip", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, timeout=600)


def test_editable_install_with_bundled_pip_and_wheel(tmp_path):
    tree = tracked_copy(tmp_path / "tree", skip=("tests", "docs", "benchmarks"))
    assert (tree / "pyproject.toml").exists()
    env = tmp_path / "env"
    venv.create(env, with_pip=True)  # The interpreter's bundled pip, not an upgraded one.
    wheel = _pip(env, "install", "-q", "wheel")
    if wheel.returncode != 0:
        pytest.skip(f"cannot install `wheel` from the package index: {wheel.stderr[-300:]}")
    installed = _pip(env, "install", "-q", "--no-deps", "-e", str(tree))
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert "setup.py develop" not in installed.stdout + installed.stderr
    purelib = pathlib.Path(subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    # The dependencies (TensorFlow, ...): this environment's site-packages as a plain path,
    # after the editable install's own finder.
    (purelib / "zz_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    result = subprocess.run(
        [str(env / "bin" / "python"), "-c",
         "import t2t_lite, t2t_lite.problems, t2t_lite.hparams; "
         "print(t2t_lite.__version__); print(t2t_lite.problems.__file__); "
         "print(t2t_lite.hparams.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    version, problems, hparams = result.stdout.split()
    import t2t_lite

    assert version == t2t_lite.__version__
    assert pathlib.Path(problems) == tree / "problems" / "__init__.py"
    assert pathlib.Path(hparams) == tree / "hparams" / "__init__.py"
