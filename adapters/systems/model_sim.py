"""`model-sim`: a reference system that costs what a model-based method costs.

The yardstick for the price of `restart` persistence (docs/performance.md): a
real method's start is a model load, and its frames and questions take model
time. `model-sim` reproduces those costs and nothing else:

- at start it reads a weights file of `APMBENCH_SIM_WEIGHTS_MB` MiB and checks
  its SHA-256 against the sidecar written with it (real disk reads and real
  hashing, the host's share of a load), then sleeps `APMBENCH_SIM_LOAD_S`
  seconds (the transfer to the accelerator, which leaves the host idle);
- each frame costs `APMBENCH_SIM_FRAME_MS` and each query
  `APMBENCH_SIM_QUERY_MS` milliseconds (asleep: the accelerator's time);
- its memory and answers are those of `APMBENCH_SIM_MEMORY` (a registered
  system, `text-log` by default), so its scores are that system's.

The weights live in the directory `APMBENCH_VLM_MODEL` names, as a model's do
(the sandbox binds it read-only; a container gets it with --mount), else in
~/.cache/apmbench-model-sim. A missing file is generated there once
(deterministic bytes, written beside and renamed into place); generate it
first with `python -m apmbench.adapters.systems.model_sim prepare [DIR]`.
Where no model is named and the home directory is not writable (a sandbox, a
container's read-only root), each start generates it in its own temp dir:
it then costs a write too.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    InvalidArgument,
    MemorySystem,
    Query,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)

MODEL_ENV = "APMBENCH_VLM_MODEL"
DEFAULT_DIR = Path.home() / ".cache" / "apmbench-model-sim"
CHUNK = 1 << 20


@dataclass(frozen=True)
class SimSettings:
    """What a `model-sim` start and call cost, from APMBENCH_SIM_* (defaults in brackets)."""

    weights_mb: int = 64
    """APMBENCH_SIM_WEIGHTS_MB [64]: the weights file read and hashed at every start."""
    load_s: float = 2.0
    """APMBENCH_SIM_LOAD_S [2]: seconds asleep after the read (the accelerator transfer)."""
    frame_ms: float = 0.0
    """APMBENCH_SIM_FRAME_MS [0]: per frame ingested."""
    query_ms: float = 0.0
    """APMBENCH_SIM_QUERY_MS [0]: per query answered (decisions included)."""
    memory: str = "text-log"
    """APMBENCH_SIM_MEMORY [text-log]: the registered system whose memory and answers it has."""
    weights_dir: Path = DEFAULT_DIR
    """$APMBENCH_VLM_MODEL, else ~/.cache/apmbench-model-sim."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SimSettings:
        env = os.environ if environ is None else environ

        def number(name: str, default: float) -> float:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = float(raw)
            except ValueError:
                raise InvalidArgument(f"{name}={raw!r}: give a number") from None
            if value < 0:
                raise InvalidArgument(f"{name}={raw!r}: must not be negative")
            return value

        model = env.get(MODEL_ENV)
        return cls(
            weights_mb=int(number("APMBENCH_SIM_WEIGHTS_MB", cls.weights_mb)),
            load_s=number("APMBENCH_SIM_LOAD_S", cls.load_s),
            frame_ms=number("APMBENCH_SIM_FRAME_MS", cls.frame_ms),
            query_ms=number("APMBENCH_SIM_QUERY_MS", cls.query_ms),
            memory=env.get("APMBENCH_SIM_MEMORY") or cls.memory,
            weights_dir=Path(model) if model else DEFAULT_DIR,
        )

    @property
    def weights_path(self) -> Path:
        return self.weights_dir / f"model-sim-{self.weights_mb}MiB.bin"


def prepare_weights(directory: Path, size_mb: int) -> Path:
    """The weights file of `size_mb` MiB in `directory` and its `.sha256` sidecar, generated
    once: deterministic bytes (the same file on every machine), written beside and renamed
    into place so a killed generation leaves nothing a start would trust."""
    path = directory / f"model-sim-{size_mb}MiB.bin"
    sidecar = path.with_suffix(".sha256")
    if path.exists() and sidecar.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    block = hashlib.sha256(b"apmbench model-sim").digest() * (CHUNK // 32)
    fd, tmp = tempfile.mkstemp(prefix=".weights-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for i in range(size_mb):
                # A block that differs per MiB: no two pages alike, so nothing deduplicates it.
                chunk = i.to_bytes(8, "little") + block[8:]
                out.write(chunk)
                digest.update(chunk)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sidecar.write_text(digest.hexdigest() + "\n")
    return path


def load_weights(settings: SimSettings) -> str:
    """Read the weights file whole and check its SHA-256; returns the digest."""
    path = settings.weights_path
    sidecar = path.with_suffix(".sha256")
    if not (path.exists() and sidecar.exists()):
        try:
            path = prepare_weights(settings.weights_dir, settings.weights_mb)
        except OSError as e:
            if settings.weights_dir == DEFAULT_DIR:
                # No model named, no writable home: this start's own temp dir.
                here = Path(tempfile.gettempdir()) / "apmbench-model-sim"
                return load_weights(replace(settings, weights_dir=here))
            raise InvalidArgument(
                f"model-sim: no weights at {path} and the directory is not writable here ({e}); "
                "generate them first with `python -m apmbench.adapters.systems.model_sim "
                f"prepare {settings.weights_dir} --mb {settings.weights_mb}` and name that "
                f"directory in {MODEL_ENV}"
            ) from e
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    expected = sidecar.read_text().strip()
    if digest.hexdigest() != expected:
        raise InvalidArgument(
            f"model-sim: the weights at {path} do not match their checksum ({sidecar}): "
            "delete both and start again to regenerate them"
        )
    return expected


class ModelSim(MemorySystem):
    """Another registered system's memory, at a model's price (the module says which)."""

    def __init__(self, settings: SimSettings | None = None) -> None:
        from apmbench.adapters.systems import load_system

        self.settings = settings or SimSettings.from_env()
        if self.settings.memory == "model-sim":
            raise InvalidArgument("APMBENCH_SIM_MEMORY=model-sim: name another registered system")
        began = time.monotonic()
        self.digest = load_weights(self.settings)
        time.sleep(self.settings.load_s)
        self.load_s = time.monotonic() - began
        self.inner = load_system(self.settings.memory)

    def describe(self) -> SystemInfo:
        info = self.inner.describe()
        s = self.settings
        details = {
            **info.details,
            "model_sim_memory": s.memory,
            "model_sim_weights_mb": str(s.weights_mb),
            "model_sim_weights_sha256": self.digest,
            "model_sim_load_s": f"{s.load_s:g}",
            "model_sim_frame_ms": f"{s.frame_ms:g}",
            "model_sim_query_ms": f"{s.query_ms:g}",
        }
        return SystemInfo(
            name="model-sim", version=info.version, capabilities=info.capabilities, details=details
        )

    def reset(self, trajectory_id: str) -> None:
        self.inner.reset(trajectory_id)

    def start_session(self, start: SessionStart) -> None:
        self.inner.start_session(start)

    def ingest_frame(self, frame: Frame) -> None:
        if self.settings.frame_ms:
            time.sleep(self.settings.frame_ms / 1000)
        self.inner.ingest_frame(frame)

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.inner.ingest_user_turn(turn)

    def end_session(self, end: SessionEnd) -> None:
        self.inner.end_session(end)

    def query(self, query: Query) -> Iterator[str]:
        if self.settings.query_ms:
            time.sleep(self.settings.query_ms / 1000)
        return self.inner.query(query)

    def export_state(self) -> ExportedState:
        return self.inner.export_state()

    def import_state(self, state: ExportedState) -> None:
        self.inner.import_state(state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apmbench.adapters.systems.model_sim")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="generate the weights file once")
    prep.add_argument("directory", nargs="?", type=Path, default=None)
    prep.add_argument("--mb", type=int, default=None)
    args = parser.parse_args(argv)
    settings = SimSettings.from_env()
    directory = args.directory or settings.weights_dir
    path = prepare_weights(directory, args.mb if args.mb is not None else settings.weights_mb)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
