"""Classes for the words a word-level vocabulary does not know.

A word-level source vocabulary (`model_type="word"`, e.g. `wsj_parsing
--source_vocab_type=word`) gives every whitespace-separated word exactly one
id, so a model can count words and align the i-th output slot with the i-th
input word. A word outside the vocabulary cannot become bytes (several ids)
or a bare `<unk>` (which loses what a tagger most needs), so it becomes the
piece of its class: its shape (digits, symbols only, all capitals, an
initial capital, a hyphen, lower case) and, for words with letters, its
longest known suffix, as unknown-word signatures in treebank parsers do
(Petrov et al. 2006; Kitaev and Klein 2018 use characters instead). The
rarest training words fall outside the vocabulary too, so the model learns
the classes' embeddings from them.

Class pieces begin with SentencePiece's word mark, like every word piece:
`▁<unk:Cap-ing>`.
"""

from __future__ import annotations

SPACE_MARK = "\u2581"
# Longest first, so a word takes its longest suffix.
SUFFIXES = ("ment", "ness", "able", "ing", "ion", "est", "ity", "ous", "ive", "ed", "ly",
            "er", "al", "ic", "s", "y")
SHAPES_WITH_SUFFIX = ("low", "Cap", "hyph")
SHAPES = ("num", "sym", "CAPS") + SHAPES_WITH_SUFFIX


def _piece(shape: str, suffix: str = "") -> str:
    return f"{SPACE_MARK}<unk:{shape}{'-' + suffix if suffix else ''}>"


CLASS_PIECES = tuple(_piece(shape) for shape in SHAPES) + tuple(
    _piece(shape, suffix) for shape in SHAPES_WITH_SUFFIX for suffix in SUFFIXES)


def word_class(word: str) -> str:
    """The class piece of `word` (one of CLASS_PIECES)."""
    if any(c.isdigit() for c in word):
        return _piece("num")
    if not any(c.isalpha() for c in word):
        return _piece("sym")
    if "-" in word:
        shape = "hyph"
    elif word.isupper() and len(word) > 1:
        return _piece("CAPS")
    elif word[0].isupper():
        shape = "Cap"
    else:
        shape = "low"
    lower = word.lower()
    suffix = next((s for s in SUFFIXES if lower.endswith(s) and len(lower) > len(s) + 1), "")
    return _piece(shape, suffix)


def class_indices(pieces) -> list[int]:
    """The class of each piece of a word-level vocabulary, for a model that adds it
    to the word (`word_class_features`): 1 + the index in CLASS_PIECES of a word
    piece's class (a class piece is its own class), 0 for control pieces
    (`<pad>`, `</s>`, ...) and pieces without the word mark."""
    index = {piece: i + 1 for i, piece in enumerate(CLASS_PIECES)}
    classes = []
    for piece in pieces:
        if piece in index:
            classes.append(index[piece])
        elif piece.startswith(SPACE_MARK) and len(piece) > 1:
            classes.append(index[word_class(piece[1:])])
        else:
            classes.append(0)
    return classes


def unknown_ids(pieces) -> list[int]:
    """For each piece of a word-level vocabulary, the id a model's word dropout
    (`word_dropout`) turns it into: a word piece becomes the id of its class
    piece, as if the word were unknown; control pieces, class pieces, and words
    whose class piece the vocabulary lacks stay themselves."""
    pieces = list(pieces)
    ids = {piece: i for i, piece in enumerate(pieces)}
    classes = class_indices(pieces)
    return [ids.get(CLASS_PIECES[c - 1], i) if c else i for i, c in enumerate(classes)]
