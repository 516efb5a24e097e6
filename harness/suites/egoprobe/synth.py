"""The synthetic EgoProbe benchmark: recurring put-downs in a rendered world, recalled later.

Each video is one stream recorded in short segments over two or three days,
with recording gaps between them, so that recall intervals reach every bucket
(Short < 3 min, Medium 3-30 min, Long 30 min-12 h, Ultra-long >= 12 h) while
the stored video stays a few hundred seconds long. The world and its
renderer are APM-Bench's synthetic ones (the reference systems read it).

What recurs: objects are picked up and put down again and again, each time at
some place; a place receives at most one object per day, so "On DAY2, I put
one object down at the SHELF" names exactly one event (the day is the
disambiguating cue). The other objects put down at that place after the
target and before the query are related events (they intervene, as the
paper's appendix B.2 defines them); their objects are the event-grounded
distractors. A question whose place saw no other put-down between the target
and the query is a Base question, otherwise an Echo question with a two-turn
dialogue.

No label is visible on the wire: the four options of every question are the
same four objects (the ones that move; a fifth stays put), shuffled, so
neither the option set nor its order says anything about the answer; the
query time is drawn independently of the answer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import ConfigError
from apmbench.harness.media.timecode import MS_PER_DAY, format_ms
from apmbench.harness.paths import cached_dataset
from apmbench.harness.suites.egoprobe.dataset import (
    BENCHMARK,
    BUCKET_NAMES,
    FORMAT_VERSION,
    OPTION_IDS,
    bucket_of,
)
from apmbench.harness.synthetic.world import (
    FIXTURES,
    Event,
    SessionPlan,
    WorldState,
    apply,
    initial_world,
)

GENERATOR = "egoprobe-synth"
GENERATOR_VERSION = 6
VIDEO_FPS = 1
OPTIONS = len(OPTION_IDS)
BUSY = (4, 7)
"""Filler actions at the start of every segment, at least and at most."""
RECUR = 1.0
"""How often a put-down goes to a place used on an earlier day (when one is free)."""

# Segment starts (day, seconds after midnight) of one video: pairs a minute or two apart
# give Short recalls, the rest Medium, Long and Ultra-long ones.
_H = 3600
SCHEDULES = {
    "tiny": (
        (0, 8 * _H),
        (0, 8 * _H + 120),
        (0, 8 * _H + 1500),
        (1, 9 * _H),
        (1, 9 * _H + 120),
        (1, 15 * _H),
        (2, 8 * _H),
        (3, 9 * _H),
    ),
    "full": (
        (0, 8 * _H),
        (0, 8 * _H + 120),
        (0, 8 * _H + 1500),
        (0, 14 * _H),
        (1, 9 * _H),
        (1, 9 * _H + 120),
        (1, 9 * _H + 1500),
        (1, 19 * _H),
        (2, 8 * _H + 1800),
        (2, 8 * _H + 1920),
        (2, 12 * _H),
        (3, 10 * _H),
        (3, 10 * _H + 120),
        (4, 9 * _H),
    ),
}


@dataclass(frozen=True)
class Preset:
    name: str
    videos: int
    schedule: str
    segment_seconds: int
    questions_per_target: int
    description: str = ""


PRESETS = {
    p.name: p
    for p in (
        Preset("tiny", 1, "tiny", 40, 3, "tests: seconds end to end"),
        Preset("small", 3, "full", 40, 3, "the demo: every recall bucket, a few minutes of CPU"),
        Preset("paper", 24, "full", 40, 3, "more videos of the same shape"),
    )
}


@dataclass(frozen=True)
class PutDown:
    time_ms: int
    segment: int
    day: int
    place: str
    subject: str


def _move(
    rng: random.Random,
    state: WorldState,
    movable: Sequence[str],
    used: set[str],
    last: dict[str, str],
    t: int,
    seg: int,
    start_ms: int,
) -> tuple[list[Event], PutDown | None, int]:
    """Walk to an object, pick it up, carry it to a place not used today, put it down."""
    objects = [
        (o, p) for p, ps in state.places.items() for o in ps.objects.values() if o in movable
    ]
    rng.shuffle(objects)
    for obj, origin in objects:
        targets = [
            p for p, ps in state.places.items() if p != origin and p not in used and ps.free_slots()
        ]
        if not targets:
            continue
        # Places used on earlier days first, most of the time, with another object than
        # the one last put there: the put-down recurs after earlier targets at that place
        # with a different detail, so it intervenes in their recall intervals (Echo).
        again = [p for p in targets if p in last and last[p] != obj]
        place = rng.choice(sorted(again if again and rng.random() < RECUR else targets))
        events: list[Event] = []

        def at(kind: str, where: str, subject: str = "", after: str = "") -> None:
            nonlocal t
            e = Event(start_ms + t * 1000, seg, kind, where, subject, "", after)
            apply(state, e)
            events.append(e)  # noqa: B023 - called only inside this iteration
            t += 2

        if state.here != origin:
            at("goto", origin)
        at("pickup", origin, obj)
        at("goto", place)
        slot = rng.choice(state.places[place].free_slots())
        at("putdown", place, obj, str(slot))
        used.add(place)
        down = events[-1]
        return events, PutDown(down.time_ms, seg, down.time_ms // MS_PER_DAY, place, obj), t
    return [], None, t


def _filler(rng: random.Random, state: WorldState, t: int, seg: int, start_ms: int) -> Event:
    """Something else that happens: a fixture switched or items added or taken."""
    here = state.places[state.here]
    if rng.random() < 0.5:
        a, b = FIXTURES[here.fixture]
        after = b if here.fixture_state == a else a
        e = Event(
            start_ms + t * 1000, seg, "toggle", here.name, here.fixture, here.fixture_state, after
        )
    else:
        count = max(1, min(20, here.item_count + rng.choice([-1, 1, 2])))
        if count == here.item_count:
            count += 1
        e = Event(
            start_ms + t * 1000,
            seg,
            "count",
            here.name,
            here.item,
            str(here.item_count),
            str(count),
        )
    apply(state, e)
    return e


def simulate(
    rng: random.Random, schedule: Sequence[tuple[int, int]], seconds: int
) -> tuple[list[SessionPlan], list[PutDown], list[str]]:
    """The segments, the put-downs, and the objects that move (one of the world's five stays
    where it is, so that every question can offer exactly the four that move)."""
    state = initial_world(rng)
    objects = sorted(o for p in state.places.values() for o in p.objects.values())
    movable = sorted(rng.sample(objects, OPTIONS))
    plans: list[SessionPlan] = []
    downs: list[PutDown] = []
    used: dict[int, set[str]] = {}
    for seg, (day, clock_s) in enumerate(schedule):
        start_ms = day * MS_PER_DAY + (clock_s + rng.randint(0, 20)) * 1000
        opening = state.copy()
        # A busy start: a memory that keeps only the first few actions of a segment (as a
        # compact text memory does) loses the put-down of the busier segments.
        busy = rng.randint(*BUSY)
        events: list[Event] = [_filler(rng, state, 2 + 2 * k, seg, start_ms) for k in range(busy)]
        # One move per segment, late in it, so that the next segment a minute or two later
        # gives a Short recall; fewer moves than places leave some places undisturbed for
        # a day or more (Base questions at long range).
        earlier = {d.place: d.subject for d in downs if d.day < day}
        moved, down, t = _move(
            rng, state, movable, used.setdefault(day, set()), earlier, 3 + 2 * busy, seg, start_ms
        )
        events += moved
        if down is not None:
            downs.append(down)
        events.append(_filler(rng, state, t + 1, seg, start_ms))
        plans.append(
            SessionPlan(
                f"S{seg + 1:03d}", f"DAY{day + 1}", start_ms, seconds, tuple(events), opening
            )
        )
    return plans, downs, movable


def _query_time(rng: random.Random, plan: SessionPlan, down_times: set[int]) -> int:
    """A whole second inside the segment, never the instant of a put-down: the frame at such
    a query would show an event neither before nor after it, and its time would equal that
    event's evidence end, which the public part of a split must not repeat."""
    seconds = list(range(3, plan.seconds - 1))
    first = rng.randint(3, plan.seconds - 2) - 3
    for s in seconds[first:] + seconds[:first]:
        if plan.start_ms + s * 1000 not in down_times:
            return plan.start_ms + s * 1000
    return plan.start_ms + seconds[first] * 1000


def _questions(
    rng: random.Random,
    vid: str,
    plans: Sequence[SessionPlan],
    downs: Sequence[PutDown],
    objects: Sequence[str],
    per_target: int,
    counter: list[int],
    asked: dict[str, int],
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    questions: list[dict[str, object]] = []
    dialogues: list[dict[str, object]] = []
    down_times = {d.time_ms for d in downs}
    for target in downs:
        # Query times in later segments, by bucket; one bucket per question, spread evenly.
        by_bucket: dict[str, list[int]] = {}
        for plan in plans[target.segment + 1 :]:
            t_q = _query_time(rng, plan, down_times)
            by_bucket.setdefault(bucket_of((t_q - target.time_ms) / 1000.0), []).append(t_q)
        # The buckets asked least so far first, so that every bucket is covered.
        buckets = [b for b in BUCKET_NAMES if b in by_bucket]
        rng.shuffle(buckets)
        buckets.sort(key=lambda b: asked.get(b, 0))
        times = []
        for bucket in buckets[:per_target]:
            asked[bucket] = asked.get(bucket, 0) + 1
            times.append(rng.choice(by_bucket[bucket]))
        # One more query after the first later put-down of another object at the place, when
        # the bucket-balanced ones all came before it: the paper's subsets are about equal
        # (1,137 Base, 1,229 Echo), and short recalls alone would leave Echo rare.
        other = [
            d
            for d in downs
            if d.place == target.place
            and d.time_ms > target.time_ms
            and d.subject != target.subject
        ]
        if other and all(t <= other[0].time_ms for t in times):
            later = plans[other[0].segment + 1 :]
            if later:
                plan = rng.choice(later)
                times.append(_query_time(rng, plan, down_times))
        for t_q in times:
            # Related events intervene (appendix B.2): put down at the place after the
            # target and before the query. Earlier ones are history the day already rules out.
            related = [
                d for d in downs if d.place == target.place and target.time_ms < d.time_ms < t_q
            ]
            distractors: list[str] = []
            for d in sorted(related, key=lambda d: -d.time_ms):
                if d.subject != target.subject and d.subject not in distractors:
                    distractors.append(d.subject)
            distractors = distractors[:3]
            if related and not distractors:
                continue  # related events, all with the same answer: neither Base nor Echo
            # The options are always the four objects that move, so the set offered says
            # nothing about the answer; only the video tells which is which.
            fillers = [o for o in objects if o != target.subject and o not in distractors]
            # Fillers put down at this place outside the recall interval first: an object
            # offered for a place should not be likelier the answer for having been put
            # down there at all.
            elsewhere = {
                d.subject
                for d in downs
                if d.place == target.place and not target.time_ms <= d.time_ms < t_q
            }
            fillers.sort(key=lambda o: o not in elsewhere)
            texts = [target.subject, *distractors, *fillers][:4]
            if len(texts) < 4:
                continue
            rng.shuffle(texts)
            options = dict(zip(OPTION_IDS, texts, strict=True))
            option_of = {text: o for o, text in options.items()}
            counter[0] += 1
            qid = f"Q{counter[0]:04d}"
            subset = "echo" if distractors else "base"
            kept = [d for d in related if d.subject in option_of] if distractors else []
            question: dict[str, object] = {
                "question_id": qid,
                "subset": subset,
                "video_id": vid,
                "query_time": format_ms(t_q),
                "question": (
                    f"On DAY{target.day + 1}, I put one object down at the {target.place}. "
                    "Which object was it?"
                ),
                "options": options,
                "answer": option_of[target.subject],
                "question_type": "identity",
                "target": {
                    "start": format_ms(target.time_ms - 1000),
                    "end": format_ms(target.time_ms),
                },
                "related_events": [
                    {
                        "event_id": f"{vid}-{d.segment + 1}-{d.time_ms}",
                        "start": format_ms(d.time_ms - 1000),
                        "end": format_ms(d.time_ms),
                        "option": None if d.subject == target.subject else option_of[d.subject],
                    }
                    for d in kept
                ],
            }
            questions.append(question)
            if subset == "echo":
                dialogues.append(
                    {
                        "dialogue_id": f"D{counter[0]:04d}",
                        "parent": qid,
                        "r1": {
                            "question": f"Did I put something down at the {target.place}?",
                            "answer": "yes",
                        },
                        "r2": {"question": question["question"]},
                    }
                )
    return questions, dialogues


def build(preset: Preset, seed: int, out: Path) -> dict[str, int]:
    from apmbench.harness.synthetic.video import write_video

    if (out / "dataset.json").exists():
        raise FileExistsError(f"{out} already holds a dataset")
    (out / "videos").mkdir(parents=True, exist_ok=True)
    videos: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    dialogues: list[dict[str, object]] = []
    counter = [0]
    asked: dict[str, int] = {}
    for i in range(preset.videos):
        vid = f"V{i + 1:03d}"
        rng = random.Random(f"{GENERATOR}/{GENERATOR_VERSION}/{preset.name}/{seed}/{i}")
        plans, downs, objects = simulate(rng, SCHEDULES[preset.schedule], preset.segment_seconds)
        segments = []
        for plan in plans:
            file = f"videos/{vid}_{plan.session_id}.mp4"
            write_video(out / file, plan, VIDEO_FPS)
            segments.append(
                {
                    "segment_id": plan.session_id,
                    "file": file,
                    "start": format_ms(plan.start_ms),
                    "end": format_ms(plan.end_ms),
                }
            )
        videos.append({"video_id": vid, "title": f"Synthetic stream {vid}", "segments": segments})
        q, d = _questions(
            rng, vid, plans, downs, objects, preset.questions_per_target, counter, asked
        )
        questions += q
        dialogues += d
    doc = {
        "benchmark": BENCHMARK,
        "format_version": FORMAT_VERSION,
        "name": f"egoprobe-synthetic-{preset.name}-{seed}",
        "generator": {
            "name": GENERATOR,
            "version": GENERATOR_VERSION,
            "preset": preset.name,
            "seed": seed,
        },
        "videos": videos,
        "questions": questions,
        "dialogues": dialogues,
    }
    (out / "dataset.json").write_text(json.dumps(doc, indent=1) + "\n")
    return {
        "base": sum(q["subset"] == "base" for q in questions),
        "echo": sum(q["subset"] == "echo" for q in questions),
        "dialogues": len(dialogues),
    }


def synthetic_dataset(preset: str, seed: int, root: Path | None = None) -> Path:
    """The directory of the synthetic dataset, generated on first use into the cache."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown EgoProbe preset {preset!r}: use one of {', '.join(PRESETS)}")
    return cached_dataset(
        f"egoprobe-{preset}-seed{seed}-v{GENERATOR_VERSION}",
        lambda work: build(PRESETS[preset], seed, work),
        root,
        code=("harness/suites/egoprobe/synth.py", "harness/suites/egoprobe/dataset.py"),
    )
