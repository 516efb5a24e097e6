"""Stop signals as exceptions, never in the middle of starting a system.

While a command runs (`stop_signals_interrupt`), SIGTERM and SIGHUP raise
`Stopped` and SIGINT raises KeyboardInterrupt, so that the `with runtime`
blocks remove containers and processes on the way out. A signal that lands
between starting a system and taking hold of it (a child forked but not yet
recorded, a container created but not yet kept) would leak that system;
runtimes mark such steps `uninterrupted()`, and a signal inside one is raised
as soon as the step is done.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_depth = 0
_pending: int | None = None


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt would be, so that a run
    stopped by a scheduler, `kill` or a closed terminal cleans up exactly as Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raise(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(signum)


def _handler(signum: int, frame: FrameType | None) -> None:
    global _pending
    # Once stopping, further signals are ignored, so a second one cannot cut the removal
    # of containers and processes short (SIGKILL still ends the harness; the next start
    # removes what it left).
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    if _depth:
        _pending = signum
        return
    _raise(signum)


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A step that must not be cut in two by a stop signal; one that arrives is raised
    after it."""
    global _depth, _pending
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _pending is not None:
            signum, _pending = _pending, None
            _raise(signum)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While inside, the stop signals raise as the module docstring says."""
    previous = {s: signal.signal(s, _handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
