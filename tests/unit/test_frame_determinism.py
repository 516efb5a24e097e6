"""A synthetic video, and the frames the harness decodes from any video, are the same
bytes on every machine.

Both used to depend on the CPU: x264 picked its threads from the CPU count and its
assembly from the CPU's features, and swscale's default conversions take SIMD paths
that are not bit-exact. A dataset generated on first use then differed between CI
machines, and so did frame-archive's exported bytes that a recorded report holds (6
bytes on one CI machine, for the same commit). Each case runs in a fresh interpreter
under two stand-ins for another machine: FFmpeg and libjpeg-turbo held to their C code
(`av_force_cpu_flags(0)`, JSIMD_FORCENONE) and the process held to one CPU. x264's own
SIMD cannot be switched off from outside; the writer runs it without (asm=0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROGRAM = r"""
import ctypes, glob, hashlib, json, os, sys
from pathlib import Path

import av

if os.environ.get("FORCE_C") == "1":
    libs = glob.glob(os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs", "libavutil*"))
    assert libs, "no libavutil beside PyAV: cannot hold FFmpeg to its C code"
    ctypes.CDLL(libs[0]).av_force_cpu_flags(0)
if os.environ.get("ONE_CPU") == "1":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

from apmbench.adapters.sdk.types import FrameEncoding
from apmbench.harness.media.frames import FrameSettings, decode_session
from apmbench.harness.media.timeline import Session
from apmbench.harness.suites.apmbench.synth.live import trajectory_world
from apmbench.harness.synthetic.video import write_video

out = Path(sys.argv[1])
plan = trajectory_world("tiny", 0, 0)[0][0]
write_video(out, plan, 2)
session = Session(plan.session_id, plan.day_id, plan.start_ms, plan.end_ms, out)
digest = hashlib.sha256()
count = 0
# At the video's own size (a conversion alone) and resized, as RGB and as JPEG.
for encoding, side in [(FrameEncoding.RGB24, 0), (FrameEncoding.RGB24, 320), (FrameEncoding.JPEG, 0)]:
    for frame in decode_session(session, FrameSettings(encoding=encoding, max_side=side)):
        digest.update(frame.data)
        count += 1
print(json.dumps({
    "video": hashlib.sha256(out.read_bytes()).hexdigest(),
    "frames": digest.hexdigest(),
    "count": count,
}))
"""


def _run(tmp_path: Path, name: str, **env: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(tmp_path / f"{name}.mp4")],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return answer


@pytest.fixture(scope="module")
def as_here(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    return _run(tmp_path_factory.mktemp("here"), "here")


def test_the_frames_are_decoded_and_resized(as_here: dict[str, object]) -> None:
    count = as_here["count"]
    assert isinstance(count, int) and count > 60


@pytest.mark.parametrize(
    "machine",
    [{"FORCE_C": "1", "JSIMD_FORCENONE": "1"}, {"ONE_CPU": "1"}],
    ids=["c-code", "one-cpu"],
)
def test_same_bytes_on_another_machine(
    machine: dict[str, str], as_here: dict[str, object], tmp_path: Path
) -> None:
    other = _run(tmp_path, "other", **machine)
    assert other["video"] == as_here["video"], "the synthetic video's bytes depend on the CPU"
    assert other["frames"] == as_here["frames"], "the decoded frames depend on the CPU"
