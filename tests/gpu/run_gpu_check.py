"""GPU check of the VLM systems: `make gpu-check` (or `.venv/bin/python tests/gpu/run_gpu_check.py`).

On a machine with an NVIDIA GPU and a CUDA build of torch, in a few minutes:

1. builds tiny random Qwen2.5-VL and Qwen3-VL checkpoints (as the CPU tests do);
2. compares the numpy video patches with transformers' own Qwen video
   processors when torchvision is installed (it is not needed otherwise);
3. runs vlm-simplestream, vlm-video-memory and vlm-text-memory on the
   synthetic tiny preset as server processes on the GPU (bfloat16, the
   default frame size and budget), through the real harness, and kv-memory
   and event-memory the same way in restart mode;
4. prints, per run: the device and dtype the model loaded on, time to first
   token (harness clock), the largest prompt in frames and visual tokens,
   peak GPU memory of a generation (torch.cuda.max_memory_allocated, from the
   server's log) and the exported state per session.

Exit status 0 only if every run finished on a GPU. Results also go to
OUT/gpu-check.json (default runs/gpu-check).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

RUNS = [
    ("vlm-simplestream", "qwen3_vl"),
    ("vlm-video-memory", "qwen2_5_vl"),
    ("vlm-text-memory", "qwen3_vl"),
    ("vlm-simplestream", "qwen2_5_vl"),
    ("vlm-video-memory", "qwen3_vl"),
    ("vlm-text-memory", "qwen2_5_vl"),
    ("kv-memory", "qwen2_5_vl"),
    ("event-memory", "qwen3_vl"),
    ("kv-memory", "qwen3_vl"),
    ("event-memory", "qwen2_5_vl"),
]
# The specialised memories run in restart mode: their export is what they claim to keep.
RESTART = ("kv-memory", "event-memory")


def gpu_or_exit() -> str:
    import torch

    if not torch.cuda.is_available():
        sys.exit(
            f"no GPU: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none. Run this "
            "on a machine with an NVIDIA driver and a CUDA build of torch (`make install` there "
            "installs PyPI's, which is one)."
        )
    return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"


def compare_processor(models: dict[str, Path]) -> list[str]:
    """Our numpy patches against transformers' video processor, where torchvision exists."""
    try:
        import torchvision  # noqa: F401
        from transformers import AutoVideoProcessor
    except ImportError as e:
        return [f"processor comparison skipped ({e}); pip install the torchvision matching torch"]
    import numpy as np

    from apmbench.adapters.vlm.checkpoint import inspect_checkpoint
    from apmbench.adapters.vlm.video import prepare_clip

    out = []
    frames = 8
    video = np.random.default_rng(0).integers(0, 255, (frames, 336, 448, 3), dtype=np.uint8)
    bound = 448 * 336
    for family, path in models.items():
        try:
            checkpoint = inspect_checkpoint(path)
            processor = AutoVideoProcessor.from_pretrained(str(path), local_files_only=True)
            # Qwen2.5-VL bounds each frame's pixels, Qwen3-VL the whole clip's: the same size.
            longest = bound * frames if family.startswith("qwen3") else bound
            theirs = processor(
                videos=[video], do_sample_frames=False, return_tensors="np",
                size={"shortest_edge": 3136, "longest_edge": longest}, cap_pixels_per_frame=False,
            )  # fmt: skip
            ours = prepare_clip(
                list(video), [float(i) for i in range(frames)], checkpoint.geometry, bound
            )
            grid = tuple(int(x) for x in theirs["video_grid_thw"][0])
            diff = float(np.abs(np.asarray(theirs["pixel_values_videos"]) - ours.patches).max())
            out.append(f"{family}: grid ours {ours.grid_thw}, transformers {grid}; "
                       f"max |patch difference| {diff:.3e} (resize rounding only when > 0)")  # fmt: skip
        except Exception as e:  # a diagnostic: report it, never stop the check
            out.append(f"{family}: processor comparison failed: {type(e).__name__}: {e}")
    return out


def peak_gib(log: str) -> float:
    peaks = [int(m) for m in re.findall(r"peak_gpu_bytes=(\d+)", log)]
    return max(peaks, default=0) / 2**30


def run_one(
    system: str, family: str, model: Path, dataset: Path, out: Path, cpu: bool
) -> dict[str, Any]:
    env = {
        **os.environ,
        "APMBENCH_VLM_MODEL": str(model),
        "APMBENCH_VLM_DEVICE": "cpu" if cpu else "cuda",
        "APMBENCH_VLM_MAX_NEW_TOKENS": "16",
        "APMBENCH_VLM_SUMMARY_MAX_NEW_TOKENS": "64",
    }
    if cpu:  # the dry run: small frames keep a CPU run short
        env["APMBENCH_VLM_MAX_PIXELS"] = str(112 * 84)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(dataset),
         "--system", system, "--out", str(out), "--persistence",
         "restart" if system in RESTART else "reset"],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    log_path = out / "logs" / "system.log"
    log = log_path.read_text() if log_path.exists() else ""
    row: dict[str, Any] = {"system": system, "family": family, "exit": done.returncode,
                           "wall_s": round(time.monotonic() - started, 1)}  # fmt: skip
    loaded = re.search(r"vlm: loaded \S+ from \S+ on (\S+) \((\S+)\)", log)
    row["device"] = f"{loaded.group(1)} {loaded.group(2)}" if loaded else "?"
    if done.returncode != 0:
        row["error"] = (done.stderr or log)[-1500:]
        return row
    report = json.loads((out / "report.json").read_text())
    ttft = report["latency"]["time_to_first_token_s"]
    sessions = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
    generations = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in log.splitlines()
                   if line.startswith("vlm: generated")]  # fmt: skip
    row.update(
        ttft_mean_s=ttft["mean"], ttft_p90_s=ttft["p90"],
        # kv-memory's answers run from its cache: they log cached tokens, not frames.
        max_frames=max(int(g.get("frames", 0)) for g in generations),
        max_video_tokens=max(int(g.get("video_tokens", g.get("cached_tokens", 0)))
                             for g in generations),
        peak_gpu_gib=round(peak_gib(log), 3),
        state_bytes=[s["state_bytes"] for s in sessions],
        storage_per_hour_bytes=report["storage"]["storage_per_hour_bytes"],
    )  # fmt: skip
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/gpu-check"))
    parser.add_argument(
        "--cpu-dry-run",
        action="store_true",
        help="run the same steps on the CPU with small frames (checks the script, not the GPU)",
    )
    args = parser.parse_args()
    if args.cpu_dry_run:
        print("CPU dry run: no GPU is used; peak GPU memory reads 0", flush=True)
    else:
        print("GPU:", gpu_or_exit(), flush=True)
    from helpers.tiny_qwen_vl import build_tiny_qwen_vl

    from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

    args.out.mkdir(parents=True, exist_ok=True)
    models = {f: build_tiny_qwen_vl(args.out / "models" / f, f) for f in ("qwen2_5_vl", "qwen3_vl")}
    for line in compare_processor(models):
        print(line, flush=True)
    dataset = synthetic_dataset("tiny", 0, args.out / "cache")
    rows = []
    for system, family in RUNS:
        out = args.out / f"{system}-{family}"
        row = run_one(system, family, models[family], dataset, out, args.cpu_dry_run)
        rows.append(row)
        if "error" in row:
            print(f"{system} ({family}): FAILED (exit {row['exit']})\n{row['error']}", flush=True)
            continue
        print(
            f"{system:<17} {family:<10} {row['device']:<20} TTFT mean {row['ttft_mean_s']:.3f} s "
            f"p90 {row['ttft_p90_s']:.3f} s  max prompt {row['max_frames']} frames / "
            f"{row['max_video_tokens']} visual tokens  peak GPU {row['peak_gpu_gib']:.3f} GiB  "
            f"state per session {row['state_bytes']} B  ({row['wall_s']} s)",
            flush=True,
        )
    (args.out / "gpu-check.json").write_text(json.dumps(rows, indent=2) + "\n")
    device = "cpu" if args.cpu_dry_run else "cuda"
    ok = all("error" not in r and r["device"].startswith(device) for r in rows)
    what = "CPU dry run" if args.cpu_dry_run else "GPU check"
    print(what, "passed" if ok else "FAILED", "- results in", args.out / "gpu-check.json")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
