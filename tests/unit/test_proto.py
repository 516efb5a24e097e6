"""The generated code matches the .proto; the .proto states every rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto" / "apmbench" / "v1" / "memory_system.proto"


def test_generated_code_is_in_sync_with_the_proto() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "proto" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_and_status_code_is_documented() -> None:
    text = PROTO.read_text()
    for rule in ("R1 Trajectory clock", "R2 Time order", "R3 Lifecycle", "R4 Ingest",
                 "R5 Query is read-only", "R6 ExportState", "R7 Chunking", "R8 Capabilities",
                 "R9 Versioning"):  # fmt: skip
        assert rule in text
    for code in ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNIMPLEMENTED", "DATA_LOSS",
                 "RESOURCE_EXHAUSTED", "INTERNAL"):  # fmt: skip
        assert code in text
    assert "package apmbench.v1;" in text
