"""t2t_lite: the Transformer of "Attention Is All You Need" on TensorFlow 2 / Keras 3."""

import re

from setuptools import find_packages, setup

# The version is t2t_lite.__version__, read without importing the package.
with open("t2t_lite/__init__.py", encoding="utf-8") as _init:
    VERSION = re.search(r'^__version__ = "([^"]+)"$', _init.read(), re.M).group(1)

setup(
    name="t2t_lite",
    version=VERSION,
    description=(
        "A TensorFlow 2 / Keras 3 reimplementation of the Transformer "
        "(Vaswani et al. 2017) in the tensor2tensor tradition."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    classifiers=[
        "License :: OSI Approved :: Apache Software License",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
    python_requires=">=3.10",
    # `problems` and `hparams` are taken as top-level names on PyPI, so they
    # install as t2t_lite.problems and t2t_lite.hparams (docs/development/design.md). Every
    # package is found, so a new subpackage cannot drop out of a wheel
    # (tests/test_wheel.py builds and installs one).
    packages=find_packages(include=["t2t_lite", "t2t_lite.*"]) + [
        f"t2t_lite.{name}" for name in find_packages(
            include=["problems", "problems.*", "hparams", "hparams.*"])],
    package_dir={
        "t2t_lite.problems": "problems",
        "t2t_lite.hparams": "hparams",
    },
    install_requires=[
        "tensorflow==2.21.*",
        "keras>=3.10,<4",
        "tensorflow-text==2.21.*",
        "tensorboard>=2.20",
        "tensorflow-datasets>=4.9",
        "importlib_resources",  # tensorflow-datasets 4.9 imports it on every Python (its #11212).
        "sacrebleu>=2.4,<3",
        "sentencepiece>=0.2",
        "numpy",
        "matplotlib>=3.7",  # t2t_lite-visualize, t2t_lite-plot (Agg backend, no display).
    ],
    extras_require={
        # t2t_lite-exporter --format=ctranslate2 (t2t_lite.serving.ctranslate2_export).
        "ctranslate2": ["ctranslate2>=4.5"],
        # The JAX backend (KERAS_BACKEND=jax; benchmarks/gpu_check.sh).
        "jax": ["jax>=0.4.30"],
        # The documentation site (mkdocs build; tests/test_docs.py builds it with --strict).
        "docs": ["mkdocs>=1.6,<2", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"],
        # CI installs .[test]: ctranslate2, jax and the docs too, so
        # tests/test_ctranslate2_export.py, tests/test_jax_backend.py and tests/test_docs.py run.
        "test": ["pytest>=8", "pytest-xdist>=3", "pytest-timeout>=2.3", "hypothesis>=6", "wheel", "ctranslate2>=4.5",
                 "jax>=0.4.30", "mkdocs>=1.6,<2", "mkdocs-material>=9.5",
                 "mkdocstrings[python]>=0.26"],
    },
    entry_points={
        "console_scripts": [
            "t2t_lite-trainer=t2t_lite.bin.trainer:main",
            "t2t_lite-decoder=t2t_lite.bin.decoder:main",
            "t2t_lite-datagen=t2t_lite.bin.datagen:main",
            "t2t_lite-bleu=t2t_lite.bin.bleu:main",
            "t2t_lite-avg-checkpoints=t2t_lite.bin.avg_checkpoints:main",
            "t2t_lite-exporter=t2t_lite.bin.exporter:main",
            "t2t_lite-visualize=t2t_lite.bin.visualize:main",
            "t2t_lite-plot=t2t_lite.bin.plot:main",
            "t2t_lite-evalb=t2t_lite.bin.evalb:main",
        ],
    },
)
