"""R15 and the report escaping, one string at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apmbench.adapters.sdk import Capabilities, FrameEncoding, SystemInfo
from apmbench.adapters.sdk.describe_strings import describe_problems
from apmbench.harness.reports.format import table
from apmbench.harness.reports.system_text import HTML_CHARS, html_text, md_cell

INFO = SystemInfo(
    name="text-log",
    version="1.2.0+cpu",
    capabilities=Capabilities(frame_encodings=(FrameEncoding.JPEG,)),
    details={"model": "Qwen2.5-VL-7B-Instruct at /models/qwen | 4-bit", "kv.layers": "28"},
)


def test_ordinary_describe_strings_hold() -> None:
    assert describe_problems(INFO) == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"name": "x | yes |\n| forged"}, "name"),
        ({"name": ""}, "name"),
        ({"name": "a" * 65}, "name"),
        ({"name": "-leading"}, "name"),
        ({"version": "1\x1b[2J"}, "version"),
        ({"protocol_version": "1.\x1b[31m"}, "protocol_version"),
        ({"details": {"bad key": "v"}}, "details key"),
        ({"details": {"k": "line\nbreak"}}, "details[k]"),
        ({"details": {"k": "x" * 257}}, "details[k]"),
        ({"details": {f"k{i}": "v" for i in range(33)}}, "33 details"),
    ],
)
def test_each_broken_string_is_named(change: dict[str, object], named: str) -> None:
    problems = describe_problems(replace(INFO, **change))  # type: ignore[arg-type]
    assert len(problems) == 1 and problems[0].startswith(named), problems
    assert "\n" not in problems[0] and "\x1b" not in problems[0]


def test_a_markdown_cell_cannot_end_its_row_or_open_a_tag() -> None:
    cell = md_cell("x | yes |\n| forged <script>alert(1)</script>\x07")
    assert "\n" not in cell and "\x07" not in cell and "<script" not in cell
    assert cell.count("\\|") == 3 and cell.count("|") == 3
    lines = table(["system", "score"], [["a|b\nc", "1"]])
    assert lines[2] == "| a\\|b c | 1 |"
    assert len(md_cell("n" * 500)) < 160 and "more characters" in md_cell("n" * 500)


def test_html_text_is_cut_and_loses_control_bytes_only() -> None:
    shown = html_text("a\tb\nc\x1b[2J\x00" + "z" * (2 * HTML_CHARS))
    assert shown.startswith("a\tb\nc") and "\x1b" not in shown and "\x00" not in shown
    assert len(shown) < HTML_CHARS + 80 and shown.endswith("more characters in the run records]")
