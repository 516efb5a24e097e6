"""A run directory as one content-addressed, deterministic tar: its bundle.

The bundle holds everything a result rests on (manifest, records, predictions, reports,
logs cut to `LOG_BOUND_BYTES` each) and an index, `BUNDLE.json`, that lists every member
with its sha256 and size. The bundle's id is the sha256 of the canonical index (its JSON
with sorted keys and no spaces, the `id` key left out), so the id names the exact bytes
of every member. The same run gives the same archive, byte for byte: members are sorted,
and every header has mtime 0, uid/gid 0, no user or group name and mode 0644.

`read_bundle` is the one reader: a leaderboard site calls it to get the index and the
members' bytes; `verify` (harness/orchestrate/bundle/verify.py) checks them.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import cast

from apmbench.harness.errors import RunDirError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.run import records
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest

FORMAT = "apmbench-bundle"
VERSION = 1
INDEX_NAME = "BUNDLE.json"
SUFFIX = ".apmbundle.tar"
MANIFEST_NAME = "manifest.json"
PREDICTIONS_NAME = "predictions.json"
REPORT_NAME = "report.json"
SUITES_PAGE = "suites.json"
"""What `evaluate --benchmark all` writes beside its runs (harness/orchestrate/multi_suite.py)."""

LOG_BOUND_BYTES = 1 << 20
"""The most of one file under logs/ a bundle keeps: its first and last half MiB around a
line that says how much was cut. A system's log can reach --max-log-size (64 MiB) per
start and holds nothing a number rests on; the index records the original size and
sha256 of every file it cut."""

LEFT_OUT = {
    "judge-cache": "judge replies: anyone holding the run directory can edit them, so a "
    "re-score asks the judge again instead",
    "work": "state snapshots of a trajectory still running: no result rests on them",
}
"""Top-level folders of a run directory that never go into a bundle, and why."""

_CUT_MARK = "\n[apmbench bundle: {cut} bytes of this log cut here (bound {bound} bytes)]\n"


class BundleError(RunDirError):
    """A file that is not a readable apmbench bundle, or a run directory that cannot be
    bundled; the message says which and what to do."""


@dataclass(frozen=True)
class Bundle:
    """A bundle as read: its index (BUNDLE.json) and the bytes of every other member.

    Nothing here is checked beyond the index being an apmbench bundle index: call
    `apmbench.harness.orchestrate.bundle.verify_bundle` for that.
    """

    path: Path
    index: JsonObject
    """BUNDLE.json, parsed."""
    members: Mapping[str, bytes]
    """Every plain file of the archive but BUNDLE.json, by its path in the archive."""
    anomalies: tuple[str, ...] = ()
    """Entries that are not plain files, repeat a name or have an unsafe path (each is
    left out of `members`; verify fails on them)."""

    @property
    def id(self) -> str:
        """The id the index states (verify checks it is the sha256 of the canonical index)."""
        return str(self.index.get("id", ""))

    @property
    def blind(self) -> bool:
        """Whether the bundle is of a run on a public part (it holds predictions.json)."""
        return PREDICTIONS_NAME in self.members

    @property
    def runs(self) -> list[str]:
        """The prefix of each run the bundle holds, from its members: "" for a bundle of one
        run directory, "<suite>/" for each run of `evaluate --benchmark all`."""
        found = {
            name[: -len(MANIFEST_NAME)]
            for name in self.members
            if name == MANIFEST_NAME
            or (name.endswith(f"/{MANIFEST_NAME}") and name.count("/") == 1)
        }
        return sorted(found)

    def run(self, prefix: str) -> Bundle:
        """The run at `prefix` as a bundle of its own (its members without the prefix; the
        same index)."""
        if not prefix:
            return self
        members = {k[len(prefix) :]: v for k, v in self.members.items() if k.startswith(prefix)}
        return Bundle(self.path, self.index, members, self.anomalies)

    def json(self, name: str) -> JSON:
        """Member `name` parsed as JSON; None when it is absent or not valid JSON."""
        data = self.members.get(name)
        if data is None:
            return None
        try:
            parsed: JSON = json.loads(data)
        except ValueError:
            return None
        return parsed


def canonical(index: Mapping[str, object]) -> bytes:
    """The bytes the id hashes: the index without its `id`, keys sorted, no spaces."""
    body = {k: v for k, v in index.items() if k != "id"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def bundle_id(index: Mapping[str, object]) -> str:
    return hashlib.sha256(canonical(index)).hexdigest()


def harness_version() -> str:
    try:
        return metadata.version("apmbench-grpc")
    except metadata.PackageNotFoundError:
        return "unknown"


def summary(manifest: Manifest, blind: bool) -> JsonObject:
    """What the index states about one run, all of it from its manifest (verify recomputes
    it from the bundled manifest.json and compares)."""
    synthetic: JSON = None
    if manifest.synthetic is not None:
        synthetic = {"preset": manifest.synthetic.preset, "seed": manifest.synthetic.seed}
    image: JSON = None
    if manifest.image_id is not None:
        image = {"id": manifest.image_id, "repo_digests": list(manifest.image_repo_digests)}
    judge = manifest.judge.get("kind")
    return {
        "suite": manifest.benchmark or "apmbench",
        "harness_version": manifest.harness_version,
        "system": manifest.system_name,
        "system_version": manifest.system_version,
        "dataset": manifest.dataset_name,
        # On a public part the run's dataset hash is the public part's (split.json names it).
        "dataset_hash": manifest.dataset_hash,
        "public_part": blind,
        "synthetic": synthetic,
        "runtime": manifest.runtime_kind,
        "image": image,
        "judge": None if judge is None else str(judge),
        "started_at": manifest.started_at,
        "finished_at": manifest.finished_at,
    }


def run_dirs(root: Path) -> list[tuple[str, Path]]:
    """The runs under `root`, each with the prefix its members get in the bundle: `root`
    itself (prefix ""), or the runs of `evaluate --benchmark all|a,b` (OUT/<suite>/, named
    in OUT/suites.json; prefix "<suite>/")."""
    if (root / MANIFEST_NAME).is_file():
        return [("", root)]
    page = root / SUITES_PAGE
    if not page.is_file():
        raise BundleError(
            f"{root} is not an apmbench run directory (no {MANIFEST_NAME}, nor the "
            f"{SUITES_PAGE} of `evaluate --benchmark all`)"
        )
    try:
        listed = json.loads(page.read_text()).get("suites")
        names = [str(entry["name"]) for entry in listed]
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise BundleError(f"{page} is not the suites page `evaluate` writes ({e})") from None
    for name in names:
        if not (root / name / MANIFEST_NAME).is_file():
            raise BundleError(f"{root / name} (a suite {page} names) holds no {MANIFEST_NAME}")
    return [(f"{name}/", root / name) for name in names]


@dataclass(frozen=True)
class _Member:
    name: str
    data: bytes
    cut: JsonObject | None = None


def _read_log(path: Path) -> tuple[bytes, JsonObject | None]:
    """A log's bytes, cut to `LOG_BOUND_BYTES` (read in blocks: a log can be large)."""
    size = path.stat().st_size
    if size <= LOG_BOUND_BYTES:
        return path.read_bytes(), None
    half = LOG_BOUND_BYTES // 2
    whole = hashlib.sha256()
    with path.open("rb") as f:
        head = f.read(half)
        whole.update(head)
        while block := f.read(1 << 20):
            whole.update(block)
        f.seek(size - half)
        tail = f.read(half)
    cut = size - 2 * half
    mark = _CUT_MARK.format(cut=cut, bound=LOG_BOUND_BYTES).encode()
    return head + mark + tail, {
        "size": size,
        "sha256": whole.hexdigest(),
        "kept": f"the first and the last {half} bytes, around a line saying {cut} were cut",
    }


def _walk(root: Path) -> Iterator[Path]:
    for here, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            yield Path(here) / name
        # os.walk lists links to folders among dirs and does not follow them: name them too.
        for name in dirs:
            if (Path(here) / name).is_symlink():
                yield Path(here) / name


def collect(root: Path) -> tuple[list[_Member], list[JsonObject]]:
    """The members of a bundle of `root`, sorted by name, and what was left out."""
    members: list[_Member] = []
    left: dict[str, JsonObject] = {}
    for path in _walk(root):
        name = path.relative_to(root).as_posix()
        folders = name.split("/")[:-1]
        skipped = next((k for k, f in enumerate(folders) if f in LEFT_OUT), None)
        if skipped is not None:
            where = "/".join(folders[: skipped + 1]) + "/"
            why = LEFT_OUT[folders[skipped]]
            entry = left.setdefault(where, {"path": where, "files": 0, "why": why})
            entry["files"] = cast(int, entry["files"]) + 1
            continue
        if path.name.startswith(".") and path.name.endswith(".tmp"):
            left[name] = {"path": name, "files": 1, "why": "an unfinished write"}
            continue
        if path.is_symlink() or not path.is_file():
            left[name] = {"path": name, "files": 1, "why": "not a plain file (a link)"}
            continue
        if path.name == INDEX_NAME:
            raise BundleError(f"{root} holds a {INDEX_NAME}: it is not a run directory")
        data, cut = _read_log(path) if "logs" in folders else (path.read_bytes(), None)
        members.append(_Member(name, data, cut))
    members.sort(key=lambda m: m.name)
    return members, [left[k] for k in sorted(left)]


def build_index(root: Path) -> tuple[JsonObject, list[_Member]]:
    """The index of `root`'s bundle (id included) and its members."""
    root = Path(root)
    runs: list[JSON] = []
    for prefix, run_dir in run_dirs(root):
        manifest = load_manifest(run_dir / MANIFEST_NAME)
        blind = (run_dir / PREDICTIONS_NAME).is_file()
        if not blind and not (run_dir / REPORT_NAME).is_file():
            raise BundleError(
                f"{run_dir} has neither a report.json nor a predictions.json: finish the run "
                "(`apmbench-grpc evaluate ... --resume`) or score it (`apmbench-grpc score`) "
                "first"
            )
        runs.append({"dir": prefix, **summary(manifest, blind)})
    members, left_out = collect(root)
    listed: list[JSON] = []
    for m in members:
        entry: JsonObject = {
            "path": m.name,
            "sha256": hashlib.sha256(m.data).hexdigest(),
            "size": len(m.data),
        }
        if m.cut is not None:
            entry["cut"] = m.cut
        listed.append(entry)
    index: JsonObject = {
        "format": FORMAT,
        "version": VERSION,
        "bundled_by": harness_version(),
        "suites": [cast(JsonObject, r)["suite"] for r in runs],
        "runs": runs,
        "log_bound_bytes": LOG_BOUND_BYTES,
        "members": listed,
        "left_out": cast(list[JSON], left_out),
    }
    index["id"] = bundle_id(index)
    return index, members


def _tar_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


@dataclass(frozen=True)
class Written:
    """What `write_bundle` wrote."""

    id: str
    path: Path
    index: JsonObject


def write_bundle(run_dir: Path, out: Path) -> Written:
    """Bundle `run_dir` (a run directory, or the OUT of `evaluate --benchmark all`) into the
    file `out`, or into `out/<id>.apmbundle.tar` when `out` is a directory; written to a
    temporary name first, so a reader never sees half a bundle."""
    index, members = build_index(run_dir)
    out = Path(out)
    target = out / f"{index['id']}{SUFFIX}" if out.is_dir() else out
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with tmp.open("wb") as f:
            with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as tar:
                text = records.dump(index).encode()
                # The index first: a reader streaming the archive meets it before the rest.
                tar.addfile(_tar_info(INDEX_NAME, len(text)), io.BytesIO(text))
                for m in members:
                    tar.addfile(_tar_info(m.name, len(m.data)), io.BytesIO(m.data))
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Written(str(index["id"]), target, index)


def _unsafe(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not name:
        return "an unsafe path (absolute, or with '..')"
    return None


def read_bundle(path: Path) -> Bundle:
    """Read the bundle at `path`: its index (BUNDLE.json, parsed) and every member's bytes.

    Raises `BundleError` (an `ApmbenchError`) when `path` cannot be read, is not a tar
    archive, holds no BUNDLE.json, or its BUNDLE.json is not an apmbench bundle index of a
    version this harness reads. Checks nothing else: hashes, the id and the numbers are
    `verify_bundle`'s. Reads the whole archive into memory (a bundle's logs are bounded).
    """
    path = Path(path)
    members: dict[str, bytes] = {}
    anomalies: list[str] = []
    index_bytes: bytes | None = None
    try:
        with tarfile.open(path, mode="r:*") as tar:
            for info in tar:
                name = info.name
                if not info.isreg():
                    anomalies.append(f"{name}: not a plain file")
                    continue
                problem = _unsafe(name)
                if problem is not None:
                    anomalies.append(f"{name}: {problem}")
                    continue
                if name in members or (name == INDEX_NAME and index_bytes is not None):
                    anomalies.append(f"{name}: in the archive more than once")
                    continue
                handle = tar.extractfile(info)
                data = handle.read() if handle is not None else b""
                if name == INDEX_NAME:
                    index_bytes = data
                else:
                    members[name] = data
    except FileNotFoundError:
        raise BundleError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BundleError(f"{path} is a directory: give a bundle file (*{SUFFIX})") from None
    except (tarfile.TarError, EOFError, OSError) as e:
        raise BundleError(f"{path} is not a readable bundle (not a tar archive: {e})") from None
    if index_bytes is None:
        raise BundleError(f"{path} holds no {INDEX_NAME}: it is not an apmbench bundle")
    try:
        index = json.loads(index_bytes)
    except ValueError as e:
        raise BundleError(f"{path}: its {INDEX_NAME} is not valid JSON ({e})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise BundleError(f"{path}: its {INDEX_NAME} is not an apmbench bundle index")
    if index.get("version") != VERSION:
        raise BundleError(
            f"{path}: bundle version {index.get('version')!r} is not supported (this harness "
            f"reads version {VERSION}): verify it with the harness that wrote it"
        )
    return Bundle(path, cast(JsonObject, index), members, tuple(anomalies))
