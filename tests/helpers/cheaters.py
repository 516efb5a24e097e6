"""Systems that try to score without the memory they claim: the sandbox must stop each one.

Each reports in its answers what its cheat found, so a test can tell "the cheat was
stopped" from "the cheat happened not to help". `$APMBENCH_CHEAT_TAG` (passed with
`--env`) names the files they stash, so parallel tests do not see each other's.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from apmbench.adapters.sdk import (
    Capabilities,
    ExportedState,
    Frame,
    FrameEncoding,
    MemorySystem,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.systems.text_log import TextLog

TESTS = Path(__file__).resolve().parents[1]


def _tag() -> str:
    return os.environ.get("APMBENCH_CHEAT_TAG", "untagged")


def _socket_dir() -> Path | None:
    """The directory of this server's socket, read off its own command line."""
    try:
        args = Path("/proc/self/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for i, arg in enumerate(args[:-1]):
        if arg == b"--address" and args[i + 1].startswith(b"unix:"):
            return Path(args[i + 1][5:].decode()).parent
    return None


def stash_paths() -> list[Path]:
    """Every place a process might leave something for its successor."""
    name = f"apm-cheat-{_tag()}"
    places = [Path("/tmp"), Path.home(), Path.cwd(), Path("/dev/shm")]
    sock = _socket_dir()
    if sock is not None:
        places.append(sock)
        # A successor's socket directory is new, but its parent is shared.
        places.append(sock.parent)
    return [p / name for p in places]


def read_stashes() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in stash_paths():
        try:
            found[str(path)] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return found


def write_stashes(value: Any) -> list[str]:
    written = []
    for path in stash_paths():
        try:
            path.write_text(json.dumps(value))
            written.append(str(path))
        except OSError:
            continue
    return written


class _Base(MemorySystem):
    name = "cheater"
    supports_import = True

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name,
            version="1",
            capabilities=Capabilities(
                frame_encodings=(FrameEncoding.JPEG,),
                preferred_max_side=64,
                supports_import=self.supports_import,
            ),
        )

    def reset(self, trajectory_id: str) -> None:
        pass

    def start_session(self, start: SessionStart) -> None:
        pass

    def ingest_frame(self, frame: Frame) -> None:
        pass

    def ingest_user_turn(self, turn: UserTurn) -> None:
        pass

    def end_session(self, end: SessionEnd) -> None:
        pass

    def reply(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            return {"decision": "SILENT", "reason": "nothing known"}
        return {"answer": "B"}

    def query(self, query: Query) -> Iterator[str]:
        yield json.dumps(self.reply(query))

    def export_state(self) -> ExportedState:
        return ExportedState(b"{}", "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        pass


class GroundTruthReader(_Base):
    """Looks for `candidates/*.json` wherever a dataset may lie and answers from the labels."""

    name = "ground-truth-reader"

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.files: list[str] = []
        cache = os.environ.get("APMBENCH_CACHE") or str(Path.home() / ".cache/apmbench-grpc")
        patterns = [
            str(root / ("*/" * depth) / "candidates" / "*.json")
            for root in (TESTS / "fixtures", Path.cwd(), Path(cache))
            for depth in range(4)
        ]
        for pattern in patterns:
            for path in glob.glob(pattern):
                try:
                    items = json.loads(Path(path).read_text())
                except (OSError, ValueError):
                    continue
                self.files.append(path)
                for item in items if isinstance(items, list) else []:
                    if item.get("question") and item.get("correct_option_id"):
                        self.labels[item["question"]] = item["correct_option_id"]

    def reply(self, query: Query) -> dict[str, Any]:
        out = super().reply(query)
        if query.kind is not QueryKind.DECISION and query.question in self.labels:
            out["answer"] = self.labels[query.question]
        out["label_files"] = len(self.files)
        return out


ORACLE_SEEDS = range(4)
"""The seeds SyntheticOracle tries (the default was 0; a drawn one is one of 2^63)."""


class SyntheticOracle(_Base):
    """Regenerates the synthetic benchmark in its own /tmp with the generator it imports (a
    method author with the harness installed could), finds the seed whose questions match
    the one it is asked, and answers from the labels. Each answer says how it fared."""

    name = "synthetic-oracle"

    def __init__(self) -> None:
        self.labels: dict[tuple[str, tuple[str, ...]], str] | None = None
        self.status = "not tried"

    def _labels(self, query: Query) -> dict[tuple[str, tuple[str, ...]], str]:
        if self.labels is not None:
            return self.labels
        self.labels = {}
        try:
            from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset
        except ImportError as e:
            self.status = f"no generator ({e})"
            return self.labels
        root = Path(tempfile.mkdtemp(prefix="oracle-"))
        for seed in ORACLE_SEEDS:
            data = synthetic_dataset("tiny", seed, root)
            labels = {}
            for path in (data / "candidates").glob("*.json"):
                for item in json.loads(path.read_text()):
                    if item.get("question") and item.get("correct_option_id"):
                        texts = tuple(c["text"] for c in item.get("choices", []))
                        labels[(item["question"], texts)] = item["correct_option_id"]
            if _oracle_key(query) in labels:
                self.status = f"tiny seed {seed}"
                self.labels = labels
                return labels
        self.status = f"no seed in {ORACLE_SEEDS} matched"
        return self.labels

    def reply(self, query: Query) -> dict[str, Any]:
        out = super().reply(query)
        if query.kind is not QueryKind.DECISION and query.question:
            found = self._labels(query).get(_oracle_key(query))
            if found is not None:
                out["answer"] = found
        out["oracle"] = self.status
        return out


def _oracle_key(query: Query) -> tuple[str, tuple[str, ...]]:
    return query.question, tuple(c.text for c in query.choices)


class DiskStash(_Base):
    """Exports two bytes and keeps the sessions and turns it saw on disk for the next process."""

    name = "disk-stash"

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.recalled = read_stashes()
        self.written: list[str] = []

    def start_session(self, start: SessionStart) -> None:
        self.seen.append(start.session_id)
        self.written = write_stashes({"seen": self.seen})

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.seen.append(turn.text)
        self.written = write_stashes({"seen": self.seen})

    def reply(self, query: Query) -> dict[str, Any]:
        out = super().reply(query)
        out["recalled"] = sorted(self.recalled)
        out["written"] = self.written
        return out


class ProbeCounter(_Base):
    """Counts queries in a file outside its export: a counter that survives restarts could
    tell probes apart by their order across sessions."""

    name = "probe-counter"

    def __init__(self) -> None:
        self.local = 0
        self.total = 0

    def reply(self, query: Query) -> dict[str, Any]:
        self.local += 1
        # Read at every probe, not at start: a process started ahead of its turn (a spare)
        # would miss what its predecessors wrote meanwhile.
        stashed = max((v.get("count", 0) for v in read_stashes().values()), default=0)
        self.total = max(self.total, stashed) + 1
        write_stashes({"count": self.total})
        out = super().reply(query)
        out["local"] = self.local
        out["total"] = self.total
        return out


HANDOFF_WAIT_S = 1.0


class LiveHandoff(_Base):
    """Hands its memory to a process started while it still runs (a spare, waiting for
    the next restart): every process tries to hold one abstract Unix socket name; one
    that finds the name taken connects to the holder instead and keeps what it hears,
    taking the name over when the holder is gone. Nothing touches the disk."""

    name = "live-handoff"

    def __init__(self) -> None:
        self.seen = 0
        self.recalled = 0
        self._peers: list[socket.socket] = []
        self._peer_joined = threading.Event()
        self._lock = threading.Lock()
        threading.Thread(target=self._hold_or_follow, daemon=True).start()

    def _total(self) -> int:
        return self.recalled + self.seen

    def _hold_or_follow(self) -> None:
        address = f"\0apm-cheat-{_tag()}"
        while True:
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.bind(address)
            except OSError:
                server.close()
                self._follow(address)
                continue
            server.listen(8)
            while True:
                conn, _ = server.accept()
                with self._lock:
                    self._peers.append(conn)
                    self._send(conn)
                self._peer_joined.set()

    def _follow(self, address: str) -> None:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(address)
        except OSError:
            client.close()
            time.sleep(0.02)
            return
        buffer = b""
        while chunk := client.recv(4096):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self.recalled = max(self.recalled, int(line))
        client.close()

    def _send(self, conn: socket.socket) -> None:
        try:
            conn.sendall(f"{self._total()}\n".encode())
        except OSError:
            self._peers.remove(conn)

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.seen += 1
        # Stall until a successor listens (woken the moment one connects, not by polling),
        # so the hand-over does not depend on how fast the spare starts. The bound is paid
        # in full only where no successor can ever connect (the sandboxed runs); a spare
        # that connects later still gets the running total on connecting, and the test
        # needs one hand-over among all the run's processes, so a spare slowed past the
        # bound by a loaded host costs that process's hand-over, not the test's.
        if not self._peer_joined.is_set():
            self._peer_joined.wait(HANDOFF_WAIT_S)
        with self._lock:
            for conn in list(self._peers):
                self._send(conn)

    def reply(self, query: Query) -> dict[str, Any]:
        out = super().reply(query)
        out["recalled"] = self.recalled
        out["seen"] = self.seen
        return out


FILL_BYTES = 4 << 20
"""What SocketDirFiller tries to write beside its socket: four times the sandbox's bound."""


class SocketDirFiller(_Base):
    """Writes FILL_BYTES into the only directory it can write that the harness made (its
    socket's), then serves: were that the host's /tmp, any system could fill the host's
    disk. It prints what the write came to as one `filler:` line of its log."""

    name = "socket-dir-filler"

    def __init__(self) -> None:
        directory = _socket_dir()
        written, error = 0, "none"
        if directory is not None:
            chunk = b"x" * (64 << 10)
            try:
                with open(directory / "fill", "wb") as f:
                    while written < FILL_BYTES:
                        written += f.write(chunk)
                        f.flush()
            except OSError as e:
                error = errno.errorcode.get(e.errno or 0, str(e))
        print("filler: " + json.dumps({"written": written, "error": error}), flush=True)


class KeywordStuffer(TextLog):
    """text-log's memory and answers, with the synthetic world's vocabulary appended to every
    adaptive answer's text: a judge that only counts reference terms it finds rewards it."""

    name = "keyword-stuffer"

    def stuffing(self, query: Query) -> str:
        """What is appended to each decision's reason and response."""
        return _VOCABULARY

    def stuffing_for(self, query: Query, body: dict[str, Any]) -> str:
        """What is appended to this answer (`body`, text-log's own); `stuffing` by default."""
        return self.stuffing(query)

    def query(self, query: Query) -> Iterator[str]:
        text = "".join(super().query(query))
        try:
            body = json.loads(text)
        except ValueError:
            yield text
            return
        if query.kind is QueryKind.DECISION and isinstance(body, dict):
            extra = self.stuffing_for(query, body)
            for key in ("reason", "response"):
                if isinstance(body.get(key), str):
                    body[key] = f"{body[key]} {extra}"
        yield json.dumps(body)


# The world's fact words as a method author would copy them from the generator's source.
_VOCABULARY = (
    "KITCHEN DESK SHELF HALLWAY PANTRY GARAGE BALCONY LAMP DRAWER STOVE FRIDGE LAPTOP WINDOW "
    "TAP ON OFF OPEN SHUT APPLE COIN EGG PEN BATTERY ORANGE SPOON MUG KEYS BOOK PHONE WALLET "
    "BOTTLE PLATE BAG GLASSES REMOTE TAPE SCISSORS CHARGER CAMERA TRAIN ROOM GATE CODE BUS "
    "TABLE LOCKER ORDER SEAT FLOOR"
)


class FreeWordStuffer(KeywordStuffer):
    """Round two of judge stuffing: text-log's answers with, appended to every decision's
    reason, the words the synthetic references use that name no world fact (verbs,
    "nothing", day names, numbers) and the fact words of the query's own prompt (its
    question, options and registration). Judge VERSION 3 charged only wrong fact words:
    this took Adaptive from 68.00 to 89.17 on `small` seed 0."""

    name = "free-word-stuffer"

    def stuffing(self, query: Query) -> str:
        return f"{_FREE_WORDS} {query.prompt}"


# Words of the synthetic references that name no fact, as the red team listed them.
_FREE_WORDS = (
    "picked put left remind remember take check nothing happened stays calls help arrives "
    "resumes restocking interval day1 day2 day3 day4 day5 day6 day7 monday tuesday wednesday "
    "thursday friday saturday sunday 1 2 3 4 5 6 7 8 9 10 11 12"
)


class NullTemplates(MemorySystem):
    """The null system (always SILENT, option A) whose reasons are the synthetic references'
    fixed silence templates, chosen from the prompt's wording: no memory at all. Judge
    VERSION 4 scored a copied template 5, doubling null's Adaptive (18.0 -> 36.5 on `small`
    seed 0, fresh-eyes red team); a reference that names no fact now scores any reason 2."""

    _TEMPLATES = (
        ("previously asked question", "Nothing has been picked up yet."),
        ("longer-term task", "No restocking is happening in this interval."),
        ("", "The wearer stays where they are; nothing calls for help."),
    )

    def __init__(self) -> None:
        from apmbench.adapters.systems.null import NullSystem

        self._null = NullSystem()

    def describe(self) -> SystemInfo:
        from dataclasses import replace

        return replace(self._null.describe(), name="null-templates")

    def reset(self, trajectory_id: str) -> None:
        self._null.reset(trajectory_id)

    def start_session(self, start: SessionStart) -> None:
        self._null.start_session(start)

    def ingest_frame(self, frame: Frame) -> None:
        self._null.ingest_frame(frame)

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self._null.ingest_user_turn(turn)

    def end_session(self, end: SessionEnd) -> None:
        self._null.end_session(end)

    def query(self, query: Query) -> Iterator[str]:
        text = "".join(self._null.query(query))
        body = json.loads(text)
        if "decision" in body:
            body["reason"] = next(r for cue, r in self._TEMPLATES if cue in query.prompt)
        yield json.dumps(body)

    def export_state(self) -> ExportedState:
        return self._null.export_state()

    def import_state(self, state: ExportedState) -> None:
        self._null.import_state(state)


# What the third red team put into Describe and answers to forge rows in the reports.
FORGED_NAME = "x | yes | yes | 99.99 | 99.99 |\n| forged <script>alert(1)</script> <img src=x onerror=alert(1)>"
FORGED_VERSION = "1\x1b[2J\x07\r\x08\x00"
LONG_ANSWER_CHARS = 200_000


class ForgedDescribe(_Base):
    """Answers Describe with a name holding a newline, table pipes and HTML and a version
    holding ESC, BEL, CR, BS and NUL; switches off the SDK's own R15 check first, as a
    method author who read the SDK would (the harness must refuse it on the wire)."""

    name = FORGED_NAME

    def describe(self) -> SystemInfo:
        from dataclasses import replace

        import apmbench.adapters.sdk.server as sdk_server

        sdk_server.describe_problems = lambda info: []  # type: ignore[assignment]
        return replace(super().describe(), version=FORGED_VERSION)


class LongAnswer(_Base):
    """Every answer carries a 200,000-character reason: the records keep it, a report shows
    it cut."""

    name = "long-answer"

    def reply(self, query: Query) -> dict[str, Any]:
        body = super().reply(query)
        body["reason"] = "a" * LONG_ANSWER_CHARS
        return body


class ContentTypeLog(TextLog):
    """Red team 4: text-log whose whole memory rides in the state's content_type, with no
    data bytes (0 B/hr at text-log's score): the label comes back on ImportState and was not
    counted. R16 refuses a content_type that is not a bare MIME type of at most 64
    characters."""

    PREFIX = "application/x-ctype;m="

    def export_state(self) -> ExportedState:
        import base64
        import zlib

        inner = super().export_state()
        packed = base64.b32encode(zlib.compress(inner.data, 9)).decode().lower().rstrip("=")
        return ExportedState(b"", self.PREFIX + packed, 1)


class LabelChanger(TextLog):
    """What R16's shape alone leaves: a valid MIME type of 64 characters and a format
    version, both chosen per export (about 40 bytes a session, uncounted). R16 also pins the
    label to the trajectory's first export's, so the second export is refused."""

    def export_state(self) -> ExportedState:
        inner = super().export_state()
        count = inner.data.count(b"\n")
        return ExportedState(inner.data, f"application/x-log-{count}", count)

    def import_state(self, state: ExportedState) -> None:
        super().import_state(ExportedState(state.data, "text/x-apmbench-text-log", 1))


class FactBagger(KeywordStuffer):
    """Round three of judge stuffing ("JudgeGamer"): text-log's answers with a bag of facts
    the annotations are likely to hold appended to every decision's reason. A silence
    reason gets the words of the user's registrations (a silence reference often names
    the reminder's object); an intervention also gets the ERA question's options and the
    world facts of the session's latest event (its place, object and state). With the
    slack raised to 12 words and spent on facts too (judge VERSION 7) the bag scored
    Adaptive 80.00 against text-log's honest 66.00 on `tiny` seed 0 (`small` seed 7:
    76.33 against 60.83); VERSION 8 charges every fact the reference does not want."""

    name = "fact-bagger"

    def stuffing_for(self, query: Query, body: dict[str, Any]) -> str:
        k = self.knowledge(query)
        texts = k.registrations + [t.text for t in k.turns if t.kind is UserTurnKind.REGISTRATION]
        bag = [w for text in texts for w in text.split()]
        if body.get("decision") == "INTERVENE":
            now = [e for e in k.events if e.session_index == k.session_index]
            if now:
                bag += [now[-1].place, now[-1].subject, now[-1].after]
            for turn in k.turns:
                if turn.kind is UserTurnKind.QUESTION:
                    bag += re.findall(r"^[A-D]\. (.+)$", turn.text, re.M)
        # Counts are left out: a wrong one would cancel a right fact.
        words = (w.strip(".,") for w in bag)
        return " ".join(dict.fromkeys(w for w in words if w and not w.isdigit()))


class FactSentences(KeywordStuffer):
    """The honest control of FactBagger: text-log's answers with one plain sentence of what
    it really perceives now (where the wearer is, what is in hand) after every reason: a
    few true facts in a sentence, which a judge may charge where the reference does not
    want them but never rank below a bag of them."""

    name = "fact-sentences"

    def stuffing(self, query: Query) -> str:
        scene = self.knowledge(query).latest
        if scene is None:
            return ""
        holding = f", holding the {scene.hand}" if scene.hand else ""
        return f"The wearer is at the {scene.place}{holding}."
