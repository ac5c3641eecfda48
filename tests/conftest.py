"""Test setup: TensorFlow backend, two logical CPU devices, shared fixtures."""

import os
import socket

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Under pytest-xdist, each worker's TensorFlow (and the trainers it starts) gets its share of
# the cores for intra-op work: two workers each running TensorFlow's default pool of every core
# oversubscribe a 2-core machine, which measured twice as slow for the same two trainings.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, _share)))

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# Two logical CPU devices, so MirroredStrategy can run two replicas on a CPU
# machine (OpenNMT-tf's run_with_two_cpu_devices). Must happen before TF starts.
_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
)
# Start the runtime now, with TensorFlow's default thread pools, so every test process
# computes with the same pools whatever ran first in it: a command run in-process
# before any op (t2t_lite-decoder's `parallel.configure_threads`) would otherwise set
# one intra-op thread for the whole process, and float sums (and near-tied beams) differ.
tf.constant(0.0).numpy()

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
# The small real corpora (Multi30k, newstest, ...): ../shared/data beside the
# project on its development machines and in CI; elsewhere a folder with the
# same layout named by T2T_LITE_TEST_DATA. Tests that need it skip without it.
DATA = os.environ.get("T2T_LITE_TEST_DATA") or os.path.join(SHARED, "data")


# --- Hypothesis: the same examples in the fast tier, fresh ones in CI -----------------------
# T2T_LITE_HYPOTHESIS picks the profile. "fast" (the default, `make test`): every property
# draws the same examples on every run (derandomize). "ci": a seed chosen once per session
# (T2T_LITE_HYPOTHESIS_SEED, or --hypothesis-seed, else a random one), printed in the header
# and the summary so a failure replays with `--hypothesis-seed=N`. Exported to the
# environment before pytest-xdist starts its workers, so every worker draws from that seed.
# The number of examples is each property's own (its @settings).
from hypothesis import HealthCheck, settings as hypothesis_settings  # noqa: E402

_HYPOTHESIS_COMMON = dict(deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
hypothesis_settings.register_profile("fast", derandomize=True, **_HYPOTHESIS_COMMON)
hypothesis_settings.register_profile("ci", derandomize=False, **_HYPOTHESIS_COMMON)
HYPOTHESIS_PROFILE = os.environ.get("T2T_LITE_HYPOTHESIS", "fast")
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)
HYPOTHESIS_SEED_ENV = "T2T_LITE_HYPOTHESIS_SEED"


@pytest.hookimpl(tryfirst=True)  # Before hypothesis's own plugin reads --hypothesis-seed.
def pytest_configure(config):
    if HYPOTHESIS_PROFILE != "ci":
        return
    import random

    seed = config.getoption("hypothesis_seed", None) or os.environ.get(HYPOTHESIS_SEED_ENV) \
        or str(random.SystemRandom().randrange(2**32))
    config.option.hypothesis_seed = str(seed)
    os.environ[HYPOTHESIS_SEED_ENV] = str(seed)  # What the xdist workers will inherit.


def _hypothesis_line(config) -> str:
    if HYPOTHESIS_PROFILE != "ci":
        return f"hypothesis: profile {HYPOTHESIS_PROFILE!r}, fixed examples (derandomized)"
    seed = config.getoption("hypothesis_seed")
    return (f"hypothesis: profile 'ci', seed {seed} (replay: T2T_LITE_HYPOTHESIS=ci "
            f"pytest --hypothesis-seed={seed} ...)")


def pytest_report_header(config):
    return _hypothesis_line(config)


def pytest_terminal_summary(terminalreporter, config):
    terminalreporter.write_line(_hypothesis_line(config))


from t2t_lite.training.options import EvalOptions  # noqa: E402

# No dev evaluation at the end of a run (for tests whose subject is not evaluation).
NO_EVAL = EvalOptions(eval_every_steps=0)

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")


def data_file(*parts, lines=None):
    """Path of a real-data file: DATA, else the slice in tests/testdata; skips the test if neither.

    `lines`: how many lines the caller reads; a slice shorter than that does not count.
    """
    relative = os.path.join(*parts)
    for root in (DATA, TESTDATA):
        path = os.path.join(root, relative)
        if os.path.exists(path) and (lines is None or root == DATA or _count(path) >= lines):
            return path
    _missing_data(f"needs the real data {relative} under {DATA}; set "
                  "T2T_LITE_TEST_DATA=DIR to a copy of shared/data to run it")


# CI (.ci/run) sets T2T_LITE_REQUIRE_DATA=1: a data-bound test whose data is missing fails
# there instead of skipping, so CI cannot pass with those proofs skipped.
REQUIRE_DATA = os.environ.get("T2T_LITE_REQUIRE_DATA") == "1"


def _missing_data(reason):
    if REQUIRE_DATA:
        pytest.fail(f"T2T_LITE_REQUIRE_DATA=1 but the test {reason}", pytrace=False)
    pytest.skip(reason)


def tracked_copy(destination, skip=()):
    """A copy of the repository's tracked (and untracked, not ignored) files under
    `destination`, less the top-level folders in `skip`; skips the test outside a git
    checkout. What a wheel or an install is built from, away from the working tree."""
    import pathlib
    import shutil
    import subprocess

    root = pathlib.Path(__file__).resolve().parents[1]
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root,
                               capture_output=True, text=True, check=True,
                               timeout=60).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the install is made from the tracked files")
    for name in filter(None, files):
        if (root / name).is_file() and name.split("/", 1)[0] not in skip:
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, destination / name)
    return destination


def free_ports(count):
    """`count` localhost ports free at the time of the call (for multi-worker TF_CONFIG)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def session_run(path, signature, inputs, tmp_path) -> dict:
    """`saved_model_cli run` on the SavedModel at `path`: loaded in a TF1 session, as TensorFlow
    Serving's SavedModelBundle loads it (a fresh process: no t2t_lite, no tensorflow_text).

    `inputs`: the numpy array for the signature's `inputs`, or a dict of input name -> array.
    Returns output name -> array.
    """
    import subprocess
    import sys

    import numpy as np

    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    arrays = inputs if isinstance(inputs, dict) else {"inputs": inputs}
    files = []
    for name, array in arrays.items():
        files.append(f"{name}={tmp_path / f'{signature}-{name}.npy'}")
        np.save(tmp_path / f"{signature}-{name}.npy", array)
    outdir = tmp_path / f"{signature}-outputs"
    done = subprocess.run([cli, "run", "--dir", str(path), "--tag_set", "serve",
                           "--signature_def", signature, "--inputs", ";".join(files),
                           "--outdir", str(outdir), "--overwrite"], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert done.returncode == 0, done.stderr[-3000:]
    return {name[:-len(".npy")]: np.load(outdir / name, allow_pickle=True)
            for name in os.listdir(outdir)}


def _count(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def needs_data(*paths):
    """Skips a test (or module: `pytestmark = needs_data(...)`) when DATA lacks `paths`."""
    missing = [p for p in paths if not os.path.exists(os.path.join(DATA, p))]
    if missing and REQUIRE_DATA:
        raise pytest.UsageError(f"T2T_LITE_REQUIRE_DATA=1 but {', '.join(missing)} is missing "
                                f"under {DATA}")
    return pytest.mark.skipif(
        bool(missing), reason=f"needs the real data {', '.join(missing)} under {DATA}; "
        "set T2T_LITE_TEST_DATA=DIR to a copy of shared/data to run it")


@pytest.fixture
def tiny_hparams():
    from t2t_lite import registry

    return registry.hparams("tiny").override(
        "dropout_rate=0.0,num_layers=1,d_model=32,d_ff=64,num_heads=2,batch_size=256"
    )


SEARCH_VOCAB = 40  # The decoding tests' vocabulary: ids 2..39 are words, 1 is EOS.


def search_model():
    """A 2-layer, d_model 32 Transformer over SEARCH_VOCAB ids without dropout (search tests).

    Its weights are random but the same in every run (Keras' global seed is set to 0).
    """
    import keras

    from t2t_lite import registry
    from t2t_lite.runs import weights

    keras.utils.set_random_seed(0)

    hparams = registry.hparams("tiny").override(
        "num_layers=2,d_model=32,d_ff=64,num_heads=2,dropout_rate=0.0")
    return weights.build_model(hparams, SEARCH_VOCAB)


@pytest.fixture
def one_device():
    return tf.distribute.MirroredStrategy(["/cpu:0"])
