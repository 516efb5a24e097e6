"""Starts forked from a template for tests that probe a bare sandbox: the same probe,
run by helpers.template_probes:RunProbe (or RunSender, RunReceiver) in a template start."""

from __future__ import annotations

import select
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from apmbench.harness.runtimes.sandbox import Sandbox
from apmbench.harness.runtimes.template import Template, TemplateChild


def start_argv(system: str, directory: Path) -> list[str]:
    """A fresh start's command line (ProcessRuntime.argv) for `system` in `directory`."""
    return [sys.executable, "-m", "apmbench.adapters", system, "--address",
            f"unix:{directory}/sock", "--exit-with-parent"]  # fmt: skip


@contextmanager
def template(sandbox: Sandbox, log: Path) -> Iterator[Template]:
    made = Template(sandbox, log)
    try:
        yield made
    finally:
        made.stop()


class Started:
    """A start forked from a template, and its output so far."""

    def __init__(self, tpl: Template, system: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="apm-t-", dir="/tmp"))
        self.child: TemplateChild = tpl.launch(start_argv(system, self.dir), self.dir)
        self.output = b""

    def line(self, starting: str, timeout: float = 60.0) -> str:
        """The first output line that starts with `starting` (waiting for it)."""
        end = time.monotonic() + timeout
        while True:
            for line in self.output.decode(errors="replace").splitlines():
                if line.startswith(starting):
                    return line
            left = end - time.monotonic()
            ready, _, _ = select.select([self.child.stdout], [], [], max(left, 0))
            chunk = self.child.stdout.read1(1 << 16) if ready else b""  # type: ignore[attr-defined]
            if not chunk:
                raise AssertionError(f"no line {starting!r}; output: {self.output!r}")
            self.output += chunk

    def stop(self) -> None:
        self.child.kill()
        self.child.wait(10)
        self.child.close()
        shutil.rmtree(self.dir, ignore_errors=True)
