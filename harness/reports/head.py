"""What every report of every suite states at its top, written by the run pipeline.

The dataset's identity, the persistence mode, the judge, and every
relaxation of confinement (`confinement_lines`) are facts of the run, not of
a benchmark: the pipeline puts them at the head of report.md (after the
suite's title), into report.json (`header`), at the top of report.html and
into compare.md and compare.json, so a suite can neither forget nor
reword them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from apmbench.harness.json_types import JsonObject
from apmbench.harness.reports.confinement import (
    ManifestLike,
    confinement_lines,
    persistence,
    storage_verified,
)
from apmbench.harness.reports.format import dataset_line, flattened
from apmbench.harness.reports.system_text import md_cell, md_code
from apmbench.harness.run.live import LiveReport
from apmbench.harness.run.manifest import Manifest

if TYPE_CHECKING:
    from apmbench.harness.runtimes.base import Confinement


class DatasetIdentity(TypedDict):
    name: str | None
    hash: str | None


class ReportHeader(TypedDict):
    """report.json's `header` (and each run's entry of compare.json's `headers`)."""

    dataset: DatasetIdentity
    persistence: str
    storage_verified: bool
    judge: dict[str, Any]
    answers: str
    """`repaired` or `strict` (`answers_mode`)."""
    variant: str | None
    """The suite's condition the run played (`evaluate --variant`); None: its own."""
    confined: bool | None
    notes: list[str]
    live: NotRequired[float]
    """The speed of a live run (`evaluate --live`); absent: an offline replay."""
    live_buffer_s: NotRequired[float]
    """A live run's frame buffer (`--live-buffer`), seconds of video."""


class RunFacts(TypedDict, total=False):
    """What the scoring pipeline, not the suite, adds to every report.json: the audits'
    findings (`evaluate --audit`), the user's mounts, the sandbox's facts and the header.
    Every suite's report type extends it."""

    audit: JsonObject
    live: LiveReport
    """`evaluate --live`: lag, latency from the question's time, drops and pacing."""
    mounted_into_system: list[str]
    sandbox: Confinement
    header: ReportHeader


def judge_label(manifest: ManifestLike) -> str:
    """The judge the run was scored with: its kind and what names it (model, endpoint)."""
    judge = Manifest.of(manifest).judge or {"kind": "none"}
    # Nested settings as dotted keys (generator.seed=0), never a Python dict.
    described = ", ".join(
        f"{md_cell(k)}={md_cell(v)}"
        for k, v in flattened({k: v for k, v in judge.items() if k != "kind"})
    )
    return f"`{md_code(judge.get('kind', 'none'))}`" + (f" ({described})" if described else "")


def header(report: Mapping[str, Any], manifest: ManifestLike) -> ReportHeader:
    """report.json's `header`: the same facts as the head of report.md, as fields."""
    record = Manifest.of(manifest)
    sandbox = report.get("sandbox")
    head: ReportHeader = {
        "dataset": {"name": record.dataset_name, "hash": record.dataset_hash},
        "persistence": persistence(record),
        "storage_verified": storage_verified(record),
        "judge": record.judge or {"kind": "none"},
        "answers": answers_mode(record),
        "variant": record.variant,
        "confined": None if sandbox is None else bool(sandbox.get("confined")),
        "notes": [line.replace("**", "") for line in confinement_lines(report, record) if line],
    }
    if record.live_speed is not None:
        head["live"] = record.live_speed
    if record.live_buffer_s is not None:
        head["live_buffer_s"] = record.live_buffer_s
    return head


def answers_mode(manifest: ManifestLike) -> str:
    """How answers that need repair were scored: `repaired` (as read, appendix B.5's rule)
    or `strict` (as format failures, `--strict-answers`)."""
    strict = Manifest.of(manifest).judge_settings.get("strict_answers") is True
    return "strict" if strict else "repaired"


def identity_line(manifest: ManifestLike) -> str:
    record = Manifest.of(manifest)
    played = f"; variant `{md_code(record.variant)}`" if record.variant is not None else ""
    if record.live_speed is not None:
        played += f"; **{record.played}** (compared only with runs played alike)"
    return (
        f"{dataset_line(manifest)}{played}; persistence `{md_code(persistence(manifest))}`; "
        f"judge {judge_label(manifest)}; answers `{answers_mode(manifest)}`."
    )


def protocol_line(manifest: ManifestLike) -> str:
    """Said only when the system declares another protocol version than this harness's:
    the version it was run and is judged by (docs/PROTOCOL.md, evolution policy)."""
    record = Manifest.of(manifest)
    ours, declared = record.protocol_version, record.system_protocol_version
    if not ours or not declared or ours == declared:
        return ""
    return (
        f"The system declares protocol `{md_code(declared)}` (this harness speaks "
        f"`{md_code(ours)}`): it was sent only what {md_code(declared)} has, and `check` "
        f"judges it by the rules of {md_code(declared)}."
    )


def head_lines(report: Mapping[str, object], manifest: ManifestLike) -> list[str]:
    """The head of report.md: the identity line, the protocol line when the system declares
    an older version, then every confinement line."""
    protocol = protocol_line(manifest)
    return [
        identity_line(manifest),
        *([protocol] if protocol else []),
        "",
        *confinement_lines(report, manifest),
    ]


def runs_head(heads: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """The heads of several runs as one list of notes, each note once: a line every run
    has (the same dataset, judge or seed note) is given plainly, any other prefixed with
    the run's label."""
    lines = [[line.replace("**", "") for line in head if line] for _, head in heads]
    shared = [line for line in lines[0] if all(line in other for other in lines[1:])]
    notes = list(dict.fromkeys(shared))
    for (label, _), own in zip(heads, lines, strict=True):
        notes += [f"{label}: {line}" for line in dict.fromkeys(own) if line not in shared]
    return notes


def with_head(markdown: str, head: Sequence[str]) -> str:
    """`markdown` with `head` after its title (its first line, when that is a `# ` heading)."""
    block = "\n".join(head).rstrip("\n") + "\n\n"
    if markdown.startswith("# "):
        title, _, rest = markdown.partition("\n")
        return f"{title}\n\n{block}{rest.lstrip(chr(10))}"
    return block + markdown
