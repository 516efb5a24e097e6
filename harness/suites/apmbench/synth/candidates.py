"""Candidates for all twelve tasks and the Evidence Availability set, in the paper's formats.

Answers are fixed by construction from the simulated events; evidence lies
strictly before each query; distractors are other objects, places, texts,
counts and acts of the same trajectory, so the text of a question and its
options alone does not reveal the answer.

Neither do the questions and options asked before it. A system sees every
question of the main pass on the wire and may keep them all, so a distractor
must be as likely as the answer to have been named earlier: ER's distractors
are objects put down before the question, like its answer; ACR asks about
toggles and count changes, with distractors the world's layout allows where
the wearer stands, of kinds drawn as often as the answers' kinds, never the
trajectory's own (later) acts; TR's four options are one kind of act from the
first two sessions, and never put-downs or pick-ups, which would tell later ER
and EST questions where objects went; STU asks only for objects, so an
option's kind is no hint; OCR's distractors are the other screens' texts at
that moment; and a question asked again with the same answer gets the same
options (CT: the answer keeps its rank), so that comparing the copies narrows
nothing. tests/helpers/option_memory.py measures what a frame-blind memory of
the options answers.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apmbench.adapters.perception.events import describe
from apmbench.harness.media.timecode import MS_PER_DAY
from apmbench.harness.synthetic.world import FIXTURES, Event, PlaceState, SessionPlan

UNAVAILABLE = "Not answerable now: the evidence needed is not available"
Candidate = dict[str, Any]


def clock(ms: int) -> str:
    s = (ms % MS_PER_DAY) // 1000
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


@dataclass
class TrajectoryFacts:
    trajectory_id: str
    sessions: list[SessionPlan]

    @property
    def events(self) -> list[Event]:
        return [e for s in self.sessions for e in s.events]

    def at(self, index: int, ms: int) -> dict[str, str]:
        s = self.sessions[index]
        return {"day_id": s.day_id, "session_id": s.session_id, "query_time": clock(ms)}

    def window(self, index: int, start_ms: int, end_ms: int, **extra: str) -> dict[str, str]:
        s = self.sessions[index]
        return {
            "day_id": s.day_id,
            "session_id": s.session_id,
            "start_time": clock(start_ms),
            "end_time": clock(end_ms),
            **extra,
        }

    def evidence(self, e: Event) -> dict[str, str]:
        return self.window(
            e.session_index,
            e.time_ms,
            e.time_ms + 2000,
            evidence_content=f"The wearer {e.describe()}.",
        )

    def objects(self) -> list[str]:
        opening = self.sessions[0].opening
        return sorted(o for p in opening.places.values() for o in p.objects.values())

    def places(self) -> list[str]:
        return sorted(self.sessions[0].opening.places)


class Builder:
    def __init__(self, facts: TrajectoryFacts, rng: random.Random) -> None:
        self.facts = facts
        self.rng = rng
        self.counter = 0
        self._trigger_cache: dict[str, list[int]] = {}
        # (task, question, answer) -> the distractors it was offered with: a question asked
        # again with the same answer and fresh distractors would give the answer away as the
        # option every copy shares.
        self._offered: dict[tuple[str, str, str], list[str]] = {}
        # (task, question) -> the rank CT's answer takes among its four consecutive counts.
        self._ranks: dict[tuple[str, str], int] = {}
        # The acts ACR asked about, which TR leaves out: named as an ACR answer, an act is
        # dated by that question's time, and the oldest option is TR's answer.
        self._acr_asked: set[Event] = set()

    def new_id(self, task: str) -> str:
        self.counter += 1
        return f"{self.facts.trajectory_id}-{task}-{self.counter:03d}"

    def options(
        self,
        correct: str,
        pool: list[str],
        extra: str | None = None,
        first: Sequence[str] = (),
        key: tuple[str, str] | None = None,
    ) -> tuple[list[dict[str, str]], str] | None:
        """Four options: `correct` and three distractors from `pool`, those in `first`
        before the others. With `key` (task, question), a question asked again with the
        same answer gets the distractors it had before."""
        remembered = self._offered.get((*key, correct)) if key is not None else None
        if remembered is not None:
            chosen = list(remembered)
        else:
            distractors = sorted({p for p in pool if p != correct})
            if len(distractors) < 3:
                return None
            preferred = sorted({p for p in first if p in distractors})
            chosen = self.rng.sample(preferred, min(3, len(preferred)))
            rest = [p for p in distractors if p not in preferred]
            chosen += self.rng.sample(rest, 3 - len(chosen))
            if key is not None:
                self._offered[(*key, correct)] = chosen
        texts = [correct, *chosen]
        self.rng.shuffle(texts)
        if extra is not None:
            texts.append(extra)
        choices = [{"option_id": "ABCDE"[i], "text": t} for i, t in enumerate(texts)]
        return choices, "ABCD"[texts.index(correct)]

    def query_time(self, index: int, earliest_s: int = 8) -> int:
        s = self.facts.sessions[index]
        return s.start_ms + self.rng.randint(earliest_s, s.seconds - 4) * 1000

    def mcqa(
        self,
        task: str,
        index: int,
        t: int,
        question: str,
        correct: str,
        pool: list[str],
        evidence: list[Event],
        first: Sequence[str] = (),
        remember: bool = True,
    ) -> Candidate | None:
        opts = self.options(correct, pool, first=first, key=(task, question) if remember else None)
        if opts is None:
            return None
        choices, letter = opts
        return {
            "task_type": task,
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id(task),
            "question": question,
            "choices": choices,
            "correct_option_id": letter,
            "query": self.facts.at(index, t),
            "evidence_moments": [self.facts.evidence(e) for e in evidence],
        }

    # -- cross-session understanding ------------------------------------------------

    def _putdown_recall(self, index: int, t: int) -> tuple[str, Event] | None:
        """An earlier-session put-down that is the only one at its place on its day, up to `t`."""
        prior = [e for e in self.facts.events if e.time_ms < t]
        options = []
        for e in prior:
            if e.kind != "putdown" or e.session_index >= index:
                continue
            day = e.time_ms // MS_PER_DAY
            same = {
                x.subject
                for x in prior
                if x.kind == "putdown" and x.place == e.place and x.time_ms // MS_PER_DAY == day
            }
            if same == {e.subject}:
                options.append(e)
        if not options:
            return None
        e = self.rng.choice(options)
        day_id = self.facts.sessions[e.session_index].day_id
        question = f"On {day_id}, I put one object down at the {e.place}. Which object was it?"
        return question, e

    def er(self, index: int) -> Candidate | None:
        t = self.query_time(index)
        found = self._putdown_recall(index, t)
        if found is None:
            return None
        question, e = found
        # Distractors the wearer also put down before the question: the answer is a put-down,
        # so an object never put down (never named by an earlier option) would be a
        # distractor a memory of the options could rule out.
        put = [x.subject for x in self.facts.events if x.kind == "putdown" and x.time_ms < t]
        return self.mcqa("ER", index, t, question, e.subject, self.facts.objects(), [e], first=put)

    def est(self, index: int) -> Candidate | None:
        session = self.facts.sessions[index]
        t = self.query_time(index)
        state = session.state_at(t)
        current = [e for e in session.events if e.time_ms <= t]
        candidates = []
        for place in state.places.values():
            for obj in place.objects.values():
                touched = any(e.subject == obj for e in current)
                last = [
                    e
                    for e in self.facts.events
                    if e.kind == "putdown" and e.subject == obj and e.time_ms < session.start_ms
                ]
                if (
                    not touched
                    and last
                    and place.name != state.here
                    and last[-1].place == place.name
                ):
                    candidates.append((obj, place.name, last[-1]))
        if not candidates:
            return None
        obj, where, e = self.rng.choice(candidates)
        return self.mcqa(
            "EST", index, t, f"Where is the {obj} now?", where, self.facts.places(), [e]
        )

    def tr(self, index: int) -> Candidate | None:
        """Which of four acts of the first TR_SESSIONS sessions came first, asked in a later
        session. Every option of every TR question then predates every TR question, so an
        act an earlier one offered is not thereby older than the others: with options from
        any earlier session, the option a memory of the options had seen first was the
        answer in 37 % of questions."""
        if index < TR_SESSIONS:
            return None
        t = self.query_time(index)
        before = [e for e in self.facts.events if e.time_ms < t]
        seen = Counter(e.describe() for e in before)
        # An option must name exactly one moment, or "first" has no single answer.
        prior = [
            e
            for e in before
            if e.session_index < TR_SESSIONS
            and e.kind in TR_KINDS
            and seen[e.describe()] == 1
            and e not in self._acr_asked
        ]
        # One kind per question: with kinds mixed, the odd kind out was the answer in 11 of 23
        # questions of generator 5 (seeds 100-109 of `small`). Never put-downs or pick-ups:
        # options are real events, so they would tell later ER and EST questions where an
        # object went.
        by_kind = {k: [e for e in prior if e.kind == k] for k in TR_KINDS}
        for _ in range(20):
            kind = self.rng.choice(TR_KINDS)
            if len(by_kind[kind]) < 4:
                continue
            # Drawn uniformly: requiring both sessions, as generator 5 did, offered the acts
            # of the session with fewer of them more often, and those are the older ones.
            picked = self.rng.sample(by_kind[kind], 4)
            first = min(picked, key=lambda e: e.time_ms)
            texts = [e.describe() for e in picked]
            opts = self.options(first.describe(), texts)
            if opts is None:
                continue
            choices, letter = opts
            return {
                "task_type": "TR",
                "trajectory_id": self.facts.trajectory_id,
                "candidate_id": self.new_id("TR"),
                "question": "Which of these did I do first?",
                "choices": choices,
                "correct_option_id": letter,
                "query": self.facts.at(index, t),
                "evidence_moments": [
                    self.facts.evidence(e) for e in sorted(picked, key=lambda e: e.time_ms)
                ],
            }
        return None

    # -- real-time perception ---------------------------------------------------------

    def acr(self, index: int) -> Candidate | None:
        session = self.facts.sessions[index]
        quiet = [
            e
            for e in session.events
            if e.kind in ACR_KINDS
            and not any(0 < abs(x.time_ms - e.time_ms) <= 3000 for x in session.events)
        ]
        if not quiet:
            return None
        e = self.rng.choice(quiet)
        t = e.time_ms + 2000
        if t > session.end_ms:
            return None
        # Distractors are acts the world allows where the wearer stands (so the place names
        # nothing), each of a kind drawn from the kinds of the acts this question could have
        # asked about (so the answer's kind is no odd one out). Generator 5 drew them from
        # the trajectory's own acts, later sessions' too, which named them before they
        # happened: an ERA question could then pick the object most often picked up.
        here = session.state_at(e.time_ms).places[e.place]
        answer = e.describe()
        chosen: list[str] = []
        for _ in range(60):
            text = self._layout_act(self.rng.choice(quiet).kind, here)
            if text != answer and text not in chosen:
                chosen.append(text)
            if len(chosen) == 3:
                break
        else:
            return None
        made = self.mcqa("ACR", index, t, "What did I just do?", answer, chosen, [e])
        if made is not None:
            self._acr_asked.add(e)
        return made

    def _layout_act(self, kind: str, place: PlaceState) -> str:
        """An act of `kind` the world's layout allows at `place`: any of its objects picked up
        or put down, its fixture put in either state, its items counted up or down by a
        change the world makes."""
        if kind in ("pickup", "putdown"):
            return describe(kind, place.name, self.rng.choice(self.facts.objects()), "", "0")
        if kind == "toggle":
            a, b = FIXTURES[place.fixture]
            after = self.rng.choice((a, b))
            return describe(kind, place.name, place.fixture, b if after == a else a, after)
        delta = self.rng.choice(COUNT_CHANGES)
        return describe(kind, place.name, place.item, "10", str(10 + delta))

    def ct(self, index: int) -> Candidate | None:
        t = self.query_time(index, 4)
        state = self.facts.sessions[index].state_at(t)
        place = state.places[state.here]
        n = place.item_count
        question = f"How many {place.item} are at the {place.name} right now?"
        # Four consecutive counts with the answer at a uniformly drawn rank: distractors
        # drawn around the answer would make "the middle option" a shortcut. The rank is
        # drawn once per question: drawn again for each copy, the counts every copy offers
        # would narrow the answer down whenever the count had not changed.
        rank = self._ranks.setdefault(("CT", question), self.rng.randrange(4))
        low = n - rank
        if low < 0:
            return None
        return self.mcqa("CT", index, t, question, str(n), [str(low + k) for k in range(4)], [])

    def ocr(self, index: int) -> Candidate | None:
        t = self.query_time(index, 4)
        state = self.facts.sessions[index].state_at(t)
        text = state.places[state.here].screen
        # The distractors are what the other places' screens say at the same moment: as old
        # as the answer, so no count of earlier questions naming a text singles it out.
        # Generator 5 drew them from every text of the trajectory, later ones too.
        pool = [p.screen for p in state.places.values()]
        return self.mcqa(
            "OCR", index, t, "What does the screen say right now?", text, pool, [], remember=False
        )

    def stu(self, index: int) -> Candidate | None:
        t = self.query_time(index, 4)
        state = self.facts.sessions[index].state_at(t)
        slots = state.places[state.here].layout()
        objects = self.facts.objects()
        # The answer is always a movable object and so are the distractors. Generator 5 let
        # it be a fixture or an item pile among fixtures and objects: an item was the answer
        # in 44 of its 50 appearances, and as a place has one fixture and one pile, a
        # fixture or item beside another of its kind was never the answer.
        pairs = [
            (a.label, b.label)
            for a, b in itertools.pairwise(slots)
            if a.label and b.label in objects
        ]
        if not pairs:
            return None
        left, right = self.rng.choice(pairs)
        pool = [o for o in objects if o != left]
        question = f"Which object is immediately to the right of the {left}?"
        return self.mcqa("STU", index, t, question, right, pool, [])

    # -- evidence availability ----------------------------------------------------------

    def _last_putdown_at(self, place: str, t: int) -> Event | None:
        puts = [
            e
            for e in self.facts.events
            if e.kind == "putdown" and e.place == place and e.time_ms + 2000 <= t
        ]
        return puts[-1] if puts else None

    def ea(self, index: int, available: bool, t: int) -> Candidate | None:
        """A question about the last put-down at a place, whose evidence lies inside
        the replay (the two most recent completed sessions and the current prefix) or
        before it. The question's text and time are the same for both labels: naming
        the day of the evidence would tell its age, and so its label, without a frame."""
        places = self.facts.places()
        self.rng.shuffle(places)
        for place in places:
            e = self._last_putdown_at(place, t)
            if e is None or (e.session_index >= index - 2) != available:
                continue
            opts = self.options(e.subject, self.facts.objects(), extra=UNAVAILABLE)
            if opts is None:
                return None
            choices, letter = opts
            return {
                "task_type": "EA",
                "trajectory_id": self.facts.trajectory_id,
                "candidate_id": self.new_id("EA"),
                "question": f"The last time I put something down at the {place}, what was it?",
                "choices": choices,
                "correct_option_id": letter if available else "E",
                "evidence_available": available,
                "query": self.facts.at(index, t),
                "evidence_moments": [self.facts.evidence(e)],
            }
        return None

    # -- adaptive response ----------------------------------------------------------------
    #
    # A decision probe is labelled by what happens in the frames only. Every value
    # a system receives without frames (probe times from the session start, from
    # the registration and from the previous probe, interval lengths and offsets,
    # the number of probes asked so far) is drawn from one distribution for
    # positives and negatives alike.

    def _interval(self, around_ms: int) -> tuple[int, int]:
        """An interval of 3-6 s placed so that `around_ms` lies at least 2 s before its end."""
        length = self.rng.randint(3, 6)
        start = around_ms - self.rng.randint(0, length - 2) * 1000
        return start, start + length * 1000

    def _negative_interval(
        self, index: int, targets: list[int], quiet: Callable[[int, int], bool]
    ) -> tuple[int, int] | None:
        """A silence interval placed like a positive one: around a trigger offset drawn from
        the same task's triggers (`targets`, ms from session start), moved to the nearest
        place where `quiet` holds."""
        session = self.facts.sessions[index]
        start, end = self._interval(session.start_ms + self.rng.choice(targets))
        for shift in itertools.chain.from_iterable((s, -s) for s in range(0, 40)):
            a, b = start + shift * 1000, end + shift * 1000
            if a >= session.start_ms + 1000 and b <= session.end_ms - 1000 and quiet(a, b):
                return a, b
        return None

    def _none_near(self, index: int, a: int, b: int, match: Callable[[Event], bool]) -> bool:
        """No matching event from 2 s before the interval to 2 s after it."""
        return not any(
            a - 2000 <= e.time_ms < b + 2000 and match(e) for e in self.facts.sessions[index].events
        )

    def era(self, index: int) -> Candidate | None:
        """Checkpoints at a renewal process from the session start; the first one after the
        first pick-up is positive, the earlier ones negative. The pick-up comes at a
        roughly constant rate, so a checkpoint's rank and time do not tell which it is."""
        session = self.facts.sessions[index]
        pickups = [e for e in session.events if e.kind == "pickup"]
        if not pickups:
            return None
        e = pickups[0]
        opts = self.options(e.subject, self.facts.objects())
        if opts is None:
            return None
        choices, letter = opts
        times: list[int] = []
        t = session.start_ms + self.rng.randint(3, 9) * 1000
        while t < e.time_ms + 1000:
            if t >= e.time_ms:  # the pick-up is on screen for less than a second
                t = e.time_ms + 1000
                break
            times.append(t)
            t += self.rng.randint(3, 9) * 1000
        if t > session.end_ms - 1000 or len(times) > 8:
            return None
        return {
            "task_type": "ERA",
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id("ERA"),
            "question": "Which object will I pick up first in this session?",
            "choices": choices,
            "correct_option_id": letter,
            "answer_evidence_moments": [self.facts.evidence(e)],
            "positive_heartbeat": {
                **self.facts.at(index, t),
                "response_reason": f"The wearer has just {e.describe()}.",
            },
            "negative_heartbeats": [
                {**self.facts.at(index, n), "silence_reason": "Nothing has been picked up yet."}
                for n in times
            ],
            "ideal_response_window": self.facts.window(index, e.time_ms, e.time_ms + 4000),
        }

    def rcr(self, index: int) -> Candidate | None:
        """The positive comes 1-3 s after the pick-up; the negative at a time since the
        registration drawn from the same distribution, before the pick-up or after the
        object is put down again. A pair is kept only when the two times are at least
        the object's holding time apart, a rule symmetric in the two, so that neither the
        time since the registration nor the order of the probes tells them apart."""
        session = self.facts.sessions[index]
        pickups = [e for e in session.events if e.kind == "pickup"]
        if not pickups:
            return None
        e = self.rng.choice(pickups)
        later_puts = [
            x.time_ms for x in session.events if x.subject == e.subject and x.time_ms > e.time_ms
        ]
        # A second pick-up of the same object would be a second trigger.
        repicks = [
            x.time_ms
            for x in session.events
            if x.kind == "pickup" and x.subject == e.subject and x.time_ms > e.time_ms
        ]
        released = min(later_puts) if later_puts else session.end_ms
        hold = released - e.time_ms + 2000
        longest = min(60, session.seconds // 2)
        for _ in range(20):
            since_pos = (self.rng.randint(6, longest) + self.rng.randint(1, 3)) * 1000
            since_neg = (self.rng.randint(6, longest) + self.rng.randint(1, 3)) * 1000
            if abs(since_pos - since_neg) < hold:
                continue
            pos = e.time_ms + self.rng.randint(1, 3) * 1000
            tr = pos - since_pos
            neg = tr + since_neg
            if tr < session.start_ms + 2000 or max(pos, neg) > session.end_ms - 1000:
                continue
            if (
                any(
                    x.kind == "pickup" and x.subject == e.subject and tr <= x.time_ms < e.time_ms
                    for x in session.events
                )
                or session.state_at(tr).hand == e.subject
            ):
                continue
            if any(r <= max(pos, neg) for r in repicks):
                continue
            break
        else:
            return None
        fixture = self.rng.choice(sorted(FIXTURES))
        registration = f"Remind me to check the {fixture} when I pick up the {e.subject}."
        after = neg > pos
        return {
            "task_type": "RCR",
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id("RCR"),
            "registration_event": {
                "day_id": session.day_id,
                "session_id": session.session_id,
                "registration_time": clock(tr),
                "registration_text": registration,
            },
            "positive_heartbeat": {
                **self.facts.at(index, pos),
                "proactive_response": f"Check the {fixture}.",
                "reason": f"The wearer has just picked up the {e.subject}.",
            },
            "negative_heartbeats": [
                {
                    **self.facts.at(index, neg),
                    "silence_reason": (
                        f"The {e.subject} was put down again; the trigger has passed."
                        if after
                        else f"The {e.subject} has not been picked up."
                    ),
                }
            ],
            "ideal_response_window": self.facts.window(index, e.time_ms, e.time_ms + 3000),
        }

    def _triggers(self, task: str) -> list[int]:
        """Offsets (ms from session start) of the events this task's positives are built on,
        over the whole trajectory: where its silence intervals are placed."""
        found = self._trigger_cache.get(task)
        if found is None:
            finder: dict[str, Callable[[int], Sequence[tuple[Any, ...]]]] = {
                "MPA": self._mpa_triggers,
                "PRM": self._prm_triggers,
                "TPG": self._tpg_triggers,
            }
            events: list[Event] = [
                found_at[0]
                for i in range(1, len(self.facts.sessions))
                for found_at in finder[task](i)
            ]
            found = [e.time_ms - self.facts.sessions[e.session_index].start_ms for e in events]
            self._trigger_cache[task] = found
        return found

    def _mpa_triggers(self, index: int) -> list[tuple[Event, str, Event]]:
        session = self.facts.sessions[index]
        out = []
        for g in (e for e in session.events if e.kind == "goto"):
            state = session.state_at(g.time_ms)
            place = state.places[g.place]
            earlier_visit = any(
                e.kind == "goto" and e.place == g.place and e.time_ms < g.time_ms
                for e in session.events
            )
            if earlier_visit or any(
                abs(e.time_ms - g.time_ms) < 4000 and e is not g for e in session.events
            ):
                continue
            for o in sorted(place.objects.values()):
                put = self._last_putdown(o, session.start_ms)
                if (
                    put is not None
                    and put.place == g.place
                    and not any(x.subject == o for x in session.events if x.time_ms < g.time_ms)
                ):
                    out.append((g, o, put))
                    break
        return out

    def mpa(self, index: int) -> Candidate | None:
        if index == 0:
            return None
        found = self._mpa_triggers(index)
        if not found:
            return None
        g, obj, put = self.rng.choice(found)
        session = self.facts.sessions[index]

        def quiet(a: int, b: int) -> bool:
            # Not arriving anywhere, and not at the place where the object waits.
            return self._none_near(index, a, b, lambda e: e.kind == "goto") and all(
                session.state_at(t).here != g.place for t in range(a, b, 1000)
            )

        negative = self._negative_interval(index, self._triggers("MPA"), quiet)
        if negative is None:
            return None
        start, end = self._interval(g.time_ms)
        if start < session.start_ms + 1000 or end > session.end_ms - 1000:
            return None
        day = self.facts.sessions[put.session_index].day_id
        return {
            "task_type": "MPA",
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id("MPA"),
            "evidence_moments": [self.facts.evidence(put)],
            "response_window_rationale": (
                f"The wearer arrives at the {g.place}, where the {obj} was left on {day}."
            ),
            "reference_proactive_response": (
                f"Your {obj} is here at the {g.place}; you left it here on {day}."
            ),
            "ideal_response_window": self.facts.window(index, start, end),
            "negative_or_silence_windows": [
                self.facts.window(
                    index,
                    *negative,
                    silence_reason="The wearer stays where they are; nothing calls for help.",
                )
            ],
        }

    def _last_putdown(self, obj: str, before_ms: int) -> Event | None:
        puts = [
            e
            for e in self.facts.events
            if e.kind == "putdown" and e.subject == obj and e.time_ms < before_ms
        ]
        return puts[-1] if puts else None

    def _prm_triggers(self, index: int) -> list[tuple[Event]]:
        session = self.facts.sessions[index]
        return [
            (e,)
            for e in session.events
            if e.kind == "toggle"
            and e.after in ("ON", "OPEN")
            and not any(0 < x.time_ms - e.time_ms < 4000 for x in session.events)
        ]

    def prm(self, index: int) -> Candidate | None:
        if index == 0:
            return None
        session = self.facts.sessions[index]
        found = self._prm_triggers(index)
        if not found:
            return None
        (e,) = self.rng.choice(found)
        earlier = self.facts.sessions[self.rng.randrange(index)]
        reg_ms = earlier.start_ms + self.rng.randint(5, earlier.seconds - 10) * 1000
        if any(
            x.kind == "toggle"
            and x.subject == e.subject
            and x.after == e.after
            and reg_ms < x.time_ms < e.time_ms
            for x in self.facts.events
        ):
            return None
        negative = self._negative_interval(
            index,
            self._triggers("PRM"),
            lambda a, b: self._none_near(index, a, b, lambda x: x.kind == "toggle"),
        )
        start, end = self._interval(e.time_ms)
        if negative is None or start < session.start_ms + 1000 or end > session.end_ms - 1000:
            return None
        verb = "open" if e.after == "OPEN" else "switch on"
        thing = self.rng.choice(self.facts.objects())
        registration = f"Next time I {verb} the {e.subject}, remind me to take the {thing}."
        return {
            "task_type": "PRM",
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id("PRM"),
            "registration_event": {
                "day_id": earlier.day_id,
                "session_id": earlier.session_id,
                "registration_time": clock(reg_ms),
                "registration_text": registration,
            },
            "trigger_match_reason": f"The wearer {e.describe()}.",
            "reference_proactive_response": f"Remember to take the {thing}.",
            "ideal_response_window": self.facts.window(index, start, end),
            "negative_or_silence_windows": [
                self.facts.window(
                    index, *negative, silence_reason=f"The {e.subject} is not being {verb}ed now."
                )
            ],
        }

    def _tpg_triggers(self, index: int) -> list[tuple[Event, list[Event]]]:
        session = self.facts.sessions[index]
        out = []
        for e in session.events:
            if e.kind != "count" or int(e.after) <= int(e.before):
                continue
            history = [
                x
                for x in self.facts.events
                if x.kind == "count"
                and x.subject == e.subject
                and x.place == e.place
                and x.session_index < index
                and int(x.after) > int(x.before)
            ]
            same_session_before = [
                x
                for x in session.events
                if x.kind == "count" and x.subject == e.subject and x.time_ms < e.time_ms
            ]
            if not history or same_session_before:
                continue
            if any(0 < x.time_ms - e.time_ms < 4000 for x in session.events):
                continue
            out.append((e, history))
        return out

    def tpg(self, index: int) -> Candidate | None:
        if index == 0:
            return None
        session = self.facts.sessions[index]
        found = self._tpg_triggers(index)
        if not found:
            return None
        e, history = self.rng.choice(found)
        negative = self._negative_interval(
            index,
            self._triggers("TPG"),
            lambda a, b: self._none_near(index, a, b, lambda x: x.kind == "count"),
        )
        start, end = self._interval(e.time_ms)
        if negative is None or start < session.start_ms + 1000 or end > session.end_ms - 1000:
            return None
        return {
            "task_type": "TPG",
            "trajectory_id": self.facts.trajectory_id,
            "candidate_id": self.new_id("TPG"),
            "evidence_moments": [self.facts.evidence(x) for x in history],
            "memory_relevance": (
                f"The wearer keeps restocking {e.subject} at the {e.place} across sessions."
            ),
            "ideal_response_windows": [
                self.facts.window(
                    index,
                    start,
                    end,
                    response_window_rationale=f"The wearer resumes restocking {e.subject}.",
                    reference_proactive_response=(
                        f"You are restocking {e.subject} at the {e.place}: there are {e.after} now."
                    ),
                )
            ],
            "negative_or_silence_windows": [
                self.facts.window(
                    index, *negative, silence_reason="No restocking is happening in this interval."
                )
            ],
        }


ACR_KINDS = ("toggle", "count")
"""The kinds of act ACR asks about. A put-down or pick-up, named with its place as the answer
of an ACR question, would tell later ER and EST questions where an object went; an ERA
question which object is picked up."""
TR_KINDS = ("toggle", "count")
"""The kinds of act a TR question orders (one kind per question)."""
TR_SESSIONS = 2
"""TR's options come from the first this many sessions, its questions from later ones."""
COUNT_CHANGES = (-2, -1, 1, 1, 2, 3)
"""The changes the world makes to a pile of items (world._next_event), for ACR's distractors."""

ORDER_TRIES = 8
"""Candidates drawn for one coin's order before that slot is given up."""


def _clock_ms(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return ((h * 60 + m) * 60 + s) * 1000


def positive_first(candidate: Candidate) -> bool:
    """Whether a two-sided candidate's positive probe is asked before every negative one
    (a heartbeat is asked at its time, an interval at its end)."""
    if "positive_heartbeat" in candidate:
        pos = _clock_ms(candidate["positive_heartbeat"]["query_time"])
        negs = [_clock_ms(h["query_time"]) for h in candidate["negative_heartbeats"]]
    else:
        ideal = candidate.get("ideal_response_windows") or [candidate["ideal_response_window"]]
        pos = min(_clock_ms(w["end_time"]) for w in ideal)
        negs = [_clock_ms(w["end_time"]) for w in candidate["negative_or_silence_windows"]]
    return all(pos < n for n in negs)


def _order_balanced(
    make: Callable[[int], Candidate | None], rng: random.Random
) -> Callable[[int], Candidate | None]:
    """`make`, with a fair coin deciding whether the positive probe comes first. Left to the
    construction, the positive came first in about 60 % of RCR and TPG candidates (40 % of
    MPA): a position any channel between a system's processes could carry. A candidate of
    the other order is drawn again (what a candidate looks like given its order is
    unchanged; only how often each order occurs is)."""

    # The coin is drawn once per candidate made and kept through failed attempts: drawn
    # again after each, the easier order would win the retries.
    want: list[bool] = []

    def balanced(index: int) -> Candidate | None:
        if not want:
            want.append(rng.random() < 0.5)
        for _ in range(ORDER_TRIES):
            candidate = make(index)
            if candidate is not None and positive_first(candidate) == want[0]:
                want.clear()
                return candidate
        return None

    return balanced


def generate(facts: TrajectoryFacts, rng: random.Random, per_task: int) -> list[Candidate]:
    """Up to `per_task` candidates of each task for one trajectory. ERA's positive stays
    after its negatives: they are the checkpoints before the first pick-up, the task's
    definition (a later checkpoint would ask again about an event already past)."""
    b = Builder(facts, rng)
    n = len(facts.sessions)
    later = list(range(1, n))
    every = list(range(n))
    plans: list[tuple[Callable[[int], Candidate | None], list[int]]] = [
        (b.er, later),
        (b.est, later),
        # ACR before TR: TR leaves out the acts ACR asked about.
        (b.acr, every),
        (b.tr, later),
        (b.ct, every),
        (b.ocr, every),
        (b.stu, every),
        (b.era, every),
        (_order_balanced(b.rcr, b.rng), every),
        (_order_balanced(b.mpa, b.rng), later),
        (_order_balanced(b.prm, b.rng), later),
        (_order_balanced(b.tpg, b.rng), later),
    ]
    out: list[Candidate] = []
    for make, sessions in plans:
        made = 0
        for attempt in range(per_task * 12):
            if made == per_task or not sessions:
                break
            candidate = make(sessions[attempt % len(sessions)])
            if candidate is not None:
                out.append(candidate)
                made += 1
    # Evidence Availability: pairs of one available and one unavailable question at
    # the same session and query time, so that neither tells the label.
    ea_sessions = list(range(3, n))
    for _ in range(per_task * 12):
        if not ea_sessions or sum(c["task_type"] == "EA" for c in out) >= 2 * per_task:
            break
        index = b.rng.choice(ea_sessions)
        t = b.query_time(index)
        pair = [b.ea(index, available, t) for available in (True, False)]
        if pair[0] is not None and pair[1] is not None:
            out += [pair[0], pair[1]]
    return out
