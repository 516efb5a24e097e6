"""`--gpus` for a sandboxed `--system` or `--command`, on a host without a GPU: stand-in
device nodes (character devices with /dev/null's numbers, made with mknod, so an ioctl on
them answers ENOTTY) and a stand-in driver library tree with a loader listing that names
it. Every box here is a real bubblewrap box with the hardening and the seccomp filter.

What is checked: the box holds exactly the chosen nodes (never uvm-tools, modeset or the
MIG capabilities) and the listed driver libraries, read-only; the filter lets the device's
ioctl through (ENOTTY from the driver, not EPERM); a start that changes its node's mode or
times changes its own copy only; without `--gpus` no /dev/nvidia* node is visible; a host
without a node is refused naming it (exit 2 from the command line); a GPU run gets no
spare and records what it passed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes import gpu, runtime_spec, wants_spare
from apmbench.harness.runtimes.command import command_process
from apmbench.harness.runtimes.docker.settings import ContainerSettings, GpuRequest
from apmbench.harness.runtimes.process import sandboxed_process
from apmbench.harness.runtimes.sandbox import Sandbox, SandboxPolicy

NULL = os.makedev(1, 3)
STAND_INS = (
    "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia0", "nvidia1",
    "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2",
)  # fmt: skip
LIBS = "/opt/apmbench-gpu-test/lib64"


def _dev(root: Path, names: tuple[str, ...] = STAND_INS) -> Path:
    dev = root / "dev"
    for name in names:
        (dev / name).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(dev / name, stat.S_IFCHR | 0o666, NULL)
        os.chmod(dev / name, 0o666)
    return dev


def _driver(root: Path) -> tuple[Path, str]:
    """A driver library tree under `root` and the loader listing naming it (at LIBS)."""
    tree = root / "driver"
    lib = tree / LIBS.lstrip("/")
    lib.mkdir(parents=True)
    for name in ("libcuda.so.550.54.14", "libnvidia-ml.so.550.54.14", "libfoo.so.1"):
        (lib / name).write_text(f"stand-in {name}\n")
    (lib / "libcuda.so.1").symlink_to("libcuda.so.550.54.14")
    (lib / "libnvidia-ml.so.1").symlink_to("libnvidia-ml.so.550.54.14")
    listing = (
        "5 libs found in cache `/etc/ld.so.cache'\n"
        f"\tlibnvidia-ml.so.1 (libc6,x86-64) => {LIBS}/libnvidia-ml.so.1\n"
        f"\tlibfoo.so.1 (libc6,x86-64) => {LIBS}/libfoo.so.1\n"
        f"\tlibcuda.so.1 (libc6,x86-64) => {LIBS}/libcuda.so.1\n"
        f"\tlibcuda.so.1 (libc6) => /opt/apmbench-gpu-test/lib32/libcuda.so.1\n"
        f"\tlibcuda.so.1 (libc6,AArch64) => {LIBS}/libcuda.so.1\n"
    )
    return tree, listing


@pytest.fixture
def host(tmp_path: Path) -> tuple[Path, Path, str]:
    """(device directory, driver root, loader listing) of a stand-in GPU host."""
    dev = _dev(tmp_path)
    tree, listing = _driver(tmp_path)
    return dev, tree, listing


PROBE = r"""
import errno, fcntl, json, os, sys
out = {"dev": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia")), "ioctl": {},
       "read": {}, "write": {}}
for name in out["dev"]:
    fd = os.open("/dev/" + name, os.O_RDWR)
    try:
        fcntl.ioctl(fd, 0x5401)  # TCGETS: the driver's answer, if the filter lets it through
        out["ioctl"][name] = "ok"
    except OSError as e:
        out["ioctl"][name] = errno.errorcode[e.errno]
    os.close(fd)
for path in sys.argv[1:]:
    try:
        out["read"][path] = open(path).read().strip()
    except OSError as e:
        out["read"][path] = errno.errorcode[e.errno]
    try:
        open(path, "a").close()
        out["write"][path] = "ok"
    except OSError as e:
        out["write"][path] = errno.errorcode[e.errno]
print(json.dumps(out))
"""


def _box(passthrough: gpu.GpuPassthrough | None) -> Sandbox:
    return Sandbox(SandboxPolicy(read_only=(), gpu=passthrough))


def _probe(box: Sandbox, *paths: str) -> dict[str, Any]:
    done = box.run(["/usr/bin/python3", "-c", PROBE, *paths], timeout=60)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_box_holds_exactly_the_chosen_nodes_and_the_driver_libraries_read_only(
    host: tuple[Path, Path, str],
) -> None:
    dev, tree, listing = host
    passed = gpu.GpuPassthrough.find(GpuRequest.parse("device=1"), dev, tree, listing)
    libcuda, nvml, foo = (
        f"{LIBS}/{n}" for n in ("libcuda.so.1", "libnvidia-ml.so.1", "libfoo.so.1")
    )
    seen = _probe(_box(passed), libcuda, nvml, foo, "/opt/apmbench-gpu-test/lib32/libcuda.so.1")
    assert seen["dev"] == ["nvidia-uvm", "nvidia1", "nvidiactl"]  # no uvm-tools, modeset, caps
    assert seen["read"][libcuda] == "stand-in libcuda.so.550.54.14"
    assert seen["read"][nvml] == "stand-in libnvidia-ml.so.550.54.14"
    assert seen["write"][libcuda] == seen["write"][nvml] == "EROFS"
    # Not a driver library, and not this machine's ABI: not bound.
    assert seen["read"][foo] == "ENOENT"
    assert seen["read"]["/opt/apmbench-gpu-test/lib32/libcuda.so.1"] == "ENOENT"
    # The filter lets the device's ioctl through: the driver (here /dev/null's) answers.
    assert seen["ioctl"] == {"nvidia-uvm": "ENOTTY", "nvidia1": "ENOTTY", "nvidiactl": "ENOTTY"}


def test_all_and_a_count_pick_the_lowest_numbered_gpus(host: tuple[Path, Path, str]) -> None:
    dev, tree, listing = host
    every = gpu.GpuPassthrough.find(GpuRequest.parse("all"), dev, tree, listing)
    one = gpu.GpuPassthrough.find(GpuRequest.parse("1"), dev, tree, listing)
    assert [n.name for n in every.nodes] == ["nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"]
    assert [n.name for n in one.nodes] == ["nvidiactl", "nvidia-uvm", "nvidia0"]
    # `--gpus 0` names GPU 0 (a count of none is `none`).
    zero = gpu.GpuPassthrough.find(GpuRequest.parse("0"), dev, tree, listing)
    assert [n.name for n in zero.nodes] == ["nvidiactl", "nvidia-uvm", "nvidia0"]
    assert _probe(_box(every))["dev"] == ["nvidia-uvm", "nvidia0", "nvidia1", "nvidiactl"]


def test_without_gpus_the_box_shows_no_nvidia_node(host: tuple[Path, Path, str]) -> None:
    box = _box(None)
    assert not any("nvidia" in word for word in box.wrap(["true"]))
    assert _probe(box)["dev"] == []


MODE_AND_TIMES = r"""
import os, sys, json
out = {}
for name in ("nvidia0", "nvidiactl"):
    path = "/dev/" + name
    out[name] = {"before": oct(os.stat(path).st_mode & 0o7777)}
    try:
        os.chmod(path, 0o600)
        os.utime(path, ns=(123456789 * 10**9, 987654321 * 10**9))
        out[name]["changed"] = True
    except OSError as e:
        out[name]["changed"] = e.strerror
print(json.dumps(out))
"""


def test_a_start_that_changes_its_nodes_changes_only_its_own(
    host: tuple[Path, Path, str],
) -> None:
    """The box's uid is the harness's on the host, here root, which owns the host's nodes:
    a bound host node would take a mode and times the next start reads (a store across
    restarts). Each start gets copies of its own."""
    dev, tree, listing = host
    before = {n: os.stat(dev / n) for n in ("nvidia0", "nvidiactl")}
    box = _box(gpu.GpuPassthrough.find(GpuRequest.parse("1"), dev, tree, listing))
    if os.geteuid() == 0:
        assert box.device_copies is not None
    first = box.run(["/usr/bin/python3", "-c", MODE_AND_TIMES], timeout=60)
    second = box.run(["/usr/bin/python3", "-c", MODE_AND_TIMES], timeout=60)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    for name, seen in json.loads(second.stdout).items():
        assert seen["before"] == "0o666", f"{name}: the earlier start's chmod reached this one"
        after = os.stat(dev / name)
        assert (after.st_mode, after.st_mtime_ns) == (
            before[name].st_mode,
            before[name].st_mtime_ns,
        )
    if os.geteuid() != 0:
        return  # the host's nodes are bound, and the box's uid does not own them
    # The control: the host's nodes bound as they are, the first start's change reaches the
    # second.
    box.device_copies = None
    first = box.run(["/usr/bin/python3", "-c", MODE_AND_TIMES], timeout=60)
    second = box.run(["/usr/bin/python3", "-c", MODE_AND_TIMES], timeout=60)
    assert json.loads(first.stdout)["nvidia0"]["changed"] is True
    assert json.loads(second.stdout)["nvidia0"]["before"] == "0o600"
    assert os.stat(dev / "nvidia0").st_mtime_ns == 987654321 * 10**9


@pytest.mark.parametrize(
    ("present", "request_text", "named"),
    [
        ((), "all", "nvidiactl"),
        (("nvidiactl",), "device=0", "nvidia-uvm"),
        (("nvidiactl", "nvidia-uvm"), "device=0", "nvidia0"),
        (("nvidiactl", "nvidia-uvm", "nvidia0"), "device=0,1", "nvidia1"),
        (("nvidiactl", "nvidia-uvm", "nvidia0", "nvidia1"), "3", "nvidia2"),
        (("nvidiactl", "nvidia-uvm"), "all", "nvidia0"),
    ],
)
def test_a_host_without_the_node_is_refused_naming_it(
    tmp_path: Path, present: tuple[str, ...], request_text: str, named: str
) -> None:
    dev = _dev(tmp_path, present) if present else tmp_path / "dev"
    with pytest.raises(ConfigError, match=f"{dev / named} is missing on this host"):
        gpu.GpuPassthrough.find(GpuRequest.parse(request_text), dev, tmp_path, "")


def test_a_uuid_is_refused_with_the_form_to_give(host: tuple[Path, Path, str]) -> None:
    dev, tree, listing = host
    with pytest.raises(ConfigError, match="not a device number"):
        gpu.GpuPassthrough.find(GpuRequest.parse("GPU-8f2a"), dev, tree, listing)


def test_gpus_goes_with_a_fresh_sandboxed_start_only(host: tuple[Path, Path, str],
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    dev, _, _ = host
    monkeypatch.setattr(gpu, "DEV_DIR", dev)
    monkeypatch.setattr(gpu, "ldconfig_listing", lambda: "")
    one = GpuRequest.parse("device=0")
    log = tmp_path / "system.log"
    with pytest.raises(ConfigError, match="--no-sandbox"):
        sandboxed_process("null", log, Deadlines(), 30, sandbox=False, gpus=one)
    with pytest.raises(ConfigError, match="--start fresh"):
        sandboxed_process("null", log, Deadlines(), 30, sandbox=True, gpus=one, start="template")
    with pytest.raises(ConfigError, match="--no-sandbox"):
        command_process("true {address}", log, Deadlines(), 30, sandbox=False, gpus=one)
    made = command_process("true {address}", log, Deadlines(), 30, sandbox=True, gpus=one)
    assert made.sandbox is not None and made.sandbox.policy.gpu is not None
    with pytest.raises(ConfigError, match="only for --image, --system or --command"):
        runtime_spec(endpoint="unix:/nowhere", container=ContainerSettings(gpus=one))
    assert not wants_spare(runtime_spec(system="null", spare=True,
                                       container=ContainerSettings(gpus=one)))  # fmt: skip
    assert not wants_spare(runtime_spec(image="x:y", spare=True,
                                       container=ContainerSettings(gpus=one)))  # fmt: skip
    assert wants_spare(runtime_spec(system="null", spare=True))


@pytest.fixture
def stand_in_host(host: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    dev, tree, listing = host
    monkeypatch.setattr(gpu, "DEV_DIR", dev)
    monkeypatch.setattr(gpu, "LIB_ROOT", tree)
    monkeypatch.setattr(gpu, "ldconfig_listing", lambda: listing)
    yield dev


@pytest.mark.slow
def test_a_system_evaluates_with_its_gpu_and_no_spare(
    stand_in_host: Path, mini: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(mini), "--system", "null", "--gpus", "device=1",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    runtime = manifest["runtime"]
    assert runtime["spare"] is False
    passed = runtime["sandbox"]["gpu"]
    assert passed["devices"] == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia1"]
    assert passed["libraries"] == [f"{LIBS}/libcuda.so.1", f"{LIBS}/libnvidia-ml.so.1"]
    report = json.loads((out / "report.json").read_text())
    assert report["sandbox"]["gpus"] == "device=1"


def test_the_command_line_names_the_missing_node(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(gpu, "DEV_DIR", tmp_path / "dev")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--synthetic", "tiny", "--system", "vlm-simplestream", "--gpus", "0",
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'dev' / 'nvidiactl'} is missing on this host" in result.output
    assert not out.exists()


def test_the_installed_command_on_this_host_exits_2_naming_the_node(tmp_path: Path) -> None:
    """The real command on the real /dev: a GPU-less host lacks /dev/nvidiactl; a GPU host
    lacks /dev/nvidia4095."""
    exe = Path(sys.executable).parent / "apmbench-grpc"
    out = tmp_path / "run"
    done = subprocess.run(
        [str(exe), "evaluate", "--synthetic", "tiny", "--system", "vlm-simplestream",
         "--gpus", "device=4095", "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    node = "/dev/nvidiactl" if not Path("/dev/nvidiactl").exists() else "/dev/nvidia4095"
    assert f"{node} is missing on this host" in done.stderr + done.stdout
    assert not out.exists()
