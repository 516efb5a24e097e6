"""Sessions produced ahead in the background: the same frames, each session still once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from apmbench.adapters.sdk.types import Frame
from apmbench.harness.media.frame_cache import SessionFrames
from apmbench.harness.media.frames import FrameSettings, decode_session
from apmbench.harness.media.timeline import Session
from apmbench.harness.suites.apmbench.dataset import load_dataset

SETTINGS = FrameSettings()


def _key(frames: list[Frame]) -> list[tuple[int, int, int, bytes]]:
    return [(f.time_ms, f.width, f.height, f.data) for f in frames]


def test_prefetched_sessions_equal_a_fresh_decode_and_are_produced_once(
    mini: Path, tmp_path: Path
) -> None:
    sessions = list(enumerate(load_dataset(mini).trajectories[0].sessions))
    produced: list[str] = []
    lock = threading.Lock()

    def produce(session: Session, settings: FrameSettings) -> Iterator[Frame]:
        with lock:
            produced.append(session.session_id)
        return decode_session(session, settings)

    with SessionFrames(SETTINGS, tmp_path / "spill", produce=produce) as cache:
        cache.prefetch(sessions)
        # The replays ask in another order than the prefetch, racing it.
        for index, session in reversed(sessions):
            assert _key(list(cache.frames(index, session))) == _key(
                list(decode_session(session, SETTINGS))
            )
        assert cache._prefetcher is not None
        cache._prefetcher.join(timeout=60)
        assert sorted(produced) == sorted(s.session_id for _, s in sessions)
        assert cache.productions == len(sessions)


def test_closing_during_a_prefetch_stops_it(mini: Path, tmp_path: Path) -> None:
    sessions = list(enumerate(load_dataset(mini).trajectories[0].sessions))
    cache = SessionFrames(SETTINGS, tmp_path / "spill")
    cache.prefetch(sessions)
    cache.close()
    assert cache._prefetcher is not None and not cache._prefetcher.is_alive()
    assert not list((tmp_path / "spill").glob("*.frames"))
