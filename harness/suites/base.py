"""The seam between the shared machinery and one benchmark: about the size of an
lm-evaluation-harness Task.

A suite owns its dataset format, how a trajectory becomes segments of asks,
how a raw answer is graded, what the judge is asked, how records become a
report and how that report reads. The runner, the runtimes, the records,
resume, audits, the judge plumbing and `compare` are shared and never name a
task.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    ClassVar,
    Generic,
    NotRequired,
    Protocol,
    TypeAlias,
    TypedDict,
    TypeVar,
    cast,
)

from rich.table import Table

from apmbench.harness.errors import ConfigError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.reports.confinement import storage_verified
from apmbench.harness.reports.format import num
from apmbench.harness.reports.scores import (
    Score,
    ScoreRow,
    answer_score,
    storage_score,
    ttft_score,
)
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.plan import Segment
from apmbench.harness.run.records import SessionRecord
from apmbench.harness.scoring import measures
from apmbench.harness.scoring.judge.backend import ChatBackend
from apmbench.harness.scoring.judge.judging import JudgeOutcome, JudgeRequest


class SuiteDataset(Protocol):
    """What the shared machinery reads of any suite's loaded dataset."""

    @property
    def root(self) -> Path: ...

    @property
    def name(self) -> str: ...

    @property
    def content_hash(self) -> str: ...

    @property
    def trajectories(self) -> Sequence[Trajectory]: ...


Row: TypeAlias = Mapping[str, object]
"""One instance record as the shared machinery holds it: the runner's fields
(`run.records.InstanceRow`), the fields the suite put in the ask and the suite's grading.
Only the suite knows the latter two: it narrows rows into its own record type."""
MutableRow: TypeAlias = dict[str, object]
"""A row the judging pass may write the judge's outcome into."""


class ScoringSignature(TypedDict):
    """What changes the numbers for the same records; `compare` refuses runs it differs in."""

    scoring_schema: int
    judge: JsonObject
    judge_attempts: int | None
    judge_templates_sha256: str | None
    strict_answers: NotRequired[bool]
    """Present (True) only for `--strict-answers`, so the default's signature is unchanged."""
    variant: NotRequired[str]
    """Present only for a run in one of the suite's `variants` (`evaluate --variant`)."""


class ScoringRecord(TypedDict, total=False):
    """The judge's identity and settings, handed to `score` and recorded in the report as
    `scoring` (empty when records are scored without a pipeline, as tests do)."""

    signature: ScoringSignature
    judge: JsonObject
    judge_settings: JsonObject


class PlottedRun(TypedDict):
    """What the shared `compare` reads of one run's line of a suite's comparison."""

    label: str
    plot_y: float | None
    """The run's utility on the trade-off plot; None: not placed."""


class RunLine(PlottedRun):
    """The start of every suite's line per run in compare.json: which run it is."""

    run_dir: str
    system: str


class ComparisonHead(TypedDict):
    """What every suite's comparison (compare.json) holds besides its `runs`."""

    plot_y_label: str
    notes: list[str]


class Plotted(ComparisonHead):
    """What the shared `compare` and viewer read of a suite's comparison."""

    runs: list[PlottedRun]


def plotted(data: Mapping[str, object]) -> Plotted:
    """A suite's comparison as the shared machinery reads it: `ReportFormat.comparison` must hold
    these keys."""
    return cast(Plotted, data)


def answer_latency(latency: measures.Latency) -> float | None:
    """Mean time to answer where the suite parses streamed answers; else (ProactEgoMem's
    steps, a report from before it was recorded) the mean time to the end of the stream.
    Neither moves when a server sends a cheap first chunk before its model ran."""
    if "time_to_answer_s" in latency and latency["time_to_answer_s"]["mean"] is not None:
        return latency["time_to_answer_s"]["mean"]
    return latency["full_response_s"]["mean"]


@dataclass(frozen=True)
class Headline:
    """The numbers a summary row, `compare` and the trade-off plot show for one run."""

    utility: float | None
    """The suite's headline utility score (0-100), None when not computed."""
    utility_label: str
    ttft_mean_s: float | None
    storage_per_hour_bytes: float | None
    answer_mean_s: float | None = None
    """Mean time to answer (when the stream first determined the parsed answer): the
    leaderboard's latency axis, which a cheap first chunk cannot move."""

    @classmethod
    def measured(
        cls,
        utility: float | None,
        utility_label: str,
        latency: measures.Latency,
        storage: measures.Storage,
    ) -> Headline:
        """A suite's utility beside the latency and storage every suite measures alike."""
        return cls(
            utility=utility,
            utility_label=utility_label,
            ttft_mean_s=latency["time_to_first_token_s"]["mean"],
            storage_per_hour_bytes=storage["storage_per_hour_bytes"],
            answer_mean_s=answer_latency(latency),
        )


DatasetT = TypeVar("DatasetT", bound=SuiteDataset)
"""A suite's loaded dataset type."""
ItemT = TypeVar("ItemT")
"""What a suite's `Ask.item` is: the labels one asked instance is graded against."""
ReportT = TypeVar("ReportT", bound=Mapping[str, object])
"""A suite's report.json body (a TypedDict of its own)."""


PresetT = TypeVar("PresetT")


def preset_writer(
    presets: Mapping[str, PresetT], build: Callable[[PresetT, int, Path], dict[str, int]]
) -> Callable[[str, int, Path], dict[str, int]]:
    """`DatasetFormat.write_synthetic` from a generator's presets and its `build`."""
    return lambda preset, seed, out: build(presets[preset], seed, out)


@dataclass(frozen=True)
class ComparedRun(Generic[ReportT]):
    """One finished run as `compare` hands it to a suite: `report` is the report.json that
    suite's `score` wrote, so the suite sees it as its own report type."""

    root: Path
    label: str
    manifest: Mapping[str, JSON]
    report: ReportT

    @property
    def record(self) -> Manifest:
        """The manifest, typed: read its fields here, not the JSON's keys."""
        return Manifest.of(self.manifest)


@dataclass(frozen=True)
class ViewTable:
    """One table of the HTML viewer: plain cells, one row per run."""

    title: str
    header: tuple[str, ...]
    rows: list[list[str]]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ViewBars:
    """Scores of one run by group (tasks, families), for the viewer's bar charts."""

    title: str
    values: Mapping[str, float | None]
    """Group name -> score (0-100), None when not computed."""


def no_renames(public: object, labelled: object) -> dict[str, str]:
    """A public part whose instance ids are the labelled ones."""
    return {}


def not_timed(graded: Mapping[str, object]) -> object:
    """No parsed answer: the suite's streamed answers are not timed."""
    return None


def view_outcome(row: Row) -> str:
    """One instance's outcome as the viewer filters by it, read from the shared grading
    fields (a suite may name its own)."""
    if row.get("format") == "failure":
        return "format failure"
    if "gate_passed" in row:
        return "gate passed" if row["gate_passed"] else "gate failed"
    if "correct" in row:
        return "correct" if row["correct"] else "wrong"
    return "recorded"


@dataclass(frozen=True)
class DatasetFormat(Generic[DatasetT]):
    """A suite's dataset format as its own modules implement it: the shared machinery
    reads, splits and generates datasets through these (`suites/datasets.py`), so a suite
    names its functions once."""

    load: Callable[[Path, bool], DatasetT]
    """Read and validate a dataset (with its media when the flag is set), raising
    DatasetError naming what to fix."""
    split: Callable[[Path, Path, Path], None] | None = None
    """`apmbench-grpc split ROOT PUBLIC PRIVATE`: what a run needs to PUBLIC (labels
    withheld, media kept), the labelled annotations to PRIVATE; None: the suite cannot
    split yet."""
    synthetic: Callable[[str, int], Path] | None = None
    """The built-in synthetic dataset of a preset and seed, generated into the cache once;
    None: the suite has no generator."""
    write_synthetic: Callable[[str, int, Path], dict[str, int]] | None = None
    """Write a preset's synthetic dataset to a folder; returns item counts by kind."""
    load_variant: Callable[[Path, str], DatasetT] | None = None
    """Read a dataset to be played in one of the suite's `variants` (with its media)."""
    blind_instance_ids: Callable[[DatasetT, DatasetT], dict[str, str]] = no_renames
    """A public part's instance ids that differ from the labelled ones (an id that would
    name a label, a positive probe say, is neutral in the public part): public ->
    labelled."""
    planned_blind: Callable[[DatasetT], DatasetT] = lambda labelled: labelled
    """A labelled dataset as a run on its public part plans it: `score --labels` takes
    exactly this plan's asks. The same dataset, unless a suite leaves something out of a
    public run (ProactEgoMem's Oracle Memory condition)."""


@dataclass(frozen=True)
class Judging(Generic[DatasetT]):
    """What a suite asks a judge (`--judge`) and how it reads the outcomes."""

    requests: Callable[[DatasetT, Sequence[MutableRow]], list[JudgeRequest]]
    """Mark the graded rows that need a judge and return what to ask it."""
    apply: Callable[[Sequence[MutableRow], Mapping[str, JudgeOutcome]], None]
    """Write the judge's outcomes into the rows it was asked about."""
    templates_sha256: Callable[[], str]
    """Identifies the judge's wording (part of the scoring signature)."""


@dataclass(frozen=True)
class Grading(Generic[DatasetT, ItemT]):
    """How a suite grades one raw answer; only scoring holds it (the runner never grades)."""

    items: Callable[[DatasetT], Mapping[str, ItemT]]
    """Every instance's labels by instance id."""
    grade: Callable[[ItemT, str], Mapping[str, object]]
    """Parse one raw answer and check it against its instance's labels."""
    answer_key: Callable[[Mapping[str, object]], object] = not_timed
    """The parsed answer of a grading (None: none), so scoring can time when a streamed
    answer was determined (time to answer)."""
    judging: Judging[DatasetT] | None = None
    """None: nothing the suite scores needs a judge."""
    reference_judge: Callable[[Path], ChatBackend] | None = None
    """`--judge synthetic`: a deterministic judge that knows the suite's generated facts,
    given the dataset's root. Must refuse (ConfigError) every dataset but the suite's own
    synthetic benchmark, and label its identity with `reference.LABEL`."""


@dataclass(frozen=True)
class ReportFormat(Generic[ReportT]):
    """How a suite's records become its report, and how its reports read side by side."""

    score: Callable[[Sequence[Row], Sequence[SessionRecord], ScoringRecord], ReportT]
    """report.json from the graded records (judge outcomes included)."""
    headline: Callable[[ReportT], Headline]
    render: Callable[[ReportT, Mapping[str, JSON]], str]
    """report.md; the manifest is manifest.json as read (`Manifest.of` types it)."""
    summary_tables: Callable[[Sequence[ReportT], Sequence[str]], list[Table]]
    """The tables the embedded default prints, one row per system (the names)."""
    comparison: Callable[[Sequence[ComparedRun[ReportT]]], Mapping[str, object]]
    """compare.json's content (a TypedDict of the suite's); must hold `plot_y_label`,
    `notes` and per run `label` and `plot_y`. The pipeline adds `headers` and hands it
    back to `write_plots` and `render_comparison`, which narrow it again."""
    render_comparison: Callable[
        [Sequence[ComparedRun[ReportT]], Mapping[str, object], str | None], str
    ]
    """compare.md, given the runs, the comparison and the trade-off plot's file name."""
    write_plots: Callable[[Mapping[str, object], Path], None] | None = None
    """Extra plots of the suite's own into the comparison folder."""
    leaderboard_rows: Callable[[ReportT, Mapping[str, JSON]], list[ScoreRow]] | None = None
    """One run's rows of the suite's headline tables, as its compare shows them, each
    number with the field it was read from; None: the headline (`leaderboard_rows`)."""
    view_tables: Callable[[Sequence[ComparedRun[ReportT]]], list[ViewTable]] | None = None
    """The viewer's headline tables (`apmbench-grpc view`), one row per run."""
    view_bars: Callable[[ReportT], list[ViewBars]] | None = None
    """The viewer's bar charts for one run."""
    view_outcome: Callable[[Row], str] = view_outcome
    """One instance's outcome as the viewer filters by it."""


class Suite(ABC, Generic[DatasetT, ItemT, ReportT]):
    """One benchmark, generic over its dataset, item and report types: a suite's own
    modules see them precisely, the shared machinery holds an `OpaqueSuite`.

    The seam is four methods, each handing over functions the suite's own modules define
    (so a suite names each once, with no forwarding methods): its dataset format, its
    plan, its grading and its report format. The operations every suite shares on top of
    them (generate a preset, load in a variant, split, look up an item) are functions of
    `suites/datasets.py` and of this module, not methods a suite could override.
    """

    name: ClassVar[str]
    """The `--benchmark` name, recorded in the manifest and the resume keys."""
    title: ClassVar[str]
    scoring_schema: ClassVar[int]
    """Bumped when the report's numbers would change for the same records."""

    synthetic_presets: ClassVar[tuple[str, ...]] = ()
    """Sizes of the suite's built-in synthetic benchmark (none: no generator)."""

    required_fps: ClassVar[float | None] = None
    """The frame rate the suite's plan is built on, when it is fixed (its steps are one
    frame apart); `evaluate` refuses any other --fps. None: any rate."""

    variants: ClassVar[Mapping[str, str]] = {}
    """Conditions a run may ask for instead of the suite's own (`evaluate --variant`), name
    -> what changes; the report names the one that ran and `compare` keeps them apart."""

    @abstractmethod
    def dataset_format(self) -> DatasetFormat[DatasetT]:
        """The suite's dataset functions (imported here, when first used)."""

    @abstractmethod
    def plan(self, dataset: DatasetT, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        """The segments of one trajectory; each ask carries a wire-ready query and no label."""

    @abstractmethod
    def grading(self) -> Grading[DatasetT, ItemT]:
        """How the suite grades and judges answers (scoring's only)."""

    @abstractmethod
    def report_format(self) -> ReportFormat[ReportT]:
        """How the suite's reports are made, read and compared."""


OpaqueSuite: TypeAlias = "Suite[Any, Any, Any]"
"""A suite as the shared machinery holds it: it hands a suite back only what the same
suite gave it (its dataset, items and report), so it needs none of their types."""


def item_of(suite: OpaqueSuite, dataset: SuiteDataset, instance_id: str) -> object | None:
    """The labels of a recorded instance, for grading; None if the dataset has none."""
    # Scoring looks up every instance of one dataset: index it once per dataset (by
    # identity: datasets hold dicts and do not hash).
    indexed = suite.__dict__.get("_items_of")
    if indexed is None or indexed[0] is not dataset:
        indexed = suite.__dict__["_items_of"] = (dataset, suite.grading().items(dataset))
    return indexed[1].get(instance_id)


def leaderboard_rows(
    suite: OpaqueSuite, report: Mapping[str, object], manifest: Mapping[str, JSON]
) -> list[ScoreRow]:
    """One run's rows of the suite's headline tables; by default the headline: the
    utility (which the suite computes, so no field), the mean time to first token, the
    mean time to answer and Storage/hr."""
    form = suite.report_format()
    if form.leaderboard_rows is not None:
        return form.leaderboard_rows(report, manifest)
    headline = form.headline(report)
    return [
        ScoreRow(
            f"{suite.title} headline",
            (headline.utility_label, "TTFT mean (s)", "Answer mean (s)", "Storage/hr"),
            (
                Score(num(headline.utility), headline.utility, None),
                ttft_score(report),
                answer_score(report),
                storage_score(report, storage_verified(manifest)),
            ),
        )
    ]


def reference_judge(suite: OpaqueSuite, dataset_root: Path) -> ChatBackend:
    """`--judge synthetic` for a dataset: the suite's reference judge, which refuses any
    dataset but the suite's own synthetic benchmark."""
    open_reference = suite.grading().reference_judge
    if open_reference is None:
        raise ConfigError(f"the {suite.title} suite has no synthetic reference judge")
    backend: ChatBackend = open_reference(dataset_root)
    return backend
