"""benchmarks/detokenize.py: the Moses-tokenized general corpus of the fine-tuning benchmark
written back as raw text (issue 26)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from benchmarks.detokenize import moses_detokenize  # noqa: E402


def test_punctuation_escapes_and_clitics():
    assert (moses_detokenize("It is not acceptable that , with the help of Parliament &apos;s "
                             "bureaucracies , it should be void .")
            == "It is not acceptable that, with the help of Parliament's bureaucracies, "
               "it should be void.")
    assert moses_detokenize("I don &apos;t know ( really ) !") == "I don't know (really)!"
    assert moses_detokenize("Tom &amp; Jerry &#91; 1 &#93; : 50 %") == "Tom & Jerry [1]: 50%"


def test_straight_quotes_pair_within_a_line():
    assert (moses_detokenize("&quot; Two soldiers came , &quot; he said .")
            == '"Two soldiers came," he said.')
    assert moses_detokenize('Er sagte : &quot; Ja &quot; .') == 'Er sagte: "Ja".'


def test_raw_text_is_left_as_it_is():
    raw = "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche."
    assert moses_detokenize(raw) == raw
    assert moses_detokenize("") == ""
