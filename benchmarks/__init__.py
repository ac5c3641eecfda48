"""The benchmark suite: run from the repository root as `python -m benchmarks.NAME`.

It is not installed with t2t_lite (setup.py packages `t2t_lite` only);
docs/development/benchmarks.md describes its layout.
"""
