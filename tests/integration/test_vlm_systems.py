"""The VLM systems on tiny random Qwen-VL models, loaded from disk like real weights.

Each model is built offline in the test (tests/helpers/tiny_qwen_vl.py),
saved with save_pretrained and opened by the backend's own loading code. Its
answers are noise, so what is checked is the plumbing a real model relies
on: both Qwen families load and generate with video, the answer streams
(the first piece long before the last token, and a closed stream stops
generation), each system runs the tiny synthetic benchmark end to end as a
server process, exports exactly what it keeps, and its export survives a new
process byte for byte.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simplejpeg

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
)
from apmbench.adapters.sdk.wire import manifest_for
from apmbench.adapters.vlm.loader import open_backend
from apmbench.adapters.vlm.prompt import Clip, Prompt, Text
from apmbench.adapters.vlm.settings import VlmSettings
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime
from apmbench.harness.suites.apmbench.prompts import SYSTEM_PROMPT

pytest.importorskip("transformers", reason="the models extra is not installed")
pytestmark = pytest.mark.integration

# Small frames and answers keep a CPU run of the tiny benchmark to seconds.
FAST = {
    "APMBENCH_VLM_MAX_PIXELS": str(112 * 84),
    "APMBENCH_VLM_MAX_NEW_TOKENS": "8",
    "APMBENCH_VLM_SUMMARY_MAX_NEW_TOKENS": "24",
}


@pytest.fixture(scope="module")
def models(tiny_vlm: Callable[[str], Path]) -> dict[str, Path]:
    return {f: tiny_vlm(f) for f in ("qwen2_5_vl", "qwen3_vl")}


def frames(start_ms: int, count: int, seed: int = 0) -> list[Frame]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        pixels = rng.integers(0, 255, (336, 448, 3), dtype=np.uint8)
        out.append(
            Frame(
                start_ms + 1000 * i,
                FrameEncoding.JPEG,
                448,
                336,
                simplejpeg.encode_jpeg(pixels, 85),
            )
        )
    return out


def generated(log: str) -> list[dict[str, str]]:
    """The backend's `vlm: generated k=v ...` lines."""
    return [
        dict(re.findall(r"(\w+)=(\S+)", line))
        for line in log.splitlines()
        if line.startswith("vlm: generated")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_both_families_load_from_disk_stream_and_stop_when_closed(
    models: dict[str, Path], family: str, capfd: pytest.CaptureFixture[str]
) -> None:
    model = open_backend(VlmSettings(model=str(models[family]), max_pixels=112 * 84))
    identity = dict(model.identity())
    assert identity["vlm.model_type"] == family and identity["vlm.dtype"] == "float32"
    assert identity["vlm.device"] == "cpu" and len(identity["vlm.model_fingerprint"]) == 64
    prompt = Prompt(
        SYSTEM_PROMPT,
        (Text("An earlier session:"), Clip(tuple(frames(0, 3)), 0), Text("Now:"),
         Clip(tuple(frames(90_000, 6, seed=1)), 90_000), Text('Return {"answer":"A"}')),
    )  # fmt: skip
    full = list(model.stream(prompt, 200))
    assert len(full) > 10  # streamed piece by piece, not as one block
    assert list(model.stream(prompt, 200)) == full  # greedy decoding repeats exactly
    stream: Iterator[str] = model.stream(prompt, 200)
    assert next(stream) == full[0]
    stream.close()  # as a cancelled query closes it
    runs = generated(capfd.readouterr().err)
    assert int(runs[0]["new_tokens"]) == 200 and runs[0]["stopped_by_consumer"] == "no"
    # Events, not counts a scheduler decides: the generation loop saw the consumer go
    # and ended before its limit, which also proves the first piece came out while
    # generation was still running (it streamed).
    assert runs[-1]["stopped_by_consumer"] == "yes" and int(runs[-1]["new_tokens"]) < 200
    assert int(runs[0]["video_tokens"]) > 0


def evaluate(
    tiny: Path, out: Path, system: str, model: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **FAST, "APMBENCH_VLM_MODEL": str(model)}
    return subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
         "--system", system, "--out", str(out), *extra],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def records(out: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / name).read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize(
    "system,family",
    [
        ("vlm-simplestream", "qwen3_vl"),
        ("vlm-video-memory", "qwen2_5_vl"),
        ("vlm-text-memory", "qwen3_vl"),
    ],
)
@pytest.mark.slow
def test_each_system_runs_the_tiny_benchmark_as_a_process(
    tiny: Path, tmp_path: Path, models: dict[str, Path], system: str, family: str
) -> None:
    out = tmp_path / system
    result = evaluate(tiny, out, system, models[family], "--persistence", "reset")
    assert result.returncode == 0, result.stderr + (out / "logs" / "system.log").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    details = manifest["system"]["details"]
    assert details["vlm.model_type"] == family and details["vlm.max_frames"] == "1024"
    instances = records(out, "instances.jsonl")
    assert instances and all(r["raw_output"] for r in instances)
    assert all(0 < r["ttft_s"] <= r["total_s"] for r in instances)
    assert any(r["chunks"] > 1 for r in instances)  # streamed over gRPC too
    sessions = records(out, "sessions.jsonl")
    sizes = [s["state_bytes"] for s in sessions]
    log = (out / "logs" / "system.log").read_text()
    runs = generated(log)
    if system == "vlm-simplestream":
        assert sizes == [0] * len(sessions)
        assert all(int(r["frames"]) <= 4 for r in runs)
    elif system == "vlm-video-memory":
        # Every frame kept: the export grows by about a session of JPEGs each time.
        assert sizes == sorted(set(sizes))
        assert sizes[0] > 60 * 1000
        assert max(int(r["frames"]) for r in runs) > 120  # earlier sessions replayed
    else:
        assert all(0 < s < 20_000 for s in sizes) and sizes == sorted(sizes)
        # Every session end (main pass, forks, evidence availability) wrote a summary too.
        assert len(runs) >= len(instances) + len(sessions)
    report = json.loads((out / "report.json").read_text())
    print(
        f"\n{system} ({family}): TTFT mean {report['latency']['time_to_first_token_s']['mean']:.3f} s, "
        f"state bytes per session {sizes}, Storage/hr {report['storage']['storage_per_hour_bytes']:.0f} B"
    )


@pytest.mark.slow
@pytest.mark.parametrize("system", ["vlm-video-memory", "vlm-text-memory"])
def test_the_export_is_the_memory_a_new_process_continues_from(
    tmp_path: Path, models: dict[str, Path], system: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {**FAST, "APMBENCH_VLM_MODEL": str(models["qwen3_vl"])}.items():
        monkeypatch.setenv(key, value)
    runtime = ProcessRuntime(system, tmp_path / "system.log", Deadlines())
    day2 = 86_400_000 + 9 * 3_600_000
    try:
        client = runtime.start()
        info = client.describe()
        client.reset("T1")
        client.start_session(SessionStart("T1", "S001", "DAY1", 8 * 3_600_000))
        client.push(frames(8 * 3_600_000, 12))
        client.end_session(SessionEnd("S001", 8 * 3_600_000 + 12_000))
        first = export(client)
        assert export(client).data == first.data  # R6: byte-identical for the same memory
        client = runtime.restart()  # a new process: only the export crosses
        assert client.describe() == info
        client.import_state(manifest_for(first.data, first.content_type, 1), _reader(first.data))
        assert export(client).data == first.data
        client.start_session(SessionStart("T1", "S002", "DAY2", day2))
        client.push(frames(day2, 5, seed=2))
        q = Query(
            "q", day2 + 4_500, QueryKind.MULTIPLE_CHOICE, SYSTEM_PROMPT, "Where is the MUG now?"
        )
        answer = client.query(q)
        assert answer.text and answer.ttft_s is not None
        assert export(client).data.startswith(first.data[:20])  # querying changed nothing
    finally:
        runtime.stop()
    log = (tmp_path / "system.log").read_text()
    if system == "vlm-text-memory":
        document = json.loads(first.data)
        [summary] = document["summaries"]
        assert summary["session_id"] == "S001" and summary["memory"]
        assert (summary["start"], summary["end"]) == ("08:00:00", "08:00:12")
        # The query after the restart saw the summary and the new session's frames only.
        assert int(generated(log)[-1]["frames"]) == 5
    else:
        assert len(first.data) > sum(len(f.data) for f in frames(8 * 3_600_000, 12))
        assert int(generated(log)[-1]["frames"]) == 12 + 5


def export(client: Any) -> ExportedState:
    sink = io.BytesIO()
    result = client.export_state(sink)
    return ExportedState(sink.getvalue(), result.manifest.content_type, 1)


def _reader(data: bytes) -> io.BytesIO:
    return io.BytesIO(data)


def test_a_missing_model_stops_the_run_naming_the_variable(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "APMBENCH_VLM_MODEL": str(tmp_path / "nowhere")}
    result = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
         "--system", "vlm-text-memory", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    log = (out / "logs" / "system.log").read_text()
    assert f"APMBENCH_VLM_MODEL={tmp_path / 'nowhere'}: no such directory" in log


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_each_clip_expands_in_the_chat_template_as_the_qwen_processor_does(
    models: dict[str, Path], family: str
) -> None:
    from apmbench.adapters.vlm.qwen import QwenVL

    model = open_backend(VlmSettings(model=str(models[family]), max_pixels=112 * 84))
    assert isinstance(model, QwenVL)
    prompt = Prompt("SYS", (Text("Earlier:"), Clip(tuple(frames(0, 3)), 0), Text("Now: Q?")))
    prepared = model._prepare(prompt)
    text = re.sub(
        r"(<\|video_pad\|>)+",
        lambda m: f"<{len(m.group()) // 13} pads>",
        model.render(prompt, prepared),
    )
    # 112x84 frames fit 28-px tokens (Qwen2.5-VL: 8x6 patches of 14 px); for 32-px tokens
    # (Qwen3-VL) smart_resize rounds to 128x96, over the bound, so it floors to 96x64 (6x4
    # patches of 16 px). 3 frames make 2 temporal patches.
    if family == "qwen2_5_vl":
        assert prepared[0].grid_thw == (2, 6, 8)
        video, tokens = "<|vision_start|><24 pads><|vision_end|>", 24
    else:
        assert prepared[0].grid_thw == (2, 4, 6)
        per = "<|vision_start|><6 pads><|vision_end|>"
        video, tokens = f"<0.5 seconds>{per}<2.0 seconds>{per}", 12
    assert text == (
        f"<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nEarlier:\n{video}\nNow: Q?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    inputs = model.encode(prompt)
    assert int((inputs["mm_token_type_ids"] == 2).sum()) == tokens
    assert ("second_per_grid_ts" in inputs) == (family == "qwen2_5_vl")
