"""Penn Treebank trees for constituency parsing as sequence to sequence.

Reading: `read_trees` reads bracketed trees from a `.mrg` file's text (several
multi-line trees) or a one-tree-per-line file alike. `clean` does what
parsers conventionally do before training and evaluating: remove traces and
empty elements (`-NONE-`) with the constituents they leave empty, strip
function tags and indices (NP-SBJ-1 -> NP, NP=2 -> NP), drop the outer
empty-labelled bracket.

Linearization (Vinyals et al. 2015, "Grammar as a foreign language"; the
target of tensor2tensor's wsj_parsing): `(X` opens a phrase, `)X` closes it
(labelled closing brackets, as Vinyals et al.), and a preterminal is written
as its POS tag alone, a word slot. The words are not in the target: they are
restored from the input (`delinearize`), so a parse always has the input's
words. `(S (NP (NNP Pierre) (NNP Vinken)) (VP (VBZ is)) (. .))` becomes
`(S (NP NNP NNP )NP (VP VBZ )VP . )S`.
"""

from __future__ import annotations

import dataclasses
import re

from t2t_lite.metrics.base import TreeError

OPEN = "("
CLOSE = ")"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclasses.dataclass
class Node:
    """A constituent: a phrase (children) or a preterminal (a tag over `word`)."""

    label: str
    children: list[Node] = dataclasses.field(default_factory=list)
    word: str | None = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


def read_trees(text: str) -> list[Node]:
    """Every bracketed tree in `text` (`(TAG word)` is a preterminal).

    Raises:
      TreeError: unbalanced brackets, text outside brackets, or a bracket
        holding a word next to other elements.
    """
    trees, stack = [], []
    matches = list(_TOKEN.finditer(text))
    tokens = [m.group() for m in matches]

    def near(i):  # The text around token i, for messages.
        start = matches[min(i, len(matches) - 1)].start() if matches else 0
        return _quote(text[max(0, start - 40):start + 40])

    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if token == OPEN:
            label = ""
            if i + 1 < n and tokens[i + 1] not in (OPEN, CLOSE):
                label, i = tokens[i + 1], i + 1
            if i + 1 < n and tokens[i + 1] not in (OPEN, CLOSE):  # (TAG word)
                if i + 2 >= n or tokens[i + 2] != CLOSE:
                    raise TreeError(f"a bracket holds a word and more ({label} "
                                    f"{tokens[i + 1]} ...) near {near(i)}")
                _attach(Node(label, word=tokens[i + 1]), stack, trees)
                i += 3
                continue
            stack.append(Node(label))
        elif token == CLOSE:
            if not stack:
                raise TreeError(f"a close bracket with nothing open near {near(i)}")
            _attach(stack.pop(), stack, trees)
        else:
            raise TreeError(f"text outside brackets ({token!r}) near {near(i)}")
        i += 1
    if stack:
        raise TreeError(f"{len(stack)} bracket(s) left open at the end of "
                        f"{_quote(text[-80:])}")
    return trees


def _attach(node: Node, stack: list[Node], trees: list[Node]) -> None:
    (stack[-1].children if stack else trees).append(node)


def strip_label(label: str) -> str:
    """NP-SBJ-1 -> NP, NP=2 -> NP, PP-LOC-CLR -> PP; -LRB-, -NONE- stay whole."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def clean(tree: Node) -> Node | None:
    """A copy without -NONE- elements, emptied phrases, function tags and the outer
    empty-labelled bracket (kept, labelled TOP, when it holds several phrases or a
    lone word); None when nothing is left."""
    node = _clean(tree)
    if node is None:
        return None
    if node.label == "" and not node.is_preterminal:
        if len(node.children) == 1 and not node.children[0].is_preterminal:
            return node.children[0]
        node.label = "TOP"
    elif node.is_preterminal:  # A bare (TAG word): the target needs a phrase.
        node = Node("TOP", [node])
    return node


def _clean(node: Node) -> Node | None:
    if node.is_preterminal:
        return None if node.label == "-NONE-" else Node(strip_label(node.label), word=node.word)
    children = [c for c in (_clean(child) for child in node.children) if c is not None]
    return Node(strip_label(node.label), children) if children else None


def _leaves(tree: Node):
    if tree.is_preterminal:
        yield tree
    for child in tree.children:
        yield from _leaves(child)


def words(tree: Node) -> list[str]:
    return [leaf.word for leaf in _leaves(tree)]


def tags(tree: Node) -> list[str]:
    return [leaf.label for leaf in _leaves(tree)]


def to_string(tree: Node, top: str | None = "TOP") -> str:
    """One line: `(TOP (S (NP (NNP Pierre)) ...))`; `top` wraps it (None: no wrapper).

    The form EVALB reads (COLLINS.prm deletes the TOP bracket), for gold and
    parser output alike.
    """
    def write(node: Node) -> str:
        if node.is_preterminal:
            return f"({node.label} {node.word})"
        return f"({node.label} " + " ".join(write(c) for c in node.children) + ")"

    text = write(tree)
    return f"({top} {text})" if top is not None else text


def linearize(tree: Node) -> str:
    """The target sequence: `(S (NP NNP NNP )NP (VP VBZ )VP . )S`."""
    tokens: list[str] = []

    def walk(node: Node) -> None:
        if node.is_preterminal:
            tokens.append(node.label)
            return
        if not node.label or token_kind(OPEN + node.label) != "open":
            raise TreeError(f"a phrase without a label in {_quote(to_string(tree, None))}")
        tokens.append(OPEN + node.label)
        for child in node.children:
            walk(child)
        tokens.append(CLOSE + node.label)

    walk(tree)
    return " ".join(tokens)


def token_kind(token: str) -> str:
    """"open" (`(X`), "close" (`)X`) or "tag" (a word slot)."""
    if len(token) > 1 and token[0] == OPEN:
        return "open"
    if len(token) > 1 and token[0] == CLOSE:
        return "close"
    return "tag"


def token_label(token: str) -> str:
    """The phrase label of a bracket token, or the tag itself."""
    return token[1:] if token_kind(token) != "tag" else token


def delinearize(target: str, words: list[str]) -> Node:
    """The tree of a linearization, its word slots filled with `words` in order.

    Raises:
      TreeError: the sequence is not exactly one well-formed tree with
        len(words) word slots (a close that does not match the innermost open
        phrase, a phrase without children, a slot outside every phrase, tokens
        after the root closed, phrases left open, too many or too few slots).
    """
    tokens = target.split()
    if not tokens:
        raise TreeError("an empty parse")
    stack: list[Node] = []
    root = None
    used = 0
    def where():
        return f"token {position} ({token!r}) of {_quote(target)}"

    for position, token in enumerate(tokens, 1):
        if root is not None:
            raise TreeError(f"{where()}: the tree already closed")
        kind = token_kind(token)
        if kind == "open":
            node = Node(token_label(token))
            if stack:
                stack[-1].children.append(node)
            stack.append(node)
        elif kind == "close":
            if not stack:
                raise TreeError(f"{where()}: nothing is open")
            if stack[-1].label != token_label(token):
                raise TreeError(f"{where()}: the open phrase is {stack[-1].label}")
            if not stack[-1].children:
                raise TreeError(f"{where()}: the phrase is empty")
            node = stack.pop()
            if not stack:
                root = node
        else:
            if not stack:
                raise TreeError(f"{where()}: a word outside every phrase")
            if used >= len(words):
                raise TreeError(f"{where()}: more word slots than the {len(words)} words")
            stack[-1].children.append(Node(token, word=words[used]))
            used += 1
    if root is None:
        raise TreeError(f"{len(stack)} phrase(s) left open in {_quote(target)}")
    if used != len(words):
        raise TreeError(f"{used} word slots for {len(words)} words in {_quote(target)}")
    return root


def is_well_formed(target: str, num_words: int) -> bool:
    """True when `target` is one well-formed tree with `num_words` word slots."""
    try:
        delinearize(target, ["w"] * num_words)
    except TreeError:
        return False
    return True
