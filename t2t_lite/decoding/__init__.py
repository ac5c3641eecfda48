"""Decoding: beam search, the search glue, the decode policy, batched decoding, text in and out."""
