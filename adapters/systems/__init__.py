"""Reference memory systems, found by name without importing them all.

A name maps to a `SystemRecord`: its "module:attribute", and the facts
`apmbench-grpc systems` lists (its memory, the benchmarks it answers, the
variables that name its model), kept here beside the registration. The module
is imported only when that system is asked for, so a model-based system's
torch import never slows the others. An installed distribution registers more
systems by name through the `apmbench_grpc.systems` entry-point group (see
`apmbench.adapters.sdk.registry`); `load_system` also accepts
"package.module:Attribute" directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.adapters.sdk.registry import Registry
from apmbench.adapters.sdk.system import MemorySystem

APMBENCH, EGOPROBE, PROACTEGOMEM = "apmbench", "egoprobe", "proactegomem"
"""The benchmark suites (`--benchmark NAME`) a system's record can name."""
BENCHMARKS = (APMBENCH, EGOPROBE, PROACTEGOMEM)
# The variables that name a VLM system's model: a local checkpoint (transformers
# backend), or the served model's name behind APMBENCH_VLM_API_BASE (openai backend).
_VLM_MODEL_ENV = ("APMBENCH_VLM_MODEL", "APMBENCH_VLM_API_MODEL")
# The specialised memories read the model's KV cache and vision features: local only.
_LOCAL_MODEL_ENV = ("APMBENCH_VLM_MODEL",)


@dataclass(frozen=True)
class SystemRecord:
    """A registered system: where its class is, and what `apmbench-grpc systems` says of it."""

    target: str
    """"module:attribute" of the class (imported only when the system is asked for)."""
    memory: str
    """What its memory keeps, in a few words."""
    benchmarks: tuple[str, ...]
    """The suites it answers (a subset of BENCHMARKS, in that order); on another suite it
    runs but stays silent or guesses."""
    model_env: tuple[str, ...] = ()
    """The environment variables that name its model, any one of them (see the README's
    APMBENCH_VLM_* table); empty: it needs no model."""
    not_compared: str = ""
    """Why the embedded comparison (`evaluate` with no system, `make demo`) leaves it out
    although it needs no model; empty: it is compared, or left out for its model or
    benchmarks (`left_out` says which)."""

    @property
    def needs_model(self) -> bool:
        return bool(self.model_env)


# The reference systems answer the synthetic question templates (answering.py) of these two.
_TEMPLATE_ANSWERERS = (APMBENCH, EGOPROBE)
SYSTEMS: dict[str, SystemRecord] = {
    "null": SystemRecord(
        "apmbench.adapters.systems.null:NullSystem",
        "counts of what it saw (a fixed answer, always silent: the harness's overhead)",
        BENCHMARKS,
        not_compared="it measures the harness's own overhead (a fixed answer), not a memory",
    ),
    "recent-frames": SystemRecord(
        "apmbench.adapters.systems.recent_frames:RecentFrames",
        "nothing kept; reads the session's last 4 frames (SimpleStream)",
        _TEMPLATE_ANSWERERS,
    ),
    "frame-archive": SystemRecord(
        "apmbench.adapters.systems.frame_archive:FrameArchive",
        "every frame as JPEG, exported as Motion-JPEG video (raw video as memory)",
        _TEMPLATE_ANSWERERS,
    ),
    "text-log": SystemRecord(
        "apmbench.adapters.systems.text_log:TextLog",
        "a text log per session: first actions, where objects were last seen, registrations",
        _TEMPLATE_ANSWERERS,
    ),
    "text-only": SystemRecord(
        "apmbench.adapters.systems.text_only:TextOnly",
        "nothing; never looks at a frame (the shortcut check)",
        _TEMPLATE_ANSWERERS,
    ),
    # The paper's general-model protocols on a video-language model (APMBENCH_VLM_*).
    "vlm-simplestream": SystemRecord(
        "apmbench.adapters.systems.vlm_simplestream:VlmSimpleStream",
        "nothing kept; the model reads the session's 4 most recent frames (SimpleStream)",
        BENCHMARKS,
        _VLM_MODEL_ENV,
    ),
    "vlm-video-memory": SystemRecord(
        "apmbench.adapters.systems.vlm_video_memory:VlmVideoMemory",
        "every frame of every session as JPEG (raw video as memory), sampled for the model",
        BENCHMARKS,
        _VLM_MODEL_ENV,
    ),
    "vlm-text-memory": SystemRecord(
        "apmbench.adapters.systems.vlm_text_memory:VlmTextMemory",
        "one summary per session, written by the model (text summary as memory)",
        BENCHMARKS,
        _VLM_MODEL_ENV,
    ),
    # Specialised streaming memories on the same model (transformers backend only).
    "kv-memory": SystemRecord(
        "apmbench.adapters.systems.kv_memory:KvMemory",
        "the model's KV cache per block of frames, top-k blocks retrieved per query (ReKV)",
        BENCHMARKS,
        _LOCAL_MODEL_ENV,
    ),
    "event-memory": SystemRecord(
        "apmbench.adapters.systems.event_memory:EventMemory",
        "captioned events with key frames, rolled up into sessions and days (OASIS/HERMES)",
        BENCHMARKS,
        _LOCAL_MODEL_ENV,
    ),
    # The yardstick of restart's price (docs/performance.md): text-log's memory at a
    # model's cost (a weights file read and checksummed, a load wait, time per call).
    "model-sim": SystemRecord(
        "apmbench.adapters.systems.model_sim:ModelSim",
        "that of APMBENCH_SIM_MEMORY (text-log), at a model's cost per start, frame and query",
        _TEMPLATE_ANSWERERS,
        not_compared="text-log's memory at a model's cost per start, frame and query: slow by "
        "design, the yardstick of restart's price (docs/performance.md)",
    ),
    # ProactEgoMem's rule-based pixel reader (the synthetic clips' devices).
    "proact-rules": SystemRecord(
        "apmbench.adapters.systems.proact_rules:ProactRules",
        "detections per frame (devices, objects on surfaces, panels), read from the pixels",
        (PROACTEGOMEM,),
    ),
}
REGISTRY: dict[str, str] = {name: record.target for name, record in SYSTEMS.items()}
"""Registered name -> "module:attribute"."""
# The reference systems the embedded default compares, in this order.
REFERENCE_SYSTEMS = ("recent-frames", "frame-archive", "text-log", "text-only")
# The paper's general-model protocols; they need a model (APMBENCH_VLM_*).
VLM_SYSTEMS = ("vlm-simplestream", "vlm-video-memory", "vlm-text-memory")
# Specialised memories (a KV cache, an event tree); they need the model's weights themselves.
SPECIALIZED_SYSTEMS = ("kv-memory", "event-memory")
# Reference systems of one suite only, compared on that suite.
SUITE_SYSTEMS = ("proact-rules",)


def compared_systems(
    environ: Mapping[str, str] | None = None, benchmark: str | None = None
) -> tuple[str, ...]:
    """What `evaluate` with no system runs: the reference systems, and the VLM systems
    too when APMBENCH_VLM_MODEL or APMBENCH_VLM_API_BASE names a model. Without one
    they stay out: no weights can be fetched, and the demo must finish on two CPU cores.
    The specialised memories join only with a local model (APMBENCH_VLM_MODEL and the
    transformers backend): they read its KV cache and vision features, which no
    OpenAI-compatible endpoint exposes.

    On `benchmark`: those of them that answer it, and a suite's own reference systems
    (SUITE_SYSTEMS: ProactEgoMem's rule reader), so no suite is compared on systems
    that do not answer it. None: the APM-Bench comparison (the default suite's)."""
    env = os.environ if environ is None else environ
    local = env.get("APMBENCH_VLM_MODEL") and env.get("APMBENCH_VLM_BACKEND", "") in (
        "",
        "transformers",
    )
    names: tuple[str, ...]
    if local:
        names = REFERENCE_SYSTEMS + VLM_SYSTEMS + SPECIALIZED_SYSTEMS
    else:
        wanted = env.get("APMBENCH_VLM_API_BASE")
        names = REFERENCE_SYSTEMS + VLM_SYSTEMS if wanted else REFERENCE_SYSTEMS
    if benchmark is None:
        return names
    return tuple(n for n in names + SUITE_SYSTEMS if benchmark in SYSTEMS[n].benchmarks)


def left_out(benchmark: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every registered system the embedded comparison on `benchmark` does not run, and why
    (for a line each, so a user knows the comparison is not every system there is)."""
    env = os.environ if environ is None else environ
    compared = compared_systems(env, benchmark)
    out: dict[str, str] = {}
    for name in SYSTEM_REGISTRY.names():
        if name in compared:
            continue
        record = SYSTEMS.get(name)
        if record is None:
            out[name] = "registered by an installed distribution: run it with --system NAME"
        elif benchmark not in record.benchmarks:
            out[name] = f"it answers only {', '.join(record.benchmarks)}, not {benchmark}"
        elif record.not_compared:
            out[name] = record.not_compared
        elif record.model_env == _LOCAL_MODEL_ENV:
            out[name] = (
                "it needs a local video-language model's weights (APMBENCH_VLM_MODEL, "
                "transformers backend): it reads the model's own caches and features"
            )
        elif record.needs_model:
            out[name] = (
                "it needs a video-language model: set APMBENCH_VLM_MODEL (a local "
                "checkpoint) or APMBENCH_VLM_API_BASE (an OpenAI-compatible endpoint)"
            )
        else:
            out[name] = "not in the comparison: run it with --system NAME"
    return out


class UnknownSystem(ApmbenchError):
    """No registered system has this name and it is not an importable "module:attr"."""


SYSTEM_REGISTRY: Registry[type[MemorySystem]] = Registry(
    "system", REGISTRY, MemorySystem, error=UnknownSystem, also=", or 'package.module:ClassName'"
)
"""The built-in systems above plus those installed distributions register."""


def load_system(spec: str) -> MemorySystem:
    """Build the system registered as `spec`, or the class at "module:attr"."""
    if ":" in spec and spec not in SYSTEM_REGISTRY:
        return SYSTEM_REGISTRY.load_target(spec)()
    return SYSTEM_REGISTRY.load(spec)()
