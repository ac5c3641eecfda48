"""Parsing: treebank trees, their linearization, and the tree-constrained search."""
