"""Whether streamed text is blank (R11): the one definition the client's time to first
token, `check`'s query-streams and the first-token audit all use.

R11 says the first Query chunk is not blank because time to first token is taken on it.
Blank cannot mean "`str.strip()` leaves nothing": `strip()` removes whitespace only, and a
red team bought a TTFT of 0.001 s against an honest 0.306 s by sending a zero-width space
(U+200B) first. Blank means *no character that renders visibly*. A character renders
nothing when it is

- whitespace (`str.isspace()`) or a separator: Unicode categories Zs, Zl, Zp;
- a control or format character: Cc and Cf (zero-width space, non-joiner and joiner,
  word joiner U+2060, the byte order mark U+FEFF, bidi marks and embeddings, the soft
  hyphen U+00AD, Mongolian vowel separator U+180E, invisible operators, tags);
- a combining mark (Mn, Me) with no visible character before it. A mark draws on the
  character it follows; with none it has nothing to draw on (renderers show a dotted
  circle, if anything, to flag the error). `is_blank` reads left to right and stops at
  the first visible character, so every mark it meets before that one has no visible
  base: "e\\u0301" is not blank (the "e" is seen first), "\\u0301" and "\\u200b\\u0301"
  are. Spacing marks (Mc) take room on the line and count as visible;
- a Unicode Default_Ignorable_Code_Point, which renderers are told to draw as nothing:
  variation selectors (U+FE00..FE0F, U+E0100..E01EF), the Hangul fillers (U+115F, U+1160,
  U+3164, U+FFA0, letters by category), the Khmer inherent vowels, the combining grapheme
  joiner, and the code points Unicode reserves as default ignorable (U+2065,
  U+FFF0..FFF8, U+E0000..E0FFF), so that a later Unicode version assigning them changes
  nothing here;
- a symbol drawn as empty by design: Braille pattern blank U+2800, musical symbol null
  notehead U+1D159, Khitan small script filler U+16FE4.

Everything else is visible, including private-use characters (a font may draw them) and
code points this Python's Unicode database does not know (category Cn outside the
reserved ranges above): emoji newer than the database are among them, and an answer of
such an emoji is not blank.

What this cannot see is a *visible* filler ("Hmm, ", "..."): text a reader sees starts the
clock, as R11 says. Time to answer, which the leaderboard places runs by, is not bought
that way (docs/PROTOCOL.md, R11).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# Categories whose characters render nothing on their own (see the module docstring; a
# combining mark after a visible character is never reached, so Mn and Me are safe here).
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})

# Unicode 15's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), reserved ranges
# included, and the symbols drawn empty by design; inclusive ranges. Listed by code point
# because several are letters (Lo) or symbols (So) by category, and Python's `unicodedata`
# does not expose the property.
INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors, vowel separator
    (0x200B, 0x200F),  # zero-width space, (non-)joiner, LRM, RLM
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, reserved
    (0x2800, 0x2800),  # Braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero-width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # reserved, default ignorable
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x16FE4, 0x16FE4),  # Khitan small script filler
    (0x1D159, 0x1D159),  # musical symbol null notehead
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, reserved
)


@lru_cache(maxsize=4096)
def renders_nothing(char: str) -> bool:
    """True when `char` (one code point) draws nothing on its own."""
    if char.isspace() or unicodedata.category(char) in INVISIBLE_CATEGORIES:
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in INVISIBLE_RANGES)


def is_blank(text: str) -> bool:
    """True when `text` has no character that renders visibly (R11); "" is blank."""
    return all(renders_nothing(c) for c in text)


def first_visible(pieces: tuple[str, ...] | list[str]) -> int | None:
    """The index of the first piece that is not blank, or None when every one is."""
    return next((i for i, piece in enumerate(pieces) if not is_blank(piece)), None)
