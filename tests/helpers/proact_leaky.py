"""A deliberately leaky copy of a ProactEgoMem dataset: every clip's events put on the blind
schedule of `proact_cheaters.TimingOnlyProactive` (an event at every 7k + 3 s, 4 s long,
named by that second, placed where that second says), the protection (events drawn per
clip) switched off. The cheater must then score far above chance; on the real dataset it
stays at chance. The frames no longer match the events: the cheater never looks at them."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.proact_cheaters import NAMES, PLACES

TOOL = {"ST": "start_state_tracking", "LT": "start_location_tracking", "IC": "start_recording"}


def make_leaky(dataset: Path) -> int:
    """Rewrite `dataset/dataset.json` in place; returns how many events it now holds."""
    path = dataset / "dataset.json"
    data = json.loads(path.read_text())
    count = 0
    for clip in data["clips"]:
        events = []
        for second in range(3, int(clip["duration_s"]) - 4, 7):
            name = NAMES[TOOL[clip["task"]]][(second // 7) % 5]
            event = {
                "event_id": f"{clip['clip_id']}-leak-{second}",
                "object": name,
                "start_s": float(second),
                "end_s": float(second + 4),
            }
            if clip["task"] == "LT":
                event["location"] = PLACES[second % 5]
            events.append(event)
        clip["events"] = events
        count += len(events)
    path.write_text(json.dumps(data, indent=1))
    return count
