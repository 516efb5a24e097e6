"""A small egocentric world and what happens in it, second by second.

A trajectory has four places, each with four slots seen left to right: one
fixture with a state (a LAMP that is ON or OFF, a DRAWER OPEN or SHUT), one
pile of countable items, and room for movable objects. The wearer walks
between places, picks objects up and puts them down elsewhere, switches
fixtures, adds and removes items, and reads screens whose text changes. Every
change is an `Event` at a whole second; the frame of second t shows the world
after all events at or before t.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from apmbench.adapters.perception.events import describe
from apmbench.adapters.perception.layout import Scene, SlotView
from apmbench.harness.media.timecode import MS_PER_DAY, format_ms

PLACES = ("KITCHEN", "DESK", "SHELF", "HALLWAY", "PANTRY", "GARAGE", "BALCONY")
FIXTURES = {
    "LAMP": ("ON", "OFF"),
    "DRAWER": ("OPEN", "SHUT"),
    "STOVE": ("ON", "OFF"),
    "FRIDGE": ("OPEN", "SHUT"),
    "LAPTOP": ("ON", "OFF"),
    "WINDOW": ("OPEN", "SHUT"),
    "TAP": ("ON", "OFF"),
}
ITEMS = ("APPLE", "COIN", "EGG", "PEN", "BATTERY", "ORANGE", "SPOON")
OBJECTS = (
    "MUG",
    "KEYS",
    "BOOK",
    "PHONE",
    "WALLET",
    "BOTTLE",
    "PLATE",
    "BAG",
    "GLASSES",
    "REMOTE",
    "TAPE",
    "SCISSORS",
    "CHARGER",
    "CAMERA",
)
SCREEN_WORDS = ("TRAIN", "ROOM", "GATE", "CODE", "BUS", "TABLE", "LOCKER", "ORDER", "SEAT", "FLOOR")


@dataclass(frozen=True)
class Event:
    time_ms: int
    session_index: int
    kind: str  # goto pickup putdown toggle count screen
    place: str
    subject: str = ""  # object, fixture or item name
    before: str = ""
    after: str = ""

    def describe(self) -> str:
        """The event as a past-tense phrase, used for options and references."""
        return describe(self.kind, self.place, self.subject, self.before, self.after)


@dataclass
class PlaceState:
    name: str
    fixture: str
    fixture_state: str
    item: str
    item_count: int
    screen: str
    # Slot index -> movable object; slots 0 and 3 hold fixture and items.
    objects: dict[int, str] = field(default_factory=dict)

    def layout(self) -> tuple[SlotView, ...]:
        slots = [SlotView("", "", 0)] * 4
        slots[self.fixture_slot] = SlotView(self.fixture, self.fixture_state, 1)
        slots[self.item_slot] = SlotView(self.item, "", self.item_count)
        for i, name in self.objects.items():
            slots[i] = SlotView(name, "", 1)
        return tuple(slots)

    fixture_slot: int = 0
    item_slot: int = 3

    def free_slots(self) -> list[int]:
        used = {self.fixture_slot, self.item_slot, *self.objects}
        return [i for i in range(4) if i not in used]

    def where(self, name: str) -> int | None:
        for i, n in self.objects.items():
            if n == name:
                return i
        return None


@dataclass
class WorldState:
    places: dict[str, PlaceState]
    here: str
    hand: str = ""

    def scene(self, time_ms: int) -> Scene:
        p = self.places[self.here]
        return Scene(format_ms(time_ms), p.name, p.screen, p.layout(), self.hand)

    def copy(self) -> WorldState:
        return WorldState(
            {k: replace(v, objects=dict(v.objects)) for k, v in self.places.items()},
            self.here,
            self.hand,
        )


def screen_text(rng: random.Random) -> str:
    return f"{rng.choice(SCREEN_WORDS)} {rng.randint(100, 9999)}"


def initial_world(rng: random.Random) -> WorldState:
    names = rng.sample(PLACES, 4)
    fixtures = rng.sample(sorted(FIXTURES), 4)
    items = rng.sample(ITEMS, 4)
    objects = rng.sample(OBJECTS, 5)
    places: dict[str, PlaceState] = {}
    for i, name in enumerate(names):
        fixture_slot, item_slot = rng.sample(range(4), 2)
        places[name] = PlaceState(
            name,
            fixtures[i],
            rng.choice(FIXTURES[fixtures[i]]),
            items[i],
            rng.randint(3, 9),
            screen_text(rng),
            fixture_slot=fixture_slot,
            item_slot=item_slot,
        )
    for obj in objects:
        free = [(n, s) for n, p in places.items() for s in p.free_slots()]
        name, slot = rng.choice(free)
        places[name].objects[slot] = obj
    return WorldState(places, names[0])


def apply(state: WorldState, event: Event) -> None:
    p = state.places[event.place]
    if event.kind == "goto":
        state.here = event.place
    elif event.kind == "pickup":
        slot = p.where(event.subject)
        assert slot is not None
        del p.objects[slot]
        state.hand = event.subject
    elif event.kind == "putdown":
        p.objects[int(event.after)] = event.subject
        state.hand = ""
    elif event.kind == "toggle":
        p.fixture_state = event.after
    elif event.kind == "count":
        p.item_count = int(event.after)
    elif event.kind == "screen":
        p.screen = event.after


def simulate_session(
    rng: random.Random, state: WorldState, index: int, start_ms: int, seconds: int
) -> list[Event]:
    """Events of one session, applied to `state`; the hand is empty again at the end."""
    events: list[Event] = []
    t = 3
    while t < seconds - 6:
        event = _next_event(rng, state, index, start_ms + t * 1000, t > seconds - 20)
        if event is not None:
            apply(state, event)
            events.append(event)
        t += rng.randint(4, 8)
    if state.hand:
        # Put whatever is held down before the session ends, where there is room.
        here = state.places[state.here]
        if not here.free_slots():
            target = next(n for n, p in state.places.items() if p.free_slots())
            event = Event(start_ms + (seconds - 5) * 1000, index, "goto", target)
            apply(state, event)
            events.append(event)
        place = state.places[state.here]
        event = Event(
            start_ms + (seconds - 3) * 1000,
            index,
            "putdown",
            place.name,
            state.hand,
            "",
            str(place.free_slots()[0]),
        )
        apply(state, event)
        events.append(event)
    return events


def _next_event(
    rng: random.Random, state: WorldState, index: int, at_ms: int, closing: bool
) -> Event | None:
    here = state.places[state.here]
    # Carrying something makes walking somewhere else likely before putting it down.
    carrying = bool(state.hand)
    options: list[tuple[float, str]] = [
        (3.0 if carrying else 1.2, "goto"),
        (1.0, "toggle"),
        (0.8, "count"),
        (0.5, "screen"),
    ]
    if state.hand and here.free_slots():
        options.append((2.0, "putdown"))
    if not state.hand and here.objects and not closing:
        options.append((2.5, "pickup"))
    kind = rng.choices([k for _, k in options], weights=[w for w, _ in options])[0]
    if kind == "goto":
        target = rng.choice([n for n in state.places if n != state.here])
        return Event(at_ms, index, "goto", target)
    if kind == "pickup":
        obj = rng.choice(sorted(here.objects.values()))
        return Event(at_ms, index, "pickup", here.name, obj)
    if kind == "putdown":
        slot = rng.choice(here.free_slots())
        return Event(at_ms, index, "putdown", here.name, state.hand, "", str(slot))
    if kind == "toggle":
        a, b = FIXTURES[here.fixture]
        after = b if here.fixture_state == a else a
        return Event(at_ms, index, "toggle", here.name, here.fixture, here.fixture_state, after)
    if kind == "count":
        delta = rng.choice([-2, -1, 1, 1, 2, 3])
        # At least 3, so that CT's four consecutive options can put the answer at any rank.
        count = min(20, max(3, here.item_count + delta))
        if count == here.item_count:
            return None
        return Event(at_ms, index, "count", here.name, here.item, str(here.item_count), str(count))
    after = screen_text(rng)
    return Event(at_ms, index, "screen", here.name, "SCREEN", here.screen, after)


@dataclass(frozen=True)
class SessionPlan:
    session_id: str
    day_id: str
    start_ms: int
    seconds: int
    events: tuple[Event, ...]
    # World state at the session's start (the frames of second t apply events <= t).
    opening: WorldState

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.seconds * 1000

    def state_at(self, time_ms: int) -> WorldState:
        state = self.opening.copy()
        for e in self.events:
            if e.time_ms > time_ms:
                break
            apply(state, e)
        return state


def plan_sessions(rng: random.Random, sessions: int, seconds: int) -> list[SessionPlan]:
    """Sessions over several days with real gaps: hours within a day, days between."""
    state = initial_world(rng)
    plans: list[SessionPlan] = []
    day, clock_s = 0, rng.randint(7, 10) * 3600
    for index in range(sessions):
        if index:
            if rng.random() < 0.5 or clock_s > 17 * 3600:
                day += rng.randint(1, 2)
                clock_s = rng.randint(7, 11) * 3600
            else:
                clock_s += rng.randint(2, 5) * 3600
        clock_s += rng.randint(0, 59) * 60
        start_ms = day * MS_PER_DAY + clock_s * 1000
        opening = state.copy()
        events = simulate_session(rng, state, index, start_ms, seconds)
        plans.append(
            SessionPlan(
                f"S{index + 1:03d}", f"DAY{day + 1}", start_ms, seconds, tuple(events), opening
            )
        )
        clock_s += seconds + 60
    return plans
