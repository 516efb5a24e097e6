"""Reference memory systems, found by name without importing them all.

A name maps to "module:attribute"; the module is imported only when that
system is asked for, so a model-based system's torch import never slows the
others. `load_system` also accepts "package.module:Attribute" directly, which
is how a method author serves a system that is not registered here.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.adapters.sdk.system import MemorySystem

REGISTRY: dict[str, str] = {
    "null": "apmbench.adapters.systems.null:NullSystem",
    "recent-frames": "apmbench.adapters.systems.recent_frames:RecentFrames",
    "frame-archive": "apmbench.adapters.systems.frame_archive:FrameArchive",
    "text-log": "apmbench.adapters.systems.text_log:TextLog",
    "text-only": "apmbench.adapters.systems.text_only:TextOnly",
    # The paper's general-model protocols on a video-language model (APMBENCH_VLM_*).
    "vlm-simplestream": "apmbench.adapters.systems.vlm_simplestream:VlmSimpleStream",
    "vlm-video-memory": "apmbench.adapters.systems.vlm_video_memory:VlmVideoMemory",
    "vlm-text-memory": "apmbench.adapters.systems.vlm_text_memory:VlmTextMemory",
    # Specialised streaming memories on the same model (transformers backend only).
    "kv-memory": "apmbench.adapters.systems.kv_memory:KvMemory",
    "event-memory": "apmbench.adapters.systems.event_memory:EventMemory",
    # ProactEgoMem's rule-based pixel reader (the synthetic clips' devices).
    "proact-rules": "apmbench.adapters.systems.proact_rules:ProactRules",
}
# The reference systems the embedded default compares, in this order.
REFERENCE_SYSTEMS = ("recent-frames", "frame-archive", "text-log", "text-only")
# The paper's general-model protocols; they need a model (APMBENCH_VLM_*).
VLM_SYSTEMS = ("vlm-simplestream", "vlm-video-memory", "vlm-text-memory")
# Specialised memories (a KV cache, an event tree); they need the model's weights themselves.
SPECIALIZED_SYSTEMS = ("kv-memory", "event-memory")


def compared_systems(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What `evaluate` with no system runs: the reference systems, and the VLM systems
    too when APMBENCH_VLM_MODEL or APMBENCH_VLM_API_BASE names a model. Without one
    they stay out: no weights can be fetched, and the demo must finish on two CPU cores.
    The specialised memories join only with a local model (APMBENCH_VLM_MODEL and the
    transformers backend): they read its KV cache and vision features, which no
    OpenAI-compatible endpoint exposes."""
    env = os.environ if environ is None else environ
    local = env.get("APMBENCH_VLM_MODEL") and env.get("APMBENCH_VLM_BACKEND", "") in (
        "",
        "transformers",
    )
    if local:
        return REFERENCE_SYSTEMS + VLM_SYSTEMS + SPECIALIZED_SYSTEMS
    wanted = env.get("APMBENCH_VLM_API_BASE")
    return REFERENCE_SYSTEMS + VLM_SYSTEMS if wanted else REFERENCE_SYSTEMS


class UnknownSystem(ApmbenchError):
    """No registered system has this name and it is not an importable "module:attr"."""


def load_system(spec: str) -> MemorySystem:
    """Build the system registered as `spec`, or the class at "module:attr"."""
    target = REGISTRY.get(spec, spec)
    if ":" not in target:
        known = ", ".join(sorted(REGISTRY))
        raise UnknownSystem(
            f"unknown system {spec!r}: use one of {known}, or give 'package.module:ClassName'"
        )
    module_name, attr = target.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownSystem(f"cannot import {module_name!r} for system {spec!r}: {e}") from e
    factory = getattr(module, attr, None)
    if factory is None:
        raise UnknownSystem(f"{module_name!r} has no attribute {attr!r}")
    system = factory()
    if not isinstance(system, MemorySystem):
        raise UnknownSystem(f"{target} did not build a MemorySystem (got {type(system).__name__})")
    return system
