"""R7's promise that no message exceeds gRPC's 4 MiB default: settings whose RGB24 frame would
not fit stop `check` and `evaluate` before anything runs (exit 2), naming the limit and the
largest side that fits; the same system at a side that fits is checked as usual."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.systems import RawFrames

from apmbench.adapters.sdk import FrameEncoding, RunningServer, SystemInfo, start_server
from apmbench.harness.cli import main
from apmbench.harness.protocol import wire_rules

pytestmark = pytest.mark.integration


class Wide(RawFrames):
    """RGB24 frames at a side of `side` pixels."""

    side = 2048

    def describe(self) -> SystemInfo:
        info = super().describe()
        caps = replace(info.capabilities, preferred_max_side=self.side)
        return replace(info, capabilities=caps)


class Widest(Wide):
    side = wire_rules.MAX_RGB24_SIDE


class JpegAndRgb(RawFrames):
    def describe(self) -> SystemInfo:
        info = super().describe()
        caps = replace(
            info.capabilities,
            frame_encodings=(FrameEncoding.JPEG, FrameEncoding.RGB24),
            preferred_max_side=0,
        )
        return replace(info, capabilities=caps)

    def ingest_frame(self, frame: object) -> None:
        pass


@pytest.fixture
def served(sock_dir: Path) -> Iterator[list[RunningServer]]:
    servers: list[RunningServer] = []
    yield servers
    for s in servers:
        s.stop(grace=None)


def test_check_refuses_rgb24_frames_over_4_mib_before_any_check(
    served: list[RunningServer], sock_dir: Path
) -> None:
    served.append(start_server(Wide(), f"unix:{sock_dir}/wide"))
    result = CliRunner().invoke(main, ["check", "--endpoint", f"unix:{sock_dir}/wide"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "4,194,304-byte (4 MiB) message limit" in said, said
    assert "the largest side that fits is 1182" in said and "2048" in said


def test_the_largest_side_that_fits_is_checked(served: list[RunningServer], sock_dir: Path) -> None:
    # The other half: at 1182 pixels the square RGB24 frames go through gRPC's default limit.
    served.append(start_server(Widest(), f"unix:{sock_dir}/widest"))
    result = CliRunner().invoke(
        main,
        ["check", "--endpoint", f"unix:{sock_dir}/widest", "--only", "frames-encodings"],
    )
    assert result.exit_code == 0, result.output


def test_evaluate_refuses_an_rgb24_max_side_over_4_mib(
    served: list[RunningServer], sock_dir: Path, mini: Path, tmp_path: Path
) -> None:
    served.append(start_server(JpegAndRgb(), f"unix:{sock_dir}/both"))
    args = ["evaluate", "--dataset", str(mini), "--endpoint", f"unix:{sock_dir}/both"]
    args += ["--persistence", "reset", "--encoding", "rgb24", "--max-side", "2048"]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "over gRPC's default 4,194,304-byte (4 MiB) message limit" in said, said
    assert "lower --max-side to 1182" in said
    assert not (tmp_path / "run" / "instances.jsonl").exists()
