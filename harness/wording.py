"""Counts in messages, in words that agree with them ("1 finished trajectory", "2 probes")."""

from __future__ import annotations


def plural(noun: str) -> str:
    """The plural of an English noun as this harness's messages use them: a phrase's last
    word takes it ("finished trajectory" -> "finished trajectories")."""
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def counted(n: int, noun: str, many: str | None = None) -> str:
    """`n` and the noun in the number it takes: counted(1, "probe") == "1 probe"; `many` is
    the plural where `plural` would not make it."""
    return f"{n} {noun if n == 1 else many or plural(noun)}"
