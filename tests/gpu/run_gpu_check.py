"""GPU check of the VLM systems: `make gpu-check` (or `.venv/bin/python tests/gpu/run_gpu_check.py`).

On a machine with an NVIDIA GPU and a CUDA build of torch, in a few minutes:

1. builds tiny random Qwen2.5-VL and Qwen3-VL checkpoints (as the CPU tests do);
2. compares the numpy video patches with transformers' own Qwen video
   processors when torchvision is installed (it is not needed otherwise);
3. runs vlm-simplestream, vlm-video-memory and vlm-text-memory on the
   synthetic tiny preset as sandboxed server processes given the GPU with
   `--gpus all` (the device nodes and the driver's libraries in the box;
   docs/guarantees.md, "A method on a GPU") (bfloat16, the
   default frame size and budget), through the real harness, and kv-memory
   and event-memory the same way in restart mode;
4. prints, per run: the device and dtype the model loaded on, time to first
   token (harness clock), the largest prompt in frames and visual tokens,
   peak GPU memory of a generation (torch.cuda.max_memory_allocated, from the
   server's log) and the exported state per session;
5. for the restart runs, the cost of honesty on a GPU: the starts
   (`logs/starts.json`: how many starts, how many were waited for, the memory
   of one serving tree; a `--gpus` run starts no spare, so every restart waits
   for a whole model load), and the model's
   weights checksummed before the run and after it: every start and spare
   maps the same files read-only (a sandboxed start gets the directory as a
   read-only bind), and none may have changed them.

Every comparison is asserted: the processor's grid must equal ours and its
patches must match ours within resize rounding (the resize check
tests/unit/test_vlm_video.py leaves to this script, so a missing torchvision
fails it too); every run must exit 0, load on the GPU, log its generations
and, on the GPU, a peak of GPU memory. A step that raises is a failure, and
the check goes on with the steps that do not need it. Each failure is printed
as a `FAILED ...` line at the end; exit status 0 only if there is none.
Without a CUDA device it exits 1 at once, saying so. Results also go to
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
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

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
# Pillow's and torchvision's antialiased bicubic on uint8 frames agree within a grey
# level or so; another filter (bilinear, no antialias) on the random frames compared
# here differs by tens of levels.
GREY_LEVELS = 2
T = TypeVar("T")


def gpu_or_exit() -> str:
    try:
        import torch
    except ImportError as e:
        sys.exit(f"no CUDA device: torch cannot be imported ({e}); run `make install` first.")
    if not torch.cuda.is_available():
        sys.exit(
            f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none. "
            "Run this on a machine with an NVIDIA driver and a CUDA build of torch (`make "
            "install` there installs PyPI's, which is one), or pass --cpu-dry-run."
        )
    return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"


@dataclass
class Check:
    """What failed so far, one line each; `step` runs a part and records it if it raises."""

    failures: list[str] = field(default_factory=list)

    def step(self, name: str, run: Callable[..., T], *args: Any) -> T | None:
        try:
            return run(*args)
        except Exception as e:
            traceback.print_exc()
            self.failures.append(f"{name}: raised {type(e).__name__}: {e}")
            return None


def patch_tolerance(std: Sequence[float]) -> float:
    """Largest |patch difference| from resize rounding: GREY_LEVELS, normalised by `std`."""
    return GREY_LEVELS / 255 / min(std) + 1e-5


def processor_failures(
    family: str,
    ours: tuple[int, ...],
    theirs: tuple[int, ...],
    max_difference: float,
    std: Sequence[float],
) -> list[str]:
    """Where our patches of one clip differ from transformers' video processor's."""
    failures = []
    if tuple(ours) != tuple(theirs):
        failures.append(
            f"{family} processor: grid ours {tuple(ours)} != transformers {tuple(theirs)}"
        )
    tolerance = patch_tolerance(std)
    if not max_difference <= tolerance:  # NaN fails too
        failures.append(
            f"{family} processor: max |patch difference| {max_difference:.3e} > {tolerance:.3e} "
            f"({GREY_LEVELS} grey levels): the resize is not transformers'"
        )
    return failures


def run_failures(row: dict[str, Any], device: str) -> list[str]:
    """Where one evaluate run (a row of gpu-check.json) is not what the check claims."""
    name = f"{row['system']} ({row['family']})"
    if row.get("exit") != 0:
        return [f"{name}: evaluate exited {row.get('exit')}"]
    failures = []
    if not str(row.get("device", "?")).startswith(device):
        failures.append(f"{name}: model loaded on {row.get('device')!r}, not {device}")
    if not row.get("max_video_tokens", 0) > 0:
        failures.append(f"{name}: no generation logged visual tokens")
    if device == "cuda" and not row.get("peak_gpu_gib", 0) > 0:
        failures.append(f"{name}: no peak GPU memory in the server's log")
    if row.get("weights_unchanged") is False:
        failures.append(f"{name}: the model's weights changed during the run")
    if row["system"] in RESTART:
        starts = row.get("starts") or {}
        if not starts.get("served", 0) > 1:
            failures.append(f"{name}: a restart run with no restart in logs/starts.json")
        elif device == "cuda" and starts.get("gpu_cap") is None:
            failures.append(f"{name}: the spares' GPU memory was never measured (gpu_cap)")
    return failures


def compare_processor(models: dict[str, Path], check: Check, required: bool) -> None:
    """Our numpy patches against transformers' video processor (needs torchvision).

    Prints what it measured; each difference, and a missing torchvision where the
    comparison is `required`, goes to `check`'s failures."""
    try:
        import torchvision  # noqa: F401
        from transformers import AutoVideoProcessor
    except ImportError as e:
        line = f"processor comparison did not run ({e}): install the torchvision matching torch"
        print(line, flush=True)
        if required:
            check.failures.append(line)
        return
    import numpy as np

    from apmbench.adapters.vlm.checkpoint import inspect_checkpoint
    from apmbench.adapters.vlm.video import prepare_clip

    frames = 8
    video = np.random.default_rng(0).integers(0, 255, (frames, 336, 448, 3), dtype=np.uint8)
    bound = 448 * 336

    def compare(family: str, path: Path) -> None:
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
        their_patches = np.asarray(theirs["pixel_values_videos"])
        if their_patches.shape != ours.patches.shape:
            check.failures.append(
                f"{family} processor: patches shaped ours {ours.patches.shape} != "
                f"transformers {their_patches.shape}"
            )
            return
        diff = float(np.abs(their_patches - ours.patches).max())
        print(f"{family}: grid ours {ours.grid_thw}, transformers {grid}; "
              f"max |patch difference| {diff:.3e} (tolerance "
              f"{patch_tolerance(checkpoint.geometry.std):.3e})", flush=True)  # fmt: skip
        check.failures += processor_failures(
            family, ours.grid_thw, grid, diff, checkpoint.geometry.std
        )

    for family, path in models.items():
        check.step(f"{family} processor comparison", compare, family, path)


def peak_gib(log: str) -> float:
    peaks = [int(m) for m in re.findall(r"peak_gpu_bytes=(\d+)", log)]
    return max(peaks, default=0) / 2**30


def weights_digest(model: Path) -> str:
    """SHA-256 over every file of a model directory, names and bytes, in name order."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in model.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(model)).encode() + b"\0")
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


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
    before = weights_digest(model)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(dataset),
         "--system", system, "--out", str(out), "--persistence",
         "restart" if system in RESTART else "reset",
         # Confined with the GPU passed into the box (the host's driver libraries read-only):
         # what a sandboxed GPU run needs of the driver is checked here, where a GPU is.
         *([] if cpu else ["--gpus", "all"])],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    log_path = out / "logs" / "system.log"
    log = log_path.read_text() if log_path.exists() else ""
    row: dict[str, Any] = {"system": system, "family": family, "exit": done.returncode,
                           "wall_s": round(time.monotonic() - started, 1)}  # fmt: skip
    loaded = re.search(r"vlm: loaded \S+ from \S+ on (\S+) \((\S+)\)", log)
    row["device"] = f"{loaded.group(1)} {loaded.group(2)}" if loaded else "?"
    row["weights_unchanged"] = weights_digest(model) == before
    starts = out / "logs" / "starts.json"
    if system in RESTART and starts.exists():
        row["starts"] = json.loads(starts.read_text())
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
        max_frames=max((int(g.get("frames", 0)) for g in generations), default=0),
        max_video_tokens=max((int(g.get("video_tokens", g.get("cached_tokens", 0)))
                              for g in generations), default=0),
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
    device = "cpu" if args.cpu_dry_run else "cuda"
    check = Check()
    models: dict[str, Path] = {}
    for f in ("qwen2_5_vl", "qwen3_vl"):
        built = check.step(f"build tiny {f}", build_tiny_qwen_vl, args.out / "models" / f, f)
        if built is not None:
            models[f] = built
    compare_processor(models, check, required=not args.cpu_dry_run)
    dataset = check.step("synthetic tiny dataset", synthetic_dataset, "tiny", 0, args.out / "cache")
    rows = []
    for system, family in RUNS if dataset is not None else []:
        if family not in models:
            check.failures.append(f"{system} ({family}): not run, its model was not built")
            continue
        out = args.out / f"{system}-{family}"
        row = check.step(
            f"{system} ({family})",
            run_one,
            system,
            family,
            models[family],
            dataset,
            out,
            args.cpu_dry_run,
        )
        if row is None:
            continue
        rows.append(row)
        check.failures += run_failures(row, device)
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
        if "starts" in row:
            st = row["starts"]
            print(
                f"{'':<17} restarts: {st.get('starts')} starts, {st.get('served')} served, "
                f"{st.get('waited')} waited for ({st.get('waited_s')} s); one serving tree "
                f"{st.get('per_start_bytes')} B, GPU room for {st.get('gpu_cap')} spares, "
                f"budget from {st.get('budget_from')}; weights unchanged: "
                f"{row.get('weights_unchanged')}",
                flush=True,
            )
    results = {"rows": rows, "failures": check.failures}
    (args.out / "gpu-check.json").write_text(json.dumps(results, indent=2) + "\n")
    for line in check.failures:
        print("FAILED", line, flush=True)
    what = "CPU dry run" if args.cpu_dry_run else "GPU check"
    verdict = f"FAILED ({len(check.failures)} failures)" if check.failures else "passed"
    print(what, verdict, "- results in", args.out / "gpu-check.json", flush=True)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
