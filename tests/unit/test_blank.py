"""R11's one definition of a blank chunk: no character that renders visibly."""

from __future__ import annotations

import pytest

from apmbench.harness.protocol.blank import first_visible, is_blank, renders_nothing
from apmbench.harness.protocol.client import QueryResult
from apmbench.harness.protocol.streaming import streaming_problem

BLANK = [
    "",
    " ",
    " \t",
    "\n\r\x0b\x0c",
    "\x00\x1f\x7f\x85",  # controls (Cc)
    "\u00a0\u2003\u3000\u202f",  # no-break, em, ideographic, narrow spaces (Zs)
    "\u2028\u2029",  # line and paragraph separators (Zl, Zp)
    "\u200b",  # zero-width space: what `str.strip()` keeps
    "\u200b\u200c\ufeff",  # with zero-width non-joiner and the byte order mark
    "\u200d\u2060\u2062",  # zero-width joiner, word joiner, invisible times
    "\u200e\u200f\u202a\u202e\u2066\u2069",  # bidi marks, embeddings, isolates
    "\u061c",  # Arabic letter mark
    "\u00ad",  # soft hyphen
    "\u180e",  # Mongolian vowel separator
    "\u034f",  # combining grapheme joiner
    "\ufe0f\ufe00",  # variation selectors
    "\U000e0100",  # a variation selector of the supplement
    "\U000e0001\U000e0041",  # language tag, tag letter A
    "\u115f\u1160\u3164\uffa0",  # the Hangul fillers (letters by category)
    "\u3164",
    "\u2800",  # Braille pattern blank (a symbol by category)
    "\U0001d159\U0001d173",  # null notehead, a musical format control
    "\u2065\ufff0",  # reserved default-ignorable code points
    "\u0301",  # a lone combining acute: no base to draw on
    "\u20dd",  # a lone enclosing circle (Me)
    "\u200b\u0301",  # a combining mark on an invisible base
    " \u200b\t\ufeff\u3164 ",
]

NOT_BLANK = [
    "a",
    ".",
    "\u2026",  # ellipsis
    "0",
    "{",
    "\U0001f600",  # grinning face
    "\u2764\ufe0f",  # heart with its emoji variation selector
    "\U0001f44d\U0001f3fd",  # thumbs up with a skin tone
    "e\u0301",  # a combining acute on its base
    "\u200b{",  # visible after an invisible start
    " a ",
    "\u0915\u093e",  # Devanagari ka with a spacing vowel sign (Mc)
    "\u093e",  # the spacing mark alone takes room on the line
    "\ue000",  # private use: a font may draw it
    "\U0001fae8",  # an emoji newer than some Unicode databases (Cn there): not blank
    "\u3042",  # hiragana a
]


@pytest.mark.parametrize("text", BLANK, ids=ascii)
def test_blank(text: str) -> None:
    assert is_blank(text)


@pytest.mark.parametrize("text", NOT_BLANK, ids=ascii)
def test_not_blank(text: str) -> None:
    assert not is_blank(text)


def test_whitespace_as_python_sees_it_is_blank() -> None:
    # Anything `str.strip()` removes is blank too, so the new rule only adds to the old
    # (the ogham space mark, drawn as a stroke, included: it is a space to Python and Unicode).
    assert is_blank("\u1680")
    every_space = "".join(chr(i) for i in range(0x110000) if chr(i).isspace())
    assert every_space.strip() == "" and is_blank(every_space)


def test_what_strip_keeps_is_not_taken_for_visible() -> None:
    # The red team's purchase: each of these survives `strip()` and renders nothing.
    for char in "\u200b\u200c\u200d\u2060\ufeff\u3164\u2800\u0301":
        assert char.strip() == char and renders_nothing(char), ascii(char)


def test_first_visible() -> None:
    assert first_visible([" ", "\u200b", "\u0301", '{"answer":', '"A"}']) == 3
    assert first_visible(["Hmm, ", '{"answer":"A"}']) == 0
    assert first_visible(["\u200b", "\ufeff"]) is None
    assert first_visible([]) is None


def _streamed(*pieces: str) -> QueryResult:
    arrivals = tuple(0.001 * (i + 1) for i in range(len(pieces)))
    return QueryResult("".join(pieces), len(pieces), None, 0.01, pieces, arrivals)


@pytest.mark.parametrize("first", [" ", "\u200b", "\u200b\u200c\ufeff", "\u3164", "\u0301"])
def test_check_and_audit_flag_an_invisible_first_chunk_as_they_flag_whitespace(
    first: str,
) -> None:
    problem = streaming_problem(_streamed(first, '{"answer":"A"}'))
    assert problem is not None and "first chunk is blank" in problem
    assert f"U+{ord(first[0]):04X}" in problem


@pytest.mark.parametrize("first", ["Hmm, ", "\u2026", "e\u0301"])
def test_a_visible_first_chunk_is_no_streaming_problem(first: str) -> None:
    assert streaming_problem(_streamed(first, '{"answer":"A"}')) is None
