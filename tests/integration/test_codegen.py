"""The .proto generates and compiles in Go and C++ with Debian's plugins, by the commands
docs/PROTOCOL.md gives ("Generating code"), without any extra mapping flag; a minimal server
of each language (the generated service registered with an empty implementation) builds.

CI installs the tools (.ci/install_tools.py); the test requires them, it never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from apmbench.harness.check.model import CheckReport

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "PROTOCOL.md"
GO_IMPORT = "github.com/apmbench/apmbench-grpc/gen/go/apmbench/v1"
GOPATH_DEBIAN = "/usr/share/gocode"

GO_SERVER = """package main

import (
	"net"

	apmbenchv1 "GO_IMPORT"
	"google.golang.org/grpc"
)

type server struct {
	apmbenchv1.UnimplementedMemorySystemServer
}

func main() {
	s := grpc.NewServer()
	apmbenchv1.RegisterMemorySystemServer(s, &server{})
	lis, _ := net.Listen("unix", "/nonexistent/sock")
	_ = lis
}
""".replace("GO_IMPORT", GO_IMPORT)

CPP_SERVER = """#include <grpcpp/grpcpp.h>
#include "apmbench/v1/memory_system.grpc.pb.h"

class Server final : public apmbench::v1::MemorySystem::Service {
  grpc::Status Describe(grpc::ServerContext*, const apmbench::v1::DescribeRequest*,
                        apmbench::v1::SystemInfo* info) override {
    info->set_protocol_version("1.3");
    info->mutable_capabilities()->add_frame_encodings(apmbench::v1::FRAME_ENCODING_JPEG);
    return grpc::Status::OK;
  }
};

int main() {
  Server service;
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  apmbench::v1::QueryRequest q;
  // Protocol 1.3: interval_start_ms is optional, so 0 (DAY1 00:00:00) is distinguishable.
  q.set_interval_start_ms(0);
  return q.has_interval_start_ms() ? 0 : 1;
}
"""


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    assert not missing, (
        f"{', '.join(missing)} not on PATH: run `python3 .ci/install_tools.py` (as root) first"
    )


def _documented(language_flag: str) -> str:
    """The page's command whose first line carries `language_flag`, continuations joined."""
    lines = PAGE.read_text().splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("protoc ") and language_flag in line
    )
    command = []
    for line in lines[start:]:
        command.append(line.rstrip("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(command)


def _run(command: str | list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command,
        shell=isinstance(command, str),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "proto", tmp_path / "proto", ignore=shutil.ignore_patterns("*.py*"))
    return tmp_path


@pytest.mark.slow
def test_go_generates_with_the_documented_command_and_a_server_builds(tmp_path: Path) -> None:
    _need("protoc", "protoc-gen-go", "protoc-gen-go-grpc", "go")
    work = _tree(tmp_path)
    (work / "gen" / "go").mkdir(parents=True)
    _run(_documented("--go_out"), work)
    generated = work / "gen" / "go" / "apmbench" / "v1"
    assert {p.name for p in generated.iterdir()} == {
        "memory_system.pb.go",
        "memory_system_grpc.pb.go",
    }
    assert "package apmbenchv1" in (generated / "memory_system.pb.go").read_text()
    # Debian's grpc-go and protobuf-go live in a GOPATH; no module proxy is needed.
    gopath = work / "gopath"
    shutil.copytree(generated, gopath / "src" / GO_IMPORT)
    (gopath / "src" / "server").mkdir(parents=True)
    (gopath / "src" / "server" / "main.go").write_text(GO_SERVER)
    env = dict(
        os.environ,
        GOPATH=f"{gopath}{os.pathsep}{GOPATH_DEBIAN}",
        GO111MODULE="off",
        GOFLAGS="",
        GOCACHE=str(work / "gocache"),
    )
    _run(["go", "build", "-o", str(work / "server-bin"), "server"], work, env)
    assert (work / "server-bin").stat().st_size > 0


@pytest.mark.slow
def test_cpp_generates_with_the_documented_command_and_a_server_links(tmp_path: Path) -> None:
    _need("protoc", "grpc_cpp_plugin", "g++", "pkg-config")
    work = _tree(tmp_path)
    (work / "gen" / "cpp").mkdir(parents=True)
    _run(_documented("--cpp_out"), work)
    generated = work / "gen" / "cpp" / "apmbench" / "v1"
    assert {p.name for p in generated.iterdir()} == {
        "memory_system.pb.cc",
        "memory_system.pb.h",
        "memory_system.grpc.pb.cc",
        "memory_system.grpc.pb.h",
    }
    (work / "server.cc").write_text(CPP_SERVER)
    flags = _run(["pkg-config", "--cflags", "--libs", "grpc++", "protobuf"], work).split()
    sources = [
        "server.cc",
        *(str(generated / n) for n in ("memory_system.pb.cc", "memory_system.grpc.pb.cc")),
    ]
    _run(["g++", "-std=c++17", "-O0", "-I", "gen/cpp", *sources, "-o", "server-bin", *flags], work)
    # It runs: the optional field's presence survives (exit 0).
    _run([str(work / "server-bin")], work)


RUBY_SERVER = ROOT / "tests" / "fixtures" / "servers" / "ruby"


@pytest.mark.slow
def test_ruby_generates_with_the_documented_command_and_its_server_passes_check(
    tmp_path: Path,
) -> None:
    """The page's Ruby command with Debian's plugin, then tests/fixtures/servers/ruby (a
    server written from the .proto's text alone) on that code, sandboxed by `--command`:
    no check fails."""
    from apmbench.harness.check.render import failures

    _need("protoc", "grpc_ruby_plugin", "ruby")
    work = _tree(tmp_path)
    (work / "gen" / "ruby").mkdir(parents=True)
    _run(_documented("--ruby_out"), work)
    generated = work / "gen" / "ruby" / "apmbench" / "v1"
    assert {p.name for p in generated.iterdir()} == {
        "memory_system_pb.rb",
        "memory_system_services_pb.rb",
    }
    server = tmp_path / "server"
    shutil.copytree(RUBY_SERVER, server, ignore=shutil.ignore_patterns("gen"))
    shutil.copytree(work / "gen" / "ruby", server / "gen")
    # The descriptor set its reflection answers from (generate.sh's second command).
    _run(
        "protoc -I proto --include_imports --descriptor_set_out="
        f"{server / 'gen' / 'memory_system.binpb'} apmbench/v1/memory_system.proto",
        work,
    )
    report = _checked(f"ruby {server / 'server.rb'} {{address}}", server, tmp_path / "system.log")
    assert report.ok, "\n".join(failures(report))
    counts = report.counts()
    assert counts["pass"] >= 28 and counts["warn"] == 0, counts
    assert report.target["judged_by"] == "1.3"


SERVERS = ROOT / "tests" / "fixtures" / "servers"


def _checked(command: str, cwd: Path, log: Path) -> CheckReport:
    from apmbench.harness.check import run_suite, select
    from apmbench.harness.protocol.client import Deadlines
    from apmbench.harness.runtimes.command import command_process

    deadlines = Deadlines(control=30, push=60, query=30, state=120, end_session=60)
    runtime = command_process(command, log, deadlines, 60, sandbox=True, cwd=cwd)
    with runtime:
        return run_suite(runtime, select())


@pytest.mark.slow
def test_a_cpp_server_written_for_1_0_builds_from_the_current_proto_and_passes_check(
    tmp_path: Path,
) -> None:
    """tests/fixtures/servers/cpp: written to the 1.0 text (it declares 1.0, knows nothing of
    answer formats, accepts what 1.0 did not forbid), generated from today's .proto with the
    documented command. It compiles, and `check` judges it by 1.0: no failure, and a warning
    naming the version for each rule a later text added."""
    from apmbench.harness.check import Outcome
    from apmbench.harness.check.render import failures

    _need("protoc", "grpc_cpp_plugin", "g++", "pkg-config")
    binary = tmp_path / "bin" / "server"
    _run(["bash", str(SERVERS / "cpp" / "build.sh"), str(binary)], tmp_path)
    report = _checked(f"{binary} {{address}}", tmp_path, tmp_path / "system.log")
    assert report.ok, "\n".join(failures(report))
    assert report.target["judged_by"] == "1.0"
    warned = {r.name: r.reason for r in report.results if r.outcome is Outcome.WARN}
    assert set(warned) == {
        "misuse-malformed-items",
        "misuse-end-other-session",
        "misuse-import-bad-manifest",
    }, warned
    assert all(reason.startswith("rule new in 1.1: ") for reason in warned.values()), warned


@pytest.mark.slow
def test_a_go_server_written_for_1_2_builds_from_the_current_proto_and_passes_check(
    tmp_path: Path,
) -> None:
    """tests/fixtures/servers/go: written to the 1.2 text (it declares 1.2), reading every
    field through the generated getters (the evolution policy's portable idiom, which
    compiles whatever presence interval_start_ms has), generated from today's .proto. It
    compiles against Debian's grpc-go, and `check` judges it by 1.2: no failure."""
    from apmbench.harness.check import Outcome
    from apmbench.harness.check.render import failures

    _need("protoc", "protoc-gen-go", "protoc-gen-go-grpc", "go")
    binary = tmp_path / "bin" / "server"
    env = dict(os.environ, GOCACHE=str(tmp_path / "gocache"))
    _run(["bash", str(SERVERS / "go" / "build.sh"), str(binary)], tmp_path, env)
    report = _checked(f"{binary} {{address}}", tmp_path, tmp_path / "system.log")
    assert report.ok, "\n".join(failures(report))
    assert report.target["judged_by"] == "1.2"
    warned = {r.name: r.reason for r in report.results if r.outcome is Outcome.WARN}
    # Without reflection (Debian's grpc-go 1.33 reflection cannot see today's descriptors),
    # and a kind-9 turn accepted: 1.3 made an unknown kind count as none.
    assert set(warned) == {"reflection", "misuse-malformed-items"}, warned
    assert warned["misuse-malformed-items"].startswith("rule new in 1.3: "), warned
