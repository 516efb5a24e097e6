"""How every command's `--help` reads: its options in titled sections, an example on top.

rich-click lays the help out: each command lists its options in panels (`sections`), in
rich-click's "slim" format (a title line per section, no boxes), so the text stays
readable when piped or logged. Off a terminal Rich writes no colour or other escape
codes (FORCE_COLOR or NO_COLOR decide as usual). Errors keep click's own one-line
`Error: ...` form: a message a script or a log search can match, never wrapped in a box.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack

import click
import rich_click

if TYPE_CHECKING:
    from rich.markdown import Markdown
    from rich.style import StyleType
    from rich.text import Text

F = TypeVar("F", bound=Callable[..., object])

HELP_CONFIG: dict[str, object] = {
    "theme": "slim",
    # Help texts are plain: a `[` in one (`NAME[=VALUE]`) is text, not Rich markup.
    "text_markup": "ansi",
    # A blank line between the paragraphs of a command's help, as click prints them.
    "text_paragraph_linebreaks": "\n\n",
    "padding_helptext_first_line": (0, 0, 1, 0),
    # A section's line of help under its title: beside it, a long one would be cut short.
    "panel_inline_help_in_title": False,
    "max_width": 100,
}


class _Formatter(rich_click.RichHelpFormatter):
    def rich_text(self, text: str | Text | Markdown, style: StyleType = "") -> Text | Markdown:
        # rich-click dedents each piece of a help text again, though the docstring was
        # dedented whole: a paragraph of examples that ends a help would lose its indent.
        if isinstance(text, str):
            from rich.text import Text

            return self.highlighter(Text.from_ansi(text.strip("\n"), style=style))
        return super().rich_text(text, style)

    def getvalue(self) -> str:
        # Rich pads every line out to the width: trailing blanks a pipe or a diff only shows.
        return "\n".join(line.rstrip() for line in super().getvalue().split("\n"))


class _Context(rich_click.RichContext):
    formatter_class = _Formatter


class Command(rich_click.RichCommand):
    """A command whose help is grouped; its errors are click's (see the module)."""

    context_class = _Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = kwargs.setdefault("context_settings", {})
        settings.setdefault("rich_help_config", HELP_CONFIG)
        super().__init__(*args, **kwargs)

    # click's own main, not rich-click's (which boxes the errors): the same function, so
    # its signature and overloads are click's too.
    main = click.Command.main


class Group(rich_click.RichGroup):
    """The command group, laid out as its commands are; its errors are click's."""

    command_class = Command
    context_class = _Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = kwargs.setdefault("context_settings", {})
        settings.setdefault("rich_help_config", HELP_CONFIG)
        super().__init__(*args, **kwargs)

    main = click.Group.main


class CommandAttrs(TypedDict, total=False):
    """What `command` hands on to `click.command`: the settings of a command's own."""

    name: str
    help: str
    short_help: str
    epilog: str
    hidden: bool
    no_args_is_help: bool


def command(**attrs: Unpack[CommandAttrs]) -> Callable[[Callable[..., object]], Command]:
    """`@click.command()` for this CLI: the sections `sections` declared become panels."""
    made: Callable[[Callable[..., object]], Command] = rich_click.command(cls=Command, **attrs)
    return made


Section = tuple[str, str, Sequence[str]]
"""A titled group of options: (title, one line saying when they matter, option names). A
name is an option's flag (`--judge`) or its parameter name (`container_user`)."""


def sections(*panels: Section) -> Callable[[F], F]:
    """Put the options into titled sections, shown in this order. An option named in none
    of them would fall into a last catch-all "Options" section; tests/unit/test_help.py
    refuses that for every command with more than a few options."""

    def decorate(f: F) -> F:
        # rich-click collects panels bottom-up, as decorators apply: add them in reverse.
        for title, help_text, names in reversed(panels):
            f = rich_click.option_panel(title, options=list(names), help=help_text or None)(f)
        return f

    return decorate
