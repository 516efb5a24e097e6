"""The wire rules the client holds every reply to, as the pure tests it applies."""

from __future__ import annotations

import hashlib

import pytest

from apmbench.harness.check.rules import RULES
from apmbench.harness.protocol import wire_rules
from apmbench.v1 import memory_system_pb2 as pb


@pytest.mark.parametrize("rule", sorted(wire_rules.TITLES))
def test_rules_are_the_checks_rules(rule: str) -> None:
    assert wire_rules.TITLES[rule] == RULES[rule].title
    assert rule in wire_rules.HINTS


def test_every_memory_system_call_has_its_status_codes() -> None:
    calls = {m.name for m in pb.DESCRIPTOR.services_by_name["MemorySystem"].methods}
    assert set(wire_rules.ALLOWED_STATUS) == calls


@pytest.mark.parametrize(
    ("rpc", "code", "allowed"),
    [
        ("Query", "FAILED_PRECONDITION", True),
        ("Query", "INVALID_ARGUMENT", True),
        ("Query", "UNAVAILABLE", True),
        ("Query", "NOT_FOUND", False),
        ("Query", "UNKNOWN", False),
        ("Query", "DATA_LOSS", False),
        ("ImportState", "DATA_LOSS", True),
        ("ImportState", "UNIMPLEMENTED", True),
        ("ExportState", "UNIMPLEMENTED", False),
        ("Describe", "FAILED_PRECONDITION", False),
        ("Check", "NOT_FOUND", True),  # the health service is not MemorySystem's
    ],
)
def test_status_codes(rpc: str, code: str, allowed: bool) -> None:
    assert (wire_rules.status_problem(rpc, code) is None) is allowed


def test_chunk_limit_is_what_was_asked_or_one_mib() -> None:
    assert wire_rules.chunk_problem(1, 1 << 20, 0) is None
    assert "over the 1048576 allowed by max_chunk_bytes=0 (1 MiB)" in str(
        wire_rules.chunk_problem(2, (1 << 20) + 1, 0)
    )
    assert wire_rules.chunk_problem(1, 4096, 4096) is None
    assert wire_rules.chunk_problem(1, 4097, 4096) is not None
    # Asking for more than 2 MiB still gets chunks of at most 2 MiB (R7, protocol 1.1).
    assert wire_rules.chunk_problem(1, 2 << 20, 8 << 20) is None
    assert "(capped at 2 MiB)" in str(wire_rules.chunk_problem(1, (2 << 20) + 1, 8 << 20))


def test_manifest() -> None:
    good = hashlib.sha256(b"abc").hexdigest()
    assert wire_rules.sha256_problem(good) is None
    for bad in (good.upper(), good[:63], good + "0", "z" * 64, ""):
        assert wire_rules.sha256_problem(bad) is not None
    assert wire_rules.received_problem(3, good, 3, good) is None
    assert wire_rules.received_problem(4, good, 3, good) is not None
    assert wire_rules.received_problem(3, "0" * 64, 3, good) is not None


def test_shape() -> None:
    assert wire_rules.shape_problem(0, "manifest") is None
    assert wire_rules.shape_problem(1, "data") is None
    assert wire_rules.shape_problem(0, "data") is not None
    assert wire_rules.shape_problem(2, "manifest") is not None
    assert wire_rules.shape_problem(3, None) is not None


def test_the_error_names_call_rule_and_fix() -> None:
    error = wire_rules.violation("ExportState", "R7", "too big")
    assert str(error) == (
        "ExportState: the server broke rule R7 (Chunking) of memory_system.proto: too big; "
        "fix: " + wire_rules.HINTS["R7"]
    )
