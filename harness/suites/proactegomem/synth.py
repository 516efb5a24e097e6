"""The synthetic ProactEgoMem benchmark: rendered clips of the paper's three tasks.

- ST (state tracking): a few devices (a tap, a lamp, a stove...), each a
  coloured square on a textured wall, dim when off, bright with a halo when on.
  An event is one switch-on: the moment it lights up to the moment it goes dark.
- LT (location tracking): a few surfaces (table, shelf, counter...) and small
  objects (keys, wallet, phone...) placed on them, picked up (out of view while
  carried) and placed again elsewhere. An event is one placement: from the
  moment the object is put down ("You just placed the keys") to the moment it is
  picked up, with the surface as its location.
- IC (information capture): panels (a receipt, a timetable...) shown one at a
  time for a few seconds, a coloured header over a white card with a three-digit
  number. An event is one showing: from the moment the panel appears ("I can
  see the receipt") to the moment it goes away; the number is only in pixels.

Every change happens at whole seconds drawn from the seed, so the ground-truth
moments are exact at the 1 fps of the streaming protocol. Nothing on the wire
tells when or what: frames carry only their time and size, the step queries are
the same text at every second but for the context the system's own calls
built, and the times, places and numbers are drawn independently per clip, so a
system that acts on timing alone matches nothing but by chance
(tests/helpers/proact_cheaters.py).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict, cast

import numpy as np
import numpy.typing as npt

from apmbench.adapters.systems.proact_world import (
    DIGIT_CELL,
    DIGIT_PITCH,
    DIGIT_X,
    DIGIT_Y,
    FONT,
    HEADER_H,
    OBJECTS,
    PALETTE,
    PANELS,
    SURFACES,
)
from apmbench.harness.errors import ConfigError, DatasetError
from apmbench.harness.json_types import JSON
from apmbench.harness.paths import cached_dataset
from apmbench.harness.suites.proactegomem.dataset import BENCHMARK, FORMAT_VERSION, OPTION_IDS

GENERATOR = "proactegomem-synth"
GENERATOR_VERSION = 4
"""4: counts drawn uniformly over the four options (1-4), `small` shows four devices and
objects, and which-device questions are asked only of clips that show four (their options
are then the clip's own devices), and every LT object is asked where it was first placed
(asked only of objects placed twice or more, the question's absence gave a count away): an
options-only policy had been right on 68.8 % of count questions, every answer being 2 or 3."""
WIDTH, HEIGHT, SIDE = 320, 240, 56

# The colours, the panel header and the digit font come from the table the proact-rules
# reader uses too (apmbench.adapters.systems.proact_world); the layout is the generator's.
SLOTS = ((30, 40), (130, 40), (230, 40), (80, 150), (180, 150))
SURFACE_SLOTS = ((8, 20), (112, 20), (216, 20), (56, 140), (164, 140))
SURFACE_W, SURFACE_H, OBJECT_SIDE = 96, 70, 22
PANEL_X, PANEL_Y, PANEL_W, CARD_H = 85, 70, 150, 70
CARD, INK = (235, 235, 235), (20, 20, 20)


@dataclass(frozen=True)
class Preset:
    name: str
    tasks: tuple[str, ...]
    """One clip per entry, of that task."""
    duration_s: int
    devices: int
    """Devices (ST), objects (LT) per clip; IC clips show one panel more than this."""
    spans: tuple[int, int]
    """Switch-ons per device / placements per object, at least and at most."""
    description: str


COUNT_OPTIONS = ("1", "2", "3", "4")
COUNTS = (1, 4)
"""Switch-ons per device and placements per object, drawn uniformly over exactly the
options of a count question: the options say nothing of the answer."""

PRESETS = {
    p.name: p
    for p in (
        Preset("tiny", ("ST", "LT", "IC"), 30, 2, COUNTS, "tests: seconds end to end"),
        Preset(
            "small",
            ("ST", "ST", "LT", "LT", "IC", "IC"),
            60,
            4,
            COUNTS,
            "the demo: a few minutes of CPU",
        ),
    )
}


class QuestionDoc(TypedDict):
    """A memory question as dataset.json holds it."""

    question_id: str
    question: str
    choices: dict[str, str]
    answer: str
    category: str


class EventDoc(TypedDict):
    """A ground-truth event as dataset.json holds it (ST names a state, LT a location)."""

    event_id: str
    object: str
    start_s: float
    end_s: float
    state: NotRequired[str]
    location: NotRequired[str]


class DeviceSpec(TypedDict):
    name: str
    slot: list[int]
    on: list[list[int]]
    """[start, end) seconds of each switch-on."""


class SurfaceSpec(TypedDict):
    name: str
    slot: list[int]


class ObjectSpec(TypedDict):
    name: str
    index: int
    placed: list[tuple[int, int, str]]
    """[start, end) seconds of each placement, and the surface."""


class PanelSpec(TypedDict):
    name: str
    shown: list[int]
    number: str


class Scene(TypedDict, total=False):
    """What a clip shows: devices (ST), surfaces and objects (LT) or panels (IC)."""

    devices: list[DeviceSpec]
    surfaces: list[SurfaceSpec]
    objects: list[ObjectSpec]
    panels: list[PanelSpec]


class RenderSpec(Scene):
    """A clip's `render` in dataset.json: the generator, its version and the scene."""

    generator: str
    version: int
    texture_seed: int


class ClipDoc(TypedDict):
    """A clip as dataset.json holds it."""

    clip_id: str
    task: str
    duration_s: int
    render: RenderSpec
    events: list[EventDoc]
    questions: list[QuestionDoc]


class Made(TypedDict):
    events: list[EventDoc]
    questions: list[QuestionDoc]
    render: Scene


def _spans(
    rng: random.Random, count: int, duration: int, longest: int = 6
) -> list[tuple[int, int]]:
    """`count` disjoint intervals [start, end) at whole seconds, 1-`longest` s long, >= 2 s
    apart."""
    for _ in range(1000):
        out: list[tuple[int, int]] = []
        for _ in range(count):
            length = rng.randint(1, longest)
            start = rng.randint(1, duration - length - 1)
            out.append((start, start + length))
        out.sort()
        if all(b[0] - a[1] >= 2 for a, b in itertools.pairwise(out)):
            return out
    raise ConfigError(f"cannot place {count} intervals in {duration} s")


def _choices(rng: random.Random, correct: str, wrong: Sequence[str]) -> tuple[dict[str, str], str]:
    options = [correct, *[w for w in wrong if w != correct][:3]]
    rng.shuffle(options)
    return dict(zip(OPTION_IDS, options, strict=True)), OPTION_IDS[options.index(correct)]


def _count_choices(count: int) -> tuple[dict[str, str], str]:
    """The options 1-4 in order; the answer is `count`, itself drawn uniformly over them."""
    return dict(zip(OPTION_IDS, COUNT_OPTIONS, strict=True)), OPTION_IDS[count - 1]


def _questions(
    rng: random.Random, cid: str, spans: Mapping[str, list[tuple[int, int]]]
) -> list[QuestionDoc]:
    names = sorted(spans)
    out: list[QuestionDoc] = []
    for name in names:
        ch, ans = _count_choices(len(spans[name]))
        q = f"How many times was the {name} turned on?"
        out.append(_q(f"{cid}-count-{name}", q, ch, ans, "count"))
    if len(names) != len(OPTION_IDS):
        # Which-device questions need the clip's own devices as their options: with a
        # device it does not show among them, the count questions would name the others.
        return out
    others: list[str] = []
    longest = {n: max(e - s for s, e in v) for n, v in spans.items()}
    best = max(longest.values())
    if sum(1 for v in longest.values() if v == best) == 1:
        winner = max(longest, key=lambda n: longest[n])
        pool = [n for n in names if n != winner] + others
        ch, ans = _choices(rng, winner, pool)
        q = "Which device stayed on the longest in one stretch?"
        out.append(_q(f"{cid}-longest", q, ch, ans, "longest"))
    firsts = {n: v[0][0] for n, v in spans.items()}
    if len(set(firsts.values())) == len(firsts):
        first = min(firsts, key=lambda n: firsts[n])
        pool = [n for n in names if n != first] + others
        ch, ans = _choices(rng, first, pool)
        out.append(_q(f"{cid}-first", "Which device was turned on first?", ch, ans, "order"))
    return out


def _q(qid: str, question: str, choices: dict[str, str], answer: str, cat: str) -> QuestionDoc:
    return {
        "question_id": qid,
        "question": question,
        "choices": choices,
        "answer": answer,
        "category": cat,
    }


def _st_clip(rng: random.Random, preset: Preset, cid: str) -> Made:
    names = rng.sample(sorted(PALETTE), preset.devices)
    slots = rng.sample(range(len(SLOTS)), preset.devices)
    spans = {n: _spans(rng, rng.randint(*preset.spans), preset.duration_s) for n in names}
    evs: list[EventDoc] = [
        {
            "event_id": f"{cid}-{n}-{k}",
            "object": n,
            "start_s": float(s),
            "end_s": float(e),
            "state": "on",
        }
        for n in names
        for k, (s, e) in enumerate(spans[n])
    ]
    render: Scene = {
        "devices": [
            {"name": n, "slot": list(SLOTS[s]), "on": [list(x) for x in spans[n]]}
            for n, s in zip(names, slots, strict=True)
        ]
    }
    return {"events": evs, "questions": _questions(rng, cid, spans), "render": render}


def _lt_clip(rng: random.Random, preset: Preset, cid: str) -> Made:
    names = rng.sample(sorted(OBJECTS), preset.devices)
    places = rng.sample(sorted(SURFACES), len(SURFACES))
    objects: list[ObjectSpec] = []
    evs: list[EventDoc] = []
    qs: list[QuestionDoc] = []
    for index, name in enumerate(names):
        spans = _spans(rng, rng.randint(*preset.spans), preset.duration_s)
        where: list[str] = []
        for _ in spans:
            # Each placement moves the object somewhere other than where it just was.
            where.append(rng.choice([p for p in places if not where or p != where[-1]]))
        placed = [(s, e, w) for (s, e), w in zip(spans, where, strict=True)]
        objects.append({"name": name, "index": index, "placed": placed})
        evs += [
            {
                "event_id": f"{cid}-{name}-{k}",
                "object": name,
                "start_s": float(s),
                "end_s": float(e),
                "location": w,
            }
            for k, (s, e, w) in enumerate(placed)
        ]
        be = "were" if name.endswith("s") else "was"
        ch, ans = _count_choices(len(placed))
        q = f"How many times {be} the {name} placed?"
        qs.append(_q(f"{cid}-count-{name}", q, ch, ans, "count"))
        ch, ans = _choices(rng, where[-1], rng.sample(places, len(places)))
        q = f"Where {be} the {name} placed last?"
        qs.append(_q(f"{cid}-last-{name}", q, ch, ans, "destination"))
        # Asked of every object, placed once or more: asked only after two placements, its
        # absence from a public part told that the count was 1.
        ch, ans = _choices(rng, where[0], rng.sample(places, len(places)))
        q = f"Where {be} the {name} first placed?"
        qs.append(_q(f"{cid}-first-{name}", q, ch, ans, "original"))
    render: Scene = {
        "surfaces": [{"name": p, "slot": list(SURFACE_SLOTS[k])} for k, p in enumerate(places)],
        "objects": objects,
    }
    return {"events": evs, "questions": qs, "render": render}


def _ic_clip(rng: random.Random, preset: Preset, cid: str) -> Made:
    count = preset.devices + 1
    names = rng.sample(sorted(PANELS), count)
    # Panels never overlap: the paper's IC keeps a single recording at a time. They are
    # brief (1-3 s), as transient information is: 40 uniform frames can miss one.
    spans = _spans(rng, count, preset.duration_s, longest=3)
    panels: list[PanelSpec] = []
    evs: list[EventDoc] = []
    qs: list[QuestionDoc] = []
    for name, (s, e) in zip(names, spans, strict=True):
        number = str(rng.randint(100, 999))
        panels.append({"name": name, "shown": [s, e], "number": number})
        evs.append(
            {"event_id": f"{cid}-{name}", "object": name, "start_s": float(s), "end_s": float(e)}
        )
        wrong = [str(rng.randint(100, 999)) for _ in range(6)]
        ch, ans = _choices(rng, number, list(dict.fromkeys(wrong)))
        qs.append(_q(f"{cid}-read-{name}", f"What number did the {name} show?", ch, ans, "read"))
    return {"events": evs, "questions": qs, "render": {"panels": panels}}


CLIP_MAKERS = {"ST": _st_clip, "LT": _lt_clip, "IC": _ic_clip}


def build(preset: Preset, seed: int, out: Path) -> dict[str, int]:
    rng = random.Random(f"{GENERATOR}/{preset.name}/{seed}")
    clips: list[ClipDoc] = []
    events = questions = 0
    for c, task in enumerate(preset.tasks):
        cid = f"pem-{preset.name}-{c:02d}"
        made = CLIP_MAKERS[task](rng, preset, cid)
        evs = sorted(made["events"], key=lambda e: (e["start_s"], e["object"]))
        render: RenderSpec = {
            "generator": GENERATOR,
            "version": GENERATOR_VERSION,
            "texture_seed": rng.randrange(1 << 30),
            **made["render"],
        }
        clips.append(
            {
                "clip_id": cid,
                "task": task,
                "duration_s": preset.duration_s,
                "render": render,
                "events": evs,
                "questions": made["questions"],
            }
        )
        events += len(evs)
        questions += len(made["questions"])
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
    return cached_dataset(
        f"proactegomem-{preset}-seed{seed}-v{GENERATOR_VERSION}",
        lambda work: build(PRESETS[preset], seed, work),
        root,
        code=(
            "adapters/systems/proact_world.py",
            "harness/suites/proactegomem/synth.py",
            "harness/suites/proactegomem/dataset.py",
        ),
    )


def _is_on(device: DeviceSpec, t_s: float) -> bool:
    return any(s <= t_s < e for s, e in device["on"])


def _draw_device(frame: npt.NDArray[np.uint8], device: DeviceSpec, t_s: float) -> None:
    x, y = device["slot"]
    color = np.array(PALETTE[device["name"]], dtype=np.uint16)
    if _is_on(device, t_s):
        frame[y - 6 : y + SIDE + 6, x - 6 : x + SIDE + 6] = (240, 240, 230)
        frame[y : y + SIDE, x : x + SIDE] = color.astype(np.uint8)
    else:
        frame[y : y + SIDE, x : x + SIDE] = (color // 3).astype(np.uint8)


def object_corner(slot: Sequence[int], index: int) -> tuple[int, int]:
    """Where object number `index` of a clip sits on a surface (x, y): side by side."""
    return slot[0] + 6 + 30 * index, slot[1] + 24


def _draw_surfaces(frame: npt.NDArray[np.uint8], spec: Scene, t_s: float) -> None:
    slots = {}
    for surface in spec.get("surfaces", ()):
        x, y = surface["slot"]
        slots[surface["name"]] = (x, y)
        frame[y : y + SURFACE_H, x : x + SURFACE_W] = SURFACES[surface["name"]]
    for obj in spec.get("objects", ()):
        for s, e, where in obj["placed"]:
            if s <= t_s < e:
                x, y = object_corner(slots[where], obj["index"])
                frame[y : y + OBJECT_SIDE, x : x + OBJECT_SIDE] = OBJECTS[obj["name"]]


def _draw_panels(frame: npt.NDArray[np.uint8], spec: Scene, t_s: float) -> None:
    for panel in spec.get("panels", ()):
        s, e = panel["shown"]
        if not s <= t_s < e:
            continue
        x, y = PANEL_X, PANEL_Y
        frame[y : y + HEADER_H, x : x + PANEL_W] = PANELS[panel["name"]]
        frame[y + HEADER_H : y + HEADER_H + CARD_H, x : x + PANEL_W] = CARD
        for k, digit in enumerate(panel["number"]):
            dx, dy = x + DIGIT_X + k * DIGIT_PITCH, y + DIGIT_Y
            for r, row in enumerate(FONT[digit]):
                for c, bit in enumerate(row):
                    if bit == "1":
                        cx, cy = dx + c * DIGIT_CELL, dy + r * DIGIT_CELL
                        frame[cy : cy + DIGIT_CELL, cx : cx + DIGIT_CELL] = INK


def render_frames(
    spec_: Mapping[str, JSON], times: Sequence[int]
) -> Iterator[npt.NDArray[np.uint8]]:
    """The frame at each time (ms on the clip clock) of the clip `spec` describes."""
    if spec_.get("generator") != GENERATOR or spec_.get("version") != GENERATOR_VERSION:
        raise DatasetError(
            f"render spec needs {GENERATOR} version {GENERATOR_VERSION}: regenerate the dataset"
        )
    spec = cast(RenderSpec, spec_)  # this generator's and version's, which `build` wrote
    rng = np.random.default_rng(int(spec["texture_seed"]))
    wall = rng.integers(70, 110, size=(HEIGHT, WIDTH, 1), dtype=np.uint8).repeat(3, axis=2)
    for t in times:
        frame = wall.copy()
        # A little sensor noise per frame: the frames differ even when nothing changes.
        noise = np.random.default_rng(t + int(spec["texture_seed"])).integers(0, 6, frame.shape)
        frame = (frame + noise.astype(np.uint8)).astype(np.uint8)
        for device in spec.get("devices", ()):
            _draw_device(frame, device, t / 1000.0)
        if "surfaces" in spec:
            _draw_surfaces(frame, spec, t / 1000.0)
        if "panels" in spec:
            _draw_panels(frame, spec, t / 1000.0)
        yield frame
