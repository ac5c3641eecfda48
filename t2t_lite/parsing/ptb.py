"""Penn Treebank trees for constituency parsing as sequence to sequence.

Reading: `read_trees` reads bracketed trees from a `.mrg` file's text (several
multi-line trees) or a one-tree-per-line file alike (`read_tree_file` from a
file; an error is one line naming the file and the line). Writing (`to_string`)
escapes brackets in words (`escape_word`: `(` -> -LRB-, `)` -> -RRB-), so what
is written reads back; no traversal recurses (5000-deep trees). `clean` does what
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
from typing import Collection, Iterator

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


def read_trees(text: str, name: str | None = None, first_line: int = 1) -> list[Node]:
    """Every bracketed tree in `text` (`(TAG word)` is a preterminal).

    `name` (a file's path) and `first_line` (the line `text` starts on) are for
    messages. Words are kept as written: `-LRB-` stays `-LRB-` (`unescape_word`).

    Raises:
      TreeError: unbalanced brackets, text outside brackets, or a bracket
        holding a word next to other elements; one line, `NAME, line N: ...`.
    """
    trees, stack, opened = [], [], []  # opened: the token index of each open bracket
    matches = list(_TOKEN.finditer(text))
    tokens = [m.group() for m in matches]

    def fail(i, problem):  # Names the line of token i and quotes the text around it.
        start = matches[min(i, len(matches) - 1)].start() if matches else 0
        line = first_line + text.count("\n", 0, start)
        where = f"{name}, line {line}" if name else f"line {line}"
        raise TreeError(f"{where}: {problem} near {_quote(text[max(0, start - 40):start + 40])}")

    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if token == OPEN:
            start, label = i, ""
            if i + 1 < n and tokens[i + 1] not in (OPEN, CLOSE):
                label, i = tokens[i + 1], i + 1
            if i + 1 < n and tokens[i + 1] not in (OPEN, CLOSE):  # (TAG word)
                if i + 2 >= n or tokens[i + 2] != CLOSE:
                    fail(i, f"a bracket holds a word and more ({label} {tokens[i + 1]} ...)")
                _attach(Node(label, word=tokens[i + 1]), stack, trees)
                i += 3
                continue
            stack.append(Node(label))
            opened.append(start)
        elif token == CLOSE:
            if not stack:
                fail(i, "a close bracket with nothing open")
            opened.pop()
            _attach(stack.pop(), stack, trees)
        else:
            fail(i, f"text outside brackets ({token!r})")
        i += 1
    if stack:
        fail(opened[0], f"a bracket never closed ({len(stack)} left open at the end)")
    return trees


def read_tree_file(path: str, lines: Collection[int] | None = None) -> list[Node]:
    """Every tree of a UTF-8 file (`.mrg` or one tree a line); `lines`: only those (0-based).

    Lines end at "\n", "\r\n" or "\r", as Python's text files (and an `.ids` file
    beside a `.trees` file) count them.

    Raises:
      TreeError: the file cannot be read, is not UTF-8, or holds a tree that cannot
        be read; one line naming the file and (but for an unreadable file) the line.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TreeError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line, column = before.count(b"\n") + 1, len(before) - before.rfind(b"\n")
        raise TreeError(f"{path}, line {line}: invalid UTF-8 (byte "
                        f"0x{data[e.start]:02x} at byte {column} of the line); convert it "
                        "to UTF-8 and rerun") from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if lines is None:
        return read_trees(text, path)
    rows = text.split("\n")
    return [tree for i in sorted(lines) if i < len(rows)
            for tree in read_trees(rows[i], path, first_line=i + 1)]


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


def _clean(tree: Node) -> Node | None:
    cleaned: dict[int, Node | None] = {}  # id(node) -> its copy, children first
    for node, entering in _walk(tree):
        if node.is_preterminal:
            cleaned[id(node)] = None if node.label == "-NONE-" else \
                Node(strip_label(node.label), word=node.word)
        elif not entering:
            children = [c for c in (cleaned.get(id(child)) for child in node.children)
                        if c is not None]
            cleaned[id(node)] = Node(strip_label(node.label), children) if children else None
    return cleaned[id(tree)]


def _walk(tree: Node) -> Iterator[tuple[Node, bool]]:
    """(node, entering) in text order: a phrase twice (entering, then leaving), a
    preterminal once; a loop, not recursion, so 5000-deep trees are fine."""
    stack = [(tree, True)]
    while stack:
        node, entering = stack.pop()
        yield node, entering
        if entering and not node.is_preterminal:
            stack.append((node, False))
            stack.extend((child, True) for child in reversed(node.children))


def _leaves(tree: Node) -> Iterator[Node]:
    return (node for node, _ in _walk(tree) if node.is_preterminal)


def words(tree: Node) -> list[str]:
    return [leaf.word for leaf in _leaves(tree)]


def tags(tree: Node) -> list[str]:
    return [leaf.label for leaf in _leaves(tree)]


ESCAPES = {"(": "-LRB-", ")": "-RRB-"}  # What `escape_word` writes.
UNESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[",
             "-RSB-": "]"}  # The treebank's bracket words, undone by `unescape_word`.
_UNESCAPE = re.compile("|".join(map(re.escape, UNESCAPES)))


def escape_word(word: str) -> str:
    """A word (or label) as a tree writes it: `(` -> `-LRB-`, `)` -> `-RRB-`.

    The Penn Treebank's escapes for the two characters both tree readers (this
    module's and EVALB's) split at, so `f(x)` is written `f-LRB-x-RRB-`. Braces and
    square brackets, which neither reader splits at, stay as they are (the
    treebank writes them -LCB- -RCB- -LSB- -RSB-, but its words already hold
    those). Reading does not undo the escapes (a tree's words are compared with
    treebank words, which are written so); `unescape_word` does.
    """
    return "".join(ESCAPES.get(c, c) for c in word) if "(" in word or ")" in word else word


BRACKET_WORDS = {raw: escaped for escaped, raw in UNESCAPES.items()}  # "(" -> "-LRB-", ...


def treebank_word(word: str) -> str:
    """An input word as the treebank's training words write it: a bracket alone is
    its escape (`(` -> `-LRB-`, `{` -> `-LCB-`, `[` -> `-LSB-`, ...), other raw
    brackets `escape_word`'s; treebank words come back unchanged."""
    return BRACKET_WORDS.get(word) or escape_word(word)


def unescape_word(word: str) -> str:
    """The raw text of a treebank word: -LRB- -> (, -RRB- -> ), -LCB- -> {, -RCB- -> },
    -LSB- -> [, -RSB- -> ], anywhere in the word (so a word written `-LRB-` in
    the input comes back as `(` too)."""
    return _UNESCAPE.sub(lambda m: UNESCAPES[m.group()], word)


def to_string(tree: Node, top: str | None = "TOP") -> str:
    """One line: `(TOP (S (NP (NNP Pierre)) ...))`; `top` wraps it (None: no wrapper).

    The form EVALB reads (COLLINS.prm deletes the TOP bracket), for gold and
    parser output alike. Brackets in words and labels are escaped (`escape_word`),
    so both readers read back the words and tags written.
    """
    parts: list[str] = []
    for node, entering in _walk(tree):
        lead = " " if parts else ""
        if node.is_preterminal:
            parts.append(f"{lead}({escape_word(node.label)} {escape_word(node.word)})")
        elif entering:
            parts.append(f"{lead}({escape_word(node.label)}")
        else:
            parts.append(")" if node.children else " )")
    text = "".join(parts)
    return f"({top} {text})" if top is not None else text


def linearize(tree: Node) -> str:
    """The target sequence: `(S (NP NNP NNP )NP (VP VBZ )VP . )S`."""
    tokens: list[str] = []
    for node, entering in _walk(tree):
        if node.is_preterminal:
            tokens.append(node.label)
        elif not entering:
            tokens.append(CLOSE + node.label)
        elif not node.label or token_kind(OPEN + node.label) != "open":
            raise TreeError(f"a phrase without a label in {_quote(to_string(tree, None))}")
        else:
            tokens.append(OPEN + node.label)
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
