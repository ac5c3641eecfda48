"""The JAX backend's tests: collected only in a process started with KERAS_BACKEND=jax.

Keras chooses its backend once, at import, so these run in their own pytest
process: `tests/test_jax_backend.py` (a test of the normal TensorFlow run, so CI
runs them) writes the TensorFlow side's reference into $T2T_JAX_REFERENCE and
starts `pytest tests/jax_backend` with KERAS_BACKEND=jax. Run by hand:

    KERAS_BACKEND=jax T2T_JAX_REFERENCE=DIR .venv/bin/python -m pytest tests/jax_backend
"""

import os

import pytest

if os.environ.get("KERAS_BACKEND") != "jax":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def reference_dir():
    path = os.environ.get("T2T_JAX_REFERENCE")
    if not path or not os.path.exists(os.path.join(path, "reference.npz")):
        pytest.fail("T2T_JAX_REFERENCE must name the TensorFlow side's reference directory "
                    "(tests/test_jax_backend.py writes it)")
    return path
