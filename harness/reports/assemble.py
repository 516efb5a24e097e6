"""A run's report as every suite's is written: the suite's numbers, then what the harness
states of every run beside them (the audits' findings, the host paths the system could
read, its confinement, the header), and report.md with the same head above the suite's
text. The one place a run's report is put together; `compare` and the viewer read it."""

from __future__ import annotations

from apmbench.harness.json_types import JsonObject
from apmbench.harness.reports.confinement import mounted_into_system
from apmbench.harness.reports.head import RunFacts, head_lines, header, with_head
from apmbench.harness.reports.system_text import md_document
from apmbench.harness.run.live import LiveReport
from apmbench.harness.run.live import markdown as live_markdown
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.runtimes import confinement


def run_report(
    report: RunFacts,
    manifest: Manifest,
    audits: JsonObject | None = None,
    played: LiveReport | None = None,
) -> RunFacts:
    """The suite's report with what every report holds; `audits`: `evaluate --audit`'s
    findings flag by flag (None: no audit ran); `played`: a live run's figures."""
    if audits is not None:
        report["audit"] = audits
    if played is not None:
        report["live"] = played
    mounted = mounted_into_system(manifest)
    if mounted:  # the user's --mount: host paths the system could read, beside the numbers
        report["mounted_into_system"] = mounted
    if (sandbox := confinement(manifest.runtime)) is not None:
        report["sandbox"] = sandbox
    # The harness, not the suite, states the run's identity and confinement (head.py).
    report["header"] = header(report, manifest)
    return report


def run_markdown(suite_text: str, report: RunFacts, manifest: Manifest) -> str:
    """report.md: the head every report starts with, the suite's own text, and for a live
    run the harness's section on keeping up with the clock."""
    text = with_head(suite_text, head_lines(report, manifest))
    if "live" in report:
        text = text.rstrip("\n") + "\n\n" + live_markdown(report["live"])
    return md_document(text)
