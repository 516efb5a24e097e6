"""The server as a service: health, reflection, Describe's version and capabilities."""

from __future__ import annotations

import re

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.describe_strings import describe_problems
from apmbench.adapters.sdk.types import PROTOCOL_VERSION, FrameEncoding
from apmbench.harness.check import probes
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.model import check
from apmbench.harness.check.verdicts import CheckFailed, CheckWarning, Passed
from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol import wire_rules
from apmbench.harness.protocol.client import (
    HEALTH_SERVICE,
    MEMORY_SYSTEM_SERVICE,
    protocol_methods,
)

SDK_SERVE = (
    "serve the standard grpc.health.v1.Health service and set the empty service name to SERVING "
    "when ready (Python: apmbench.adapters.sdk.serve() adds it; Node: grpc-health-check; Go: "
    "google.golang.org/grpc/health; see docs/PROTOCOL.md)"
)
_VERSION = re.compile(r"^(\d+)\.(\d+)$")


@check(
    "health",
    "HEALTH",
    "grpc.health.v1.Health answers SERVING for the empty service name",
    needs_describe=False,
)
def health(ctx: CheckContext) -> Passed:
    try:
        status = ctx.client.health_status("")
    except errors.Unimplemented as e:
        raise CheckFailed(f"no grpc.health.v1.Health service ({e.message})", SDK_SERVE) from e
    if status != "SERVING":
        raise CheckFailed(
            f'health for service "" is {status}, not SERVING, after the server started',
            "set SERVING for the empty service name once the system is loaded and ready",
        )
    # Only the empty name is the protocol's; other names may answer anything (NOT_FOUND).
    return Passed('SERVING for "" (the only name the harness asks)')


REFLECTION_HINT = (
    "serve the standard server reflection service (grpc.reflection.v1, and v1alpha for older "
    "tools) listing apmbench.v1.MemorySystem and grpc.health.v1.Health: every gRPC stack ships "
    "it (Python: grpcio-reflection, Node: @grpc/reflection, Go: google.golang.org/grpc/"
    "reflection, C++: grpc++_reflection, Java: grpc-services' ProtoReflectionService)"
)


@check(
    "reflection",
    "REFLECTION",
    "reflection (recommended) lists the services and the protocol's exact methods",
    needs_describe=False,
)
def reflection(ctx: CheckContext) -> Passed:
    versions = ctx.client.reflection_versions()
    if not versions:
        # evaluate never needs reflection; it helps people inspect a server (grpcurl).
        raise CheckWarning("no server reflection service (neither v1 nor v1alpha)", REFLECTION_HINT)
    version = versions[0]
    services = ctx.client.list_services(version)
    missing = [s for s in (MEMORY_SYSTEM_SERVICE, HEALTH_SERVICE) if s not in services]
    if missing:
        raise CheckFailed(
            f"reflection lists {', '.join(services) or 'nothing'}; missing: {', '.join(missing)}",
            "register every served service with reflection (the SDK's serve() does)",
        )
    theirs = ctx.client.reflected_methods(MEMORY_SYSTEM_SERVICE, version)
    ours = protocol_methods()
    wrong = [
        f"{name}: served as {theirs.get(name)}, protocol has {shape}"
        for name, shape in ours.items()
        if theirs.get(name) != shape
    ] + [f"{name}: not in the protocol" for name in theirs if name not in ours]
    if wrong:
        raise CheckFailed(
            "the served MemorySystem differs from this harness's protocol: " + "; ".join(wrong),
            "generate the server code from this harness's memory_system.proto (make proto)",
        )
    return Passed(
        f"reflection {' and '.join(versions)}; {len(services)} services; MemorySystem's "
        f"{len(ours)} methods match",
        {"reflection": versions},
    )


@check(
    "describe-version",
    "R9",
    "Describe names a protocol version this harness speaks",
    needs_describe=False,
)
def describe_version(ctx: CheckContext) -> Passed:
    info = ctx.client.describe_unchecked()
    version = info.protocol_version
    m = _VERSION.match(version)
    if m is None:
        raise CheckFailed(
            f"protocol_version {version or '(empty)'!r} is not of the form '1.<minor>'",
            f"report the SDK's PROTOCOL_VERSION ({PROTOCOL_VERSION})",
        )
    ours = PROTOCOL_VERSION.split(".", 1)[0]
    if m.group(1) != ours:
        raise CheckFailed(
            f"the server speaks protocol {version}; this harness speaks {PROTOCOL_VERSION} and "
            "refuses another major version, so it will not evaluate this server",
            f"rebuild the server with an apmbench SDK of protocol {ours}.x",
        )
    ctx.described = info
    return Passed(f"{info.name!r} {info.version!r} speaks protocol {version}")


@check(
    "describe-strings",
    "R15",
    "name, version and details are identifiers and plain text",
    since="1.3",
)
def describe_strings(ctx: CheckContext) -> Passed:
    broken = describe_problems(ctx.info)
    if broken:
        raise CheckFailed(
            "; ".join(broken) + ": the harness refuses this server (these strings go into reports)",
            "name and version like 'my-memory' and '1.2.0'; details keys likewise; details "
            "values on one line, at most 256 characters",
        )
    return Passed(f"name, version and {len(ctx.info.details)} details hold R15")


@check("describe-capabilities", "R8", "capabilities are well formed and Describe does not change")
def describe_capabilities(ctx: CheckContext) -> Passed:
    info = ctx.info
    caps = info.capabilities
    problems = []
    if not info.name.strip():
        problems.append("name is empty")
    if not info.version.strip():
        problems.append("version is empty")
    if not caps.frame_encodings:
        problems.append("frame_encodings declares no known encoding (JPEG or RGB24)")
    if len(set(caps.frame_encodings)) != len(caps.frame_encodings):
        problems.append("frame_encodings repeats an encoding")
    if caps.preferred_max_side != 0 and not 16 <= caps.preferred_max_side <= 8192:
        problems.append(
            f"preferred_max_side {caps.preferred_max_side} is neither 0 (as decoded) nor "
            "16-8192 pixels"
        )
    side = caps.preferred_max_side or probes.DEFAULT_SIDE
    too_big = wire_rules.frame_fit_problem(side, FrameEncoding.RGB24 in caps.frame_encodings)
    if too_big is not None:
        # Not the server's fault alone, and no check could run: stop as for bad settings (R7).
        raise ConfigError(
            f"{info.name} declares RGB24 with preferred_max_side {side}: {too_big}; declare "
            f"a preferred_max_side of at most {wire_rules.MAX_RGB24_SIDE} (or JPEG only)"
        )
    again = ctx.client.describe_unchecked()
    if again != info:
        problems.append("a second Describe answered differently (it must not change while serving)")
    if problems:
        if not caps.frame_encodings:
            ctx.described = None  # no frame could be sent: later checks do not apply
        raise CheckFailed("; ".join(problems), "fix describe() in your MemorySystem")
    encodings = ", ".join(e.value for e in caps.frame_encodings)
    return Passed(
        f"encodings {encodings}; max side {caps.preferred_max_side or 'as decoded'}; "
        f"import {'yes' if caps.supports_import else 'no'}; "
        f"streaming ingest {'yes' if caps.streaming_ingest else 'no'}"
    )


CHECKS = (health, reflection, describe_version, describe_strings, describe_capabilities)
