"""Maintainer scripts: the generated documentation pages (`python -m tools.gen_docs`)."""
