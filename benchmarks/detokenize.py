"""Undoes Moses tokenization, so a tokenized corpus trains the style raw references have.

    from benchmarks.detokenize import moses_detokenize
    moses_detokenize("Parliament &apos;s role , he said .")  # "Parliament's role, he said."

The OpenNMT toy corpus (WMT news, EN-DE) comes Moses-tokenized and escaped
(`&apos;`, `&quot;`, spaces around punctuation); Multi30k and sacreBLEU's
references are raw text. A model pretrained on the first writes `Mann .` where
the second wants `Mann.`, which costs BLEU that fine-tuning must then unlearn.
This reverses the common cases: the escapes, punctuation joined
to the word before it, opening brackets to the word after, English clitics
(`'s`, `n't`), and straight double quotes paired open/close within a line.
It is a benchmark helper, not a full Moses detokenizer.
"""

from __future__ import annotations

import re

ESCAPES = {"&apos;": "'", "&quot;": '"', "&#91;": "[", "&#93;": "]", "&#124;": "|",
           "&lt;": "<", "&gt;": ">", "&amp;": "&"}  # &amp; last: "&amp;lt;" is "&lt;".
ATTACH_LEFT = {".", ",", ";", ":", "!", "?", "%", ")", "]", "}", "...", "“", "«"}
ATTACH_RIGHT = {"(", "[", "{", "„", "»", "$"}
CLITIC = re.compile(r"^'(s|re|ve|ll|d|m|t)$|^n't$", re.IGNORECASE)


def unescape(text: str) -> str:
    for escape, char in ESCAPES.items():
        text = text.replace(escape, char)
    return text


def moses_detokenize(line: str) -> str:
    """One tokenized line -> raw text (see the module docstring for what is undone)."""
    words, glue_next, quote_open = [], False, False
    for token in unescape(line).split():
        left = token in ATTACH_LEFT or bool(CLITIC.match(token))
        if token == '"':
            left, quote_open = quote_open, not quote_open
        if words and (left or glue_next):
            words[-1] += token
        else:
            words.append(token)
        glue_next = token in ATTACH_RIGHT or (token == '"' and quote_open)
    return " ".join(words)
