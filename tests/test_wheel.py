"""A wheel built from the tree installs every subpackage and console script.

`setup.py` finds its packages itself; an editable install would hide a
subpackage missing from the list, so this builds a real wheel from a copy of
the tracked files, installs it (no editable install, no dependencies: they come
from this environment's site-packages, added as a plain path so its editable
finder of the source tree is not loaded) into a fresh virtual environment, and
runs every console script's --help there, outside the source tree.
"""

import os
import pathlib
import subprocess
import sys
import sysconfig
import venv
import zipfile

import pytest
from conftest import tracked_copy

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the built wheel, the fresh environment's bin directory)."""
    pytest.importorskip("wheel", reason="the test extra's `wheel` builds the wheel")
    tree = tracked_copy(tmp_path_factory.mktemp("tree"))
    wheels = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(tree)], check=True, capture_output=True,
                   timeout=300)
    (wheel,) = wheels.glob("t2t_lite-*.whl")
    env_dir = tmp_path_factory.mktemp("env")
    venv.create(env_dir, with_pip=False)
    purelib = pathlib.Path(subprocess.run(
        [str(env_dir / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"),
                    "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    # The dependencies: this environment's site-packages as a plain path (its
    # own .pth files, the editable finder among them, are not run from there).
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return wheel, env_dir / "bin"


def _console_scripts() -> list[str]:
    text = (ROOT / "setup.py").read_text()
    return sorted(set(part.split("=")[0].strip().strip('"')
                      for part in text.split('"') if part.startswith("t2t_lite-")
                      and "=" in part))


def test_wheel_holds_every_package_and_module(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = set()
    for source, target in (("t2t_lite", "t2t_lite"), ("problems", "t2t_lite/problems"),
                           ("hparams", "t2t_lite/hparams")):
        for path in (ROOT / source).rglob("*.py"):
            expected.add(f"{target}/{path.relative_to(ROOT / source).as_posix()}")
    assert expected - names == set()
    for package in {os.path.dirname(n) for n in expected}:
        assert f"{package}/__init__.py" in names, f"{package} is not a package"


def test_every_console_script_runs_from_the_wheel(installed, tmp_path):
    _, bin_dir = installed
    scripts = _console_scripts()
    assert len(scripts) >= 9 and "t2t_lite-trainer" in scripts
    for script in scripts:
        assert (bin_dir / script).exists(), f"{script} is not installed by the wheel"
        result = subprocess.run([str(bin_dir / script), "--help"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PYTHONPATH": ""})
        assert result.returncode == 0, f"{script} --help: {result.stderr[-2000:]}"
        assert "usage:" in result.stdout
    # Every module imports from the installed copy, not from the source tree.
    program = ("import importlib, pkgutil, t2t_lite; "
               "assert '/site-packages/' in t2t_lite.__file__, t2t_lite.__file__; "
               "[importlib.import_module(m.name) for m in "
               "pkgutil.walk_packages(t2t_lite.__path__, 't2t_lite.')]; print('ok')")
    result = subprocess.run([str(bin_dir / "python"), "-c", program], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": ""})
    assert result.stdout.strip().endswith("ok"), result.stderr[-2000:]
