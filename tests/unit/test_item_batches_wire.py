"""How items are packed into PushItemBatches messages (R7, R13)."""

from __future__ import annotations

from apmbench.adapters.sdk import wire
from apmbench.adapters.sdk.types import Frame, FrameEncoding, StreamItem, UserTurn, UserTurnKind


def frame(t: int, size: int) -> Frame:
    return Frame(t, FrameEncoding.JPEG, 4, 3, bytes([t % 251]) * size)


def test_batches_keep_the_order_and_the_bound() -> None:
    items: list[StreamItem] = [
        frame(0, 400),
        UserTurn(1, UserTurnKind.QUESTION, "where?"),
        frame(2, 400),
        frame(3, 400),
        frame(4, 1500),  # over the bound alone: it travels alone
        frame(5, 10),
    ]
    batches = list(wire.item_batches(items, limit=1000))
    sizes = [[len(m.frame.data) for m in b.items if m.HasField("frame")] for b in batches]
    assert sizes == [[400, 400], [400], [1500], [10]]
    unpacked = [wire.item_from_pb(m) for m in wire.unbatched(batches)]
    assert unpacked == items


def test_no_items_no_batches() -> None:
    assert list(wire.item_batches([])) == []
