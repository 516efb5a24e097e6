"""kv-memory and event-memory on a tiny random Qwen2.5-VL, as server processes.

What is checked is what the protocol promises about them: both pass
`check` and run the tiny synthetic benchmark in restart mode; kv-memory's
export is exactly the KV footprint the model config predicts for the frames
it kept (plus the safetensors header, accounted for separately), and an import
in a new process answers exactly as before the restart; event-memory's export
is byte-identical for the same memory and survives a new process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
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
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime

pytest.importorskip("transformers", reason="the models extra is not installed")
pytestmark = pytest.mark.integration

# 448x336 frames shrink to 112x84: 4x3 visual tokens of 28 px per temporal patch (2 frames).
FAST = {
    "APMBENCH_VLM_MAX_PIXELS": str(112 * 84),
    "APMBENCH_VLM_MAX_NEW_TOKENS": "8",
    "APMBENCH_VLM_CAPTION_MAX_NEW_TOKENS": "6",
    "APMBENCH_VLM_TOP_K": "3",
}
TOKENS_PER_BLOCK = 12 + 2  # 12 video tokens between <|vision_start|> and <|vision_end|>
SYSTEM_PROMPT = "You are a first-person streaming video assistant."
HOUR = 3_600_000
DAY2 = 86_400_000 + 9 * HOUR


@pytest.fixture(scope="module")
def model(tiny_vlm: Callable[[str], Path]) -> Path:
    return tiny_vlm("qwen2_5_vl")


@pytest.fixture
def env(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {**FAST, "APMBENCH_VLM_MODEL": str(model)}.items():
        monkeypatch.setenv(key, value)


def frames(start_ms: int, count: int, seed: int = 0) -> list[Frame]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        pixels = rng.integers(0, 255, (336, 448, 3), dtype=np.uint8)
        data = simplejpeg.encode_jpeg(pixels, 85)
        out.append(Frame(start_ms + 1000 * i, FrameEncoding.JPEG, 448, 336, data))
    return out


def export(client: Any) -> ExportedState:
    sink = io.BytesIO()
    result = client.export_state(sink)
    return ExportedState(sink.getvalue(), result.manifest.content_type, 1)


def restore(client: Any, state: ExportedState) -> None:
    client.import_state(manifest_for(state.data, state.content_type, 1), io.BytesIO(state.data))


def kv_footprint(config: dict[str, Any], tokens: int, bytes_per_element: int) -> int:
    """layers x kv_heads x head_dim x tokens x 2 (K and V) x bytes, from config.json."""
    text = config["text_config"]
    head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    layers, kv_heads = text["num_hidden_layers"], text["num_key_value_heads"]
    return int(layers * kv_heads * head_dim * tokens * 2 * bytes_per_element)


def payload_bytes(data: bytes) -> tuple[int, int]:
    """(header bytes, tensor bytes) of a safetensors file; they add up to its size."""
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    tensors = sum(
        v["data_offsets"][1] - v["data_offsets"][0]
        for k, v in header.items()
        if k != "__metadata__"
    )
    return 8 + length, tensors


def ask(client: Any, time_ms: int) -> str:
    q = Query("q", time_ms, QueryKind.MULTIPLE_CHOICE, SYSTEM_PROMPT, "Where is the MUG now?")
    answer = client.query(q)
    text: str = answer.text
    return text


@pytest.mark.slow
@pytest.mark.usefixtures("env")
def test_kv_memory_exports_the_kv_footprint_and_answers_the_same_after_a_restart(
    tmp_path: Path, model: Path
) -> None:
    runtime = ProcessRuntime("kv-memory", tmp_path / "system.log", Deadlines())
    try:
        client = runtime.start()
        info = client.describe()
        assert info.details["vlm.frames_per_block"] == "2" and info.details["vlm.top_k"] == "3"
        client.reset("T1")
        client.start_session(SessionStart("T1", "S001", "DAY1", 8 * HOUR))
        client.push(frames(8 * HOUR, 9))  # 4 full blocks and one of a single frame
        client.end_session(SessionEnd("S001", 8 * HOUR + 9_000))
        state = export(client)
        assert export(client).data == state.data
        client.start_session(SessionStart("T1", "S002", "DAY2", DAY2))
        client.push(frames(DAY2, 4, seed=2))
        before = ask(client, DAY2 + 4_000)
        client = runtime.restart()  # a new process: only the export crosses
        restore(client, state)
        assert export(client).data == state.data
        client.start_session(SessionStart("T1", "S002", "DAY2", DAY2))
        client.push(frames(DAY2, 4, seed=2))
        after = ask(client, DAY2 + 4_000)
    finally:
        runtime.stop()
    config = json.loads((model / "config.json").read_text())
    expected = kv_footprint(config, 5 * TOKENS_PER_BLOCK, 4)  # float32 on the CPU
    header, tensors = payload_bytes(state.data)
    assert tensors == expected == 2 * 2 * 16 * 70 * 2 * 4
    assert len(state.data) == header + tensors
    assert header < 8 + 400 * 5 + 1000  # the block index and offsets: small beside the KV
    assert before and after == before


def test_the_footprint_check_catches_a_cache_that_is_not_all_kept(tmp_path: Path) -> None:
    """The cheater: a memory that keeps only the keys (or a lower precision) is half the size."""
    import torch
    from safetensors.torch import save

    config = {"text_config": {"hidden_size": 64, "num_attention_heads": 4,
                              "num_hidden_layers": 2, "num_key_value_heads": 2}}  # fmt: skip
    keys_only = save({"block.00000.keys": torch.zeros(2, 2, 14, 16)})
    assert payload_bytes(keys_only)[1] != kv_footprint(config, 14, 4)
    halved = save({"k": torch.zeros(2, 2, 14, 16, dtype=torch.float16),
                   "v": torch.zeros(2, 2, 14, 16, dtype=torch.float16)})  # fmt: skip
    assert payload_bytes(halved)[1] != kv_footprint(config, 14, 4)


@pytest.mark.slow
@pytest.mark.usefixtures("env")
def test_event_memory_exports_its_hierarchy_deterministically_across_a_restart(
    tmp_path: Path,
) -> None:
    runtime = ProcessRuntime("event-memory", tmp_path / "system.log", Deadlines())
    try:
        client = runtime.start()
        client.reset("T1")
        client.start_session(SessionStart("T1", "S001", "DAY1", 8 * HOUR))
        client.push(frames(8 * HOUR, 6) + frames(8 * HOUR + 6_000, 6, seed=7))
        client.end_session(SessionEnd("S001", 8 * HOUR + 12_000))
        state = export(client)
        assert export(client).data == state.data  # the same memory, the same bytes
        client = runtime.restart()
        restore(client, state)
        assert export(client).data == state.data
        client.start_session(SessionStart("T1", "S002", "DAY2", DAY2))
        client.push(frames(DAY2, 3, seed=2))
        assert ask(client, DAY2 + 3_000)
    finally:
        runtime.stop()
    line = state.data.split(b"\n", 2)[1]
    index = json.loads(line)
    [session] = index["session_nodes"]
    assert session["session_id"] == "S001" and index["days"] == [
        {"day_id": "DAY1", "sessions": [0]}
    ]
    events = index["events"]
    assert events and sum(e["frames"] for e in events) == 12
    assert all(1 <= len(e["key_frames"]) <= 3 for e in events)
    kept = sum(size for e in events for *_, size in e["key_frames"])
    vectors = (len(events) + 1 + 1) * index["dim"] * 4
    # Compact: the index, the key frames and one vector per node, nothing else.
    assert len(state.data) == len(b"APMBENCH-EVENT-MEMORY 1\n") + len(line) + 1 + kept + vectors


def evaluate(tiny: Path, out: Path, system: str, model: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **FAST, "APMBENCH_VLM_MODEL": str(model)}
    return subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
         "--system", system, "--out", str(out), "--persistence", "restart"],
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip


# The run is on `tiny_one_fork` (tests/conftest.py), not all of `tiny`: what it shows of a
# model-loading memory (each session's export crosses a restart, a fork imports one in a
# fresh process) needs 7 starts, not the 21 that cost 77 s of CPU in every model load.
@pytest.mark.slow
@pytest.mark.timeout(1800)  # check, then a run with a model load per session and fork
@pytest.mark.parametrize("system", ["kv-memory", "event-memory"])
def test_each_passes_check_and_runs_the_tiny_benchmark_in_restart_mode(
    tmp_path: Path, tiny_one_fork: Path, model: Path, system: str
) -> None:
    env = {**os.environ, **FAST, "APMBENCH_VLM_MODEL": str(model)}
    # Every protocol check but query-format: a random model's answers are noise, so whether
    # they parse says nothing about the memory (a real checkpoint passes it).
    checked = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "check", "--system", system,
         "--out", str(tmp_path / "check"), "--skip", "query-format"],
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    out = tmp_path / "run"
    result = evaluate(tiny_one_fork, out, system, model)
    log = out / "logs" / "system.log"
    assert result.returncode == 0, result.stderr + (log.read_text() if log.exists() else "")
    manifest = json.loads((out / "manifest.json").read_text())
    details = manifest["system"]["details"]
    assert details["vlm.top_k"] == "3" and details["vlm.model_type"] == "qwen2_5_vl"
    report = json.loads((out / "report.json").read_text())
    sessions = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
    sizes = [s["state_bytes"] for s in sessions]
    assert len(sizes) == 4 and all(s > 0 for s in sizes)
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert {r["pass"] for r in rows} == {"main", "fork"}  # the forks answered too
    print(
        f"\n{system}: TTFT mean {report['latency']['time_to_first_token_s']['mean']:.3f} s, "
        f"state bytes per session {sizes}, "
        f"Storage/hr {report['storage']['storage_per_hour_bytes']:.0f} B"
    )
