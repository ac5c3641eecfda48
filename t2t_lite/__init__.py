"""t2t_lite: the Transformer of "Attention Is All You Need" on TensorFlow 2 / Keras 3."""

# The one place the version is written: setup.py reads it from this line, every command
# prints it with --version, and CHANGELOG.md has a section per version.
__version__ = "0.1.0"
