"""The synthetic ProactEgoMem benchmark: rendered devices turned on and off (state tracking).

Each clip shows a few devices (a tap, a lamp, a stove...), each a coloured
square on a textured wall: dim when off, bright with a halo when on. Every
device is switched on and off at whole seconds drawn from the seed, so the
ground-truth moments are exact at the 1 fps of the streaming protocol: an
assistant reading the pixels can start a tracker on the frame the device turns
on and stop it on the frame it turns off.

Nothing on the wire tells when: frames carry only their time and size, the step
queries are the same text at every second but for the context the system's own
calls built, and the switching times are drawn independently per clip, so a
system that acts on timing alone matches nothing (tests/unit/test_proactegomem.py).
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from apmbench.harness.errors import ConfigError, DatasetError
from apmbench.harness.paths import cache_root
from apmbench.harness.suites.proactegomem.dataset import BENCHMARK, FORMAT_VERSION, OPTION_IDS

GENERATOR = "proactegomem-synth"
GENERATOR_VERSION = 1
WIDTH, HEIGHT, SIDE = 320, 240, 56

# Device name -> its colour when on; off, it shows at a third of that.
PALETTE: dict[str, tuple[int, int, int]] = {
    "tap": (40, 120, 240),
    "lamp": (250, 220, 40),
    "stove": (240, 60, 40),
    "fan": (50, 210, 90),
    "kettle": (200, 70, 220),
}
SLOTS = ((30, 40), (130, 40), (230, 40), (80, 150), (180, 150))


@dataclass(frozen=True)
class Preset:
    name: str
    clips: int
    duration_s: int
    devices: int
    spans: tuple[int, int]
    """Switch-ons per device, at least and at most."""
    description: str


PRESETS = {
    p.name: p
    for p in (
        Preset("tiny", 2, 40, 2, (1, 2), "tests: seconds end to end"),
        Preset("small", 4, 90, 3, (2, 3), "the demo: a few minutes of CPU"),
    )
}


def _spans(rng: random.Random, count: int, duration: int) -> list[tuple[int, int]]:
    """`count` disjoint on-intervals [start, end) at whole seconds, 1-6 s long, >= 2 s apart."""
    for _ in range(1000):
        out: list[tuple[int, int]] = []
        for _ in range(count):
            length = rng.randint(1, 6)
            start = rng.randint(1, duration - length - 1)
            out.append((start, start + length))
        out.sort()
        if all(b[0] - a[1] >= 2 for a, b in itertools.pairwise(out)):
            return out
    raise ConfigError(f"cannot place {count} switch-ons in {duration} s")


def _questions(
    rng: random.Random, cid: str, spans: Mapping[str, list[tuple[int, int]]]
) -> list[dict[str, Any]]:
    names = sorted(spans)
    others = [n for n in PALETTE if n not in names]
    out: list[dict[str, Any]] = []

    def choices(correct: str, wrong: Sequence[str]) -> tuple[dict[str, str], str]:
        options = [correct, *wrong[:3]]
        rng.shuffle(options)
        return dict(zip(OPTION_IDS, options, strict=True)), OPTION_IDS[options.index(correct)]

    for name in names:
        count = len(spans[name])
        wrong = [str(c) for c in range(0, 6) if c != count]
        rng.shuffle(wrong)
        ch, ans = choices(str(count), wrong)
        q = f"How many times was the {name} turned on?"
        out.append(_q(f"{cid}-count-{name}", q, ch, ans, "count"))
    longest = {n: max(e - s for s, e in v) for n, v in spans.items()}
    best = max(longest.values())
    if sum(1 for v in longest.values() if v == best) == 1:
        winner = max(longest, key=lambda n: longest[n])
        pool = [n for n in names if n != winner] + others
        ch, ans = choices(winner, pool)
        q = "Which device stayed on the longest in one stretch?"
        out.append(_q(f"{cid}-longest", q, ch, ans, "longest"))
    firsts = {n: v[0][0] for n, v in spans.items()}
    if len(set(firsts.values())) == len(firsts):
        first = min(firsts, key=lambda n: firsts[n])
        pool = [n for n in names if n != first] + others
        ch, ans = choices(first, pool)
        out.append(_q(f"{cid}-first", "Which device was turned on first?", ch, ans, "order"))
    return out


def _q(qid: str, question: str, choices: dict[str, str], answer: str, cat: str) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question": question,
        "choices": choices,
        "answer": answer,
        "category": cat,
    }


def build(preset: Preset, seed: int, out: Path) -> dict[str, int]:
    rng = random.Random(f"{GENERATOR}/{preset.name}/{seed}")
    clips: list[dict[str, Any]] = []
    events = questions = 0
    for c in range(preset.clips):
        cid = f"pem-{preset.name}-{c:02d}"
        names = rng.sample(sorted(PALETTE), preset.devices)
        slots = rng.sample(range(len(SLOTS)), preset.devices)
        spans = {n: _spans(rng, rng.randint(*preset.spans), preset.duration_s) for n in names}
        evs = [
            {"event_id": f"{cid}-{n}-{k}", "object": n, "start_s": float(s), "end_s": float(e)}
            for n in names
            for k, (s, e) in enumerate(spans[n])
        ]
        evs.sort(key=lambda e: (e["start_s"], e["object"]))
        qs = _questions(rng, cid, spans)
        render = {
            "generator": GENERATOR,
            "version": GENERATOR_VERSION,
            "texture_seed": rng.randrange(1 << 30),
            "devices": [
                {"name": n, "slot": list(SLOTS[s]), "on": [list(x) for x in spans[n]]}
                for n, s in zip(names, slots, strict=True)
            ],
        }
        clips.append(
            {
                "clip_id": cid,
                "task": "ST",
                "duration_s": preset.duration_s,
                "render": render,
                "events": evs,
                "questions": qs,
            }
        )
        events += len(evs)
        questions += len(qs)
    doc = {
        "benchmark": BENCHMARK,
        "format_version": FORMAT_VERSION,
        "name": f"proactegomem-synthetic-{preset.name}",
        "synthetic": True,
        "generator": {"name": GENERATOR, "version": GENERATOR_VERSION, "seed": seed},
        "clips": clips,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "dataset.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return {"clips": len(clips), "events": events, "questions": questions}


def synthetic_dataset(preset: str, seed: int, root: Path | None = None) -> Path:
    """The directory of the synthetic dataset, generated on first use into the cache."""
    if preset not in PRESETS:
        raise ConfigError(
            f"unknown ProactEgoMem preset {preset!r}: use one of {', '.join(PRESETS)}"
        )
    root = root or cache_root()
    target = root / "synthetic" / f"proactegomem-{preset}-seed{seed}-v{GENERATOR_VERSION}"
    if (target / "dataset.json").exists():
        return target
    (root / "synthetic").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".proactegomem-{preset}-", dir=root / "synthetic"))
    try:
        build(PRESETS[preset], seed, work)
        try:
            work.rename(target)
        except OSError:
            if not (target / "dataset.json").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _is_on(device: Mapping[str, Any], t_s: float) -> bool:
    return any(s <= t_s < e for s, e in device["on"])


def render_frames(spec: Mapping[str, Any], times: Sequence[int]) -> Iterator[npt.NDArray[np.uint8]]:
    """The frame at each time (ms on the clip clock) of the clip `spec` describes."""
    if spec.get("generator") != GENERATOR or spec.get("version") != GENERATOR_VERSION:
        raise DatasetError(
            f"render spec needs {GENERATOR} version {GENERATOR_VERSION}: regenerate the dataset"
        )
    rng = np.random.default_rng(int(spec["texture_seed"]))
    wall = rng.integers(70, 110, size=(HEIGHT, WIDTH, 1), dtype=np.uint8).repeat(3, axis=2)
    for t in times:
        frame = wall.copy()
        # A little sensor noise per frame: the frames differ even when nothing changes.
        noise = np.random.default_rng(t + int(spec["texture_seed"])).integers(0, 6, frame.shape)
        frame = (frame + noise.astype(np.uint8)).astype(np.uint8)
        for device in spec["devices"]:
            x, y = device["slot"]
            color = np.array(PALETTE[device["name"]], dtype=np.uint16)
            if _is_on(device, t / 1000.0):
                frame[y - 6 : y + SIDE + 6, x - 6 : x + SIDE + 6] = (240, 240, 230)
                frame[y : y + SIDE, x : x + SIDE] = color.astype(np.uint8)
            else:
                frame[y : y + SIDE, x : x + SIDE] = (color // 3).astype(np.uint8)
        yield frame
