"""The check report for people (a table) and for programs (JSON)."""

from __future__ import annotations

import json

from rich.table import Table
from rich.text import Text

from apmbench.harness.check.model import CheckReport, CheckResult
from apmbench.harness.check.verdicts import Outcome

_STYLE = {
    Outcome.PASS: "green",
    Outcome.FAIL: "bold red",
    Outcome.NOT_APPLICABLE: "yellow",
    Outcome.WARN: "magenta",
}


def result_line(result: CheckResult) -> Text:
    """One line as a check finishes: outcome, name, time."""
    line = Text()
    line.append(f"{result.outcome.value:>4}", style=_STYLE[result.outcome])
    line.append(f"  {result.name}  ({result.seconds:.2f} s)")
    return line


def table(report: CheckReport) -> Table:
    system = report.target.get("system")
    name = f"{system['name']} {system['version']}" if isinstance(system, dict) else "the server"
    counts = report.counts()
    title = (
        f"apmbench-grpc check: {name}: {counts['pass']} passed, {counts['fail']} failed, "
        f"{counts['n/a']} not applicable, {counts['warn']} warnings ({report.seconds:.1f} s); "
        f"judged by protocol {report.target.get('judged_by', '?')}"
    )
    out = Table(title=title, show_lines=True, expand=False)
    out.add_column("check", no_wrap=True)
    out.add_column("result", no_wrap=True)
    out.add_column("rule", max_width=28)
    out.add_column("what was seen / what to do", ratio=1)
    for r in report.results:
        said = Text(r.reason)
        if r.hint and r.outcome is not Outcome.PASS:
            said.append(f"\nhint: {r.hint}", style="cyan")
        out.add_row(
            r.name,
            Text(r.outcome.value, style=_STYLE[r.outcome]),
            r.rule.label(),
            said,
        )
    return out


def failures(report: CheckReport) -> list[str]:
    """Each failure in one plain line naming the rule it broke (for logs and plain terminals)."""
    return [
        f'FAIL {r.name}: breaks {r.rule.label()} (memory_system.proto: "{r.rule.quote}"): '
        f"{r.reason.rstrip('.')}." + (f" Hint: {r.hint}" if r.hint else "")
        for r in report.failed
    ]


def to_json(report: CheckReport) -> str:
    return json.dumps(report.as_dict(), indent=2, sort_keys=True) + "\n"
