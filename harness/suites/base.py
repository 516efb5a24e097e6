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
    """A suite's comparison as the shared machinery reads it: `Suite.comparison` must hold
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
class DatasetFormat(Generic[DatasetT]):
    """A suite's dataset format as its own modules implement it: `Suite` reads, splits and
    generates datasets through these, so a suite names its functions once."""

    load: Callable[[Path, bool], DatasetT]
    """Read and validate a dataset (with its media when the flag is set), raising
    DatasetError naming what to fix."""
    split: Callable[[Path, Path, Path], None] | None = None
    """`apmbench-grpc split ROOT PUBLIC PRIVATE`; None: the suite cannot split yet."""
    synthetic: Callable[[str, int], Path] | None = None
    """The built-in synthetic dataset of a preset and seed, generated into the cache once;
    None: the suite has no generator."""
    write_synthetic: Callable[[str, int, Path], dict[str, int]] | None = None
    """Write a preset's synthetic dataset to a folder; returns item counts by kind."""
    load_variant: Callable[[Path, str], DatasetT] | None = None
    """Read a dataset to be played in one of the suite's `variants` (with its media)."""


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


class Suite(ABC, Generic[DatasetT, ItemT, ReportT]):
    """One benchmark, generic over its dataset, item and report types: a suite's own
    modules see them precisely, the shared machinery holds an `OpaqueSuite`."""

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

    def check_fps(self, fps: float) -> None:
        if self.required_fps is not None and fps != self.required_fps:
            raise ConfigError(
                f"{self.title} steps once per {1 / self.required_fps:g} s of video, one frame "
                f"each (its paper's setting): --fps must be {self.required_fps:g}, got {fps:g}"
            )

    # -- data and plan -------------------------------------------------------------

    @abstractmethod
    def dataset_format(self) -> DatasetFormat[DatasetT]:
        """The suite's dataset functions (imported here, when first used)."""

    def synthetic(self, preset: str, seed: int) -> Path:
        """The built-in synthetic dataset, generated once into the cache and reused."""
        generate = self.dataset_format().synthetic
        if generate is None:
            raise ConfigError(f"the {self.title} suite has no synthetic generator")
        self.check_preset(preset)
        return generate(preset, seed)

    def write_synthetic(self, preset: str, seed: int, out: Path) -> dict[str, int]:
        """Write the synthetic dataset to `out`; returns item counts by kind."""
        write = self.dataset_format().write_synthetic
        if write is None:
            raise ConfigError(f"the {self.title} suite has no synthetic generator")
        self.check_preset(preset)
        return write(preset, seed, out)

    def check_preset(self, preset: str) -> None:
        if preset not in self.synthetic_presets:
            known = ", ".join(self.synthetic_presets) or "none"
            raise ConfigError(f"{self.title} has no synthetic preset {preset!r} (presets: {known})")

    variants: ClassVar[Mapping[str, str]] = {}
    """Conditions a run may ask for instead of the suite's own (`evaluate --variant`), name
    -> what changes; the report names the one that ran and `compare` keeps them apart."""

    def load(self, root: Path, variant: str | None = None) -> DatasetT:
        # Callers pass `variant` only when there is one (`load_as`): a suite written before
        # variants may override load(root) alone.
        """Read and validate a dataset (to be played in `variant`, None: the suite's own
        condition); raise DatasetError naming what to fix."""
        if variant is None:
            return self.dataset_format().load(root, True)
        load_variant = self.dataset_format().load_variant
        if variant not in self.variants or load_variant is None:
            known = ", ".join(self.variants) or "none"
            raise ConfigError(f"{self.title} has no variant {variant!r} (variants: {known})")
        return load_variant(root, variant)

    def split(self, root: Path, public: Path, private: Path) -> None:
        """Write what a run needs of `root` to `public` (labels withheld, media kept) and its
        labelled annotations to `private` (`apmbench-grpc split`)."""
        split = self.dataset_format().split
        if split is None:
            raise ConfigError(
                f"the {self.title} suite cannot split its datasets yet: "
                "evaluate with labels present"
            )
        split(root, public, private)

    def blind_instance_ids(self, public: DatasetT, labelled: DatasetT) -> dict[str, str]:
        """A public part's instance ids that differ from the labelled ones (an id that would
        name a label, a positive probe say, is neutral in the public part): public -> labelled."""
        return {}

    def planned_blind(self, labelled: DatasetT) -> DatasetT:
        """`labelled` as a run on its public part plans it: `score --labels` takes exactly
        this plan's asks. The same dataset, unless a suite leaves something out of a public
        run (ProactEgoMem's Oracle Memory condition)."""
        return labelled

    def load_labels(self, root: Path) -> DatasetT:
        """A private part's labelled dataset, read without its media (`score --labels`)."""
        form = self.dataset_format()
        if form.split is None:
            raise ConfigError(f"the {self.title} suite cannot score blind predictions yet")
        return form.load(root, False)

    @abstractmethod
    def plan(self, dataset: DatasetT, trajectory: Trajectory, can_import: bool) -> list[Segment]:
        """The segments of one trajectory; each ask carries a wire-ready query."""

    # -- grading and judging -------------------------------------------------------

    @abstractmethod
    def grade(self, item: ItemT, text: str) -> Mapping[str, object]:
        """Parse one raw answer and check it against the labels of `item` (an `Ask.item`)."""

    def answer_key(self, graded: Mapping[str, object]) -> object:
        """The parsed answer of a grading (None: none), so the runner can time when a
        streamed answer was determined (time to answer). None by default: not timed."""
        return None

    @abstractmethod
    def items(self, dataset: DatasetT) -> Mapping[str, ItemT]:
        """Every `Ask.item` of a dataset by instance id."""

    def item_of(self, dataset: DatasetT, instance_id: str) -> ItemT | None:
        """The `Ask.item` of a recorded instance, for re-scoring; None if unknown."""
        # Re-scoring looks up every instance of one dataset: index it once (by identity:
        # datasets hold dicts and do not hash).
        indexed = getattr(self, "_indexed", None)
        if indexed is None or indexed[0] is not dataset:
            indexed = self._indexed = (dataset, self.items(dataset))
        return indexed[1].get(instance_id)

    def judge_requests(
        self, dataset: DatasetT, instances: Sequence[MutableRow]
    ) -> list[JudgeRequest]:
        """Mark the rows that need a judge and return what to ask it (none by default)."""
        return []

    def apply_verdicts(
        self, instances: Sequence[MutableRow], outcomes: Mapping[str, JudgeOutcome]
    ) -> None:
        """Write the judge's outcomes into the rows it was asked about."""

    def reference_judge(self, dataset_root: Path) -> ChatBackend:
        """`--judge synthetic`: a deterministic judge that knows the suite's generated facts.

        Must refuse (ConfigError) every dataset but the suite's own synthetic
        benchmark, and label its identity with `reference.LABEL`.
        """
        raise ConfigError(f"the {self.title} suite has no synthetic reference judge")

    def judge_templates_sha256(self) -> str | None:
        """Identifies the judge's wording (part of the scoring signature)."""
        return None

    # -- scoring and reports -------------------------------------------------------

    @abstractmethod
    def score(
        self,
        instances: Sequence[Row],
        sessions: Sequence[SessionRecord],
        scoring: ScoringRecord,
    ) -> ReportT:
        """report.json from the graded records (judge outcomes included)."""

    @abstractmethod
    def headline(self, report: ReportT) -> Headline: ...

    @abstractmethod
    def render(self, report: ReportT, manifest: Mapping[str, JSON]) -> str:
        """report.md; `manifest` is manifest.json as read (`Manifest.of` types it)."""

    @abstractmethod
    def summary_tables(self, reports: Sequence[ReportT], names: Sequence[str]) -> list[Table]:
        """The tables the embedded default prints, one row per system."""

    # -- the HTML viewer (`apmbench-grpc view`) ------------------------------------

    def view_tables(self, runs: Sequence[ComparedRun[ReportT]]) -> list[ViewTable]:
        """The viewer's headline tables, one row per run (none by default)."""
        return []

    def view_bars(self, report: ReportT) -> list[ViewBars]:
        """The viewer's bar charts for one run (none by default)."""
        return []

    def view_outcome(self, row: Row) -> str:
        """One instance's outcome as the viewer filters by it."""
        if row.get("format") == "failure":
            return "format failure"
        if "gate_passed" in row:
            return "gate passed" if row["gate_passed"] else "gate failed"
        if "correct" in row:
            return "correct" if row["correct"] else "wrong"
        return "recorded"

    # -- the leaderboard (`apmbench-grpc leaderboard`) -------------------------------

    def leaderboard_rows(self, report: ReportT, manifest: Mapping[str, JSON]) -> list[ScoreRow]:
        """One run's rows of the suite's headline tables, as its compare shows them, each
        number with the field it was read from. By default the headline: the utility (which
        the suite computes, so no field), the mean time to first token and Storage/hr."""
        headline = self.headline(report)
        return [
            ScoreRow(
                f"{self.title} headline",
                (headline.utility_label, "TTFT mean (s)", "Answer mean (s)", "Storage/hr"),
                (
                    Score(num(headline.utility), headline.utility, None),
                    ttft_score(report),
                    answer_score(report),
                    storage_score(report, storage_verified(manifest)),
                ),
            )
        ]

    @abstractmethod
    def comparison(self, runs: Sequence[ComparedRun[ReportT]]) -> Mapping[str, object]:
        """compare.json's content (a TypedDict of the suite's); must hold `plot_y_label`,
        `notes` and per run `label` and `plot_y`. The pipeline adds `headers` and hands it
        back to `write_plots` and `render_comparison`, which narrow it again."""

    def write_plots(self, data: Mapping[str, object], out: Path) -> None:
        """Extra plots of the suite's own into the comparison folder (none by default)."""

    @abstractmethod
    def render_comparison(
        self, runs: Sequence[ComparedRun[ReportT]], data: Mapping[str, object], plot: str | None
    ) -> str:
        """compare.md."""


OpaqueSuite: TypeAlias = "Suite[Any, Any, Any]"
"""A suite as the shared machinery holds it: it hands a suite back only what the same
suite gave it (its dataset, items and report), so it needs none of their types."""


def load_as(suite: OpaqueSuite, root: Path, variant: str | None) -> SuiteDataset:
    """`suite.load(root)`, or in `variant` when one is asked for: a suite that overrides
    `load(root)` alone (written before variants) still loads its own condition."""
    loaded: SuiteDataset = suite.load(root) if variant is None else suite.load(root, variant)
    return loaded
