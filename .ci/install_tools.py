#!/usr/bin/env python3
"""Install the system tools CI needs, one at a time, only those that are missing.

Why one at a time: a machine may already carry a tool from another source
(Node.js 20 with its own npm from a vendor repository, a Docker client in
/usr/local/bin). Installing Debian's packages for every tool in one apt-get line
then fails as a whole ("nodejs : Conflicts: npm"), so a tool that is present, from
wherever, is kept, and each missing one is installed by itself, so a failure names
the tool that could not be had.

Standard library only: it runs before the project's virtual environment exists.

    python3 .ci/install_tools.py            # install what is missing
    python3 .ci/install_tools.py --dry-run  # print the plan, change nothing
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    command: str  # what must be on PATH afterwards
    package: str  # the Debian package that provides it
    why: str
    marker: str = ""  # for a library (no command): a file it installs, under INSTALL_ROOT

    def present(self, path: str | None) -> bool:
        if self.marker:
            return os.path.exists(os.path.join(_root(), self.marker.lstrip("/")))
        return shutil.which(self.command, path=path) is not None

    def where(self, path: str | None) -> str:
        if self.marker:
            return os.path.join(_root(), self.marker.lstrip("/"))
        return str(shutil.which(self.command, path=path))


def _root() -> str:
    # Where library markers are looked for: "/" on a machine, a directory in the tests.
    return os.environ.get("INSTALL_TOOLS_ROOT", "/")


TOOLS: tuple[Tool, ...] = (
    Tool("dockerd", "docker.io", "the Docker engine of the container tier"),
    Tool("mmdebstrap", "mmdebstrap", "the Debian root the base image is built from"),
    Tool("bwrap", "bubblewrap", "the sandbox every --system and --command process runs in"),
    Tool("runsc", "runsc", "gVisor: the application kernel of --start snapshot"),
    Tool("node", "nodejs", "the Node.js template server (containers/template-node)"),
    Tool("npm", "npm", "installs the Node.js template's packages"),
    Tool("chromium", "chromium", "the viewer's browser test"),
    # Code generation in other languages, as docs/PROTOCOL.md documents it
    # (tests/integration/test_codegen.py).
    Tool("protoc", "protobuf-compiler", "generates Go and C++ from the .proto"),
    Tool("grpc_cpp_plugin", "protobuf-compiler-grpc", "protoc's gRPC C++ plugin"),
    Tool("protoc-gen-go", "protoc-gen-go", "protoc's Go plugin"),
    Tool("protoc-gen-go-grpc", "protoc-gen-go-grpc", "protoc's gRPC Go plugin"),
    Tool("go", "golang-go", "builds the generated Go server"),
    Tool("g++", "g++", "builds the generated C++ server"),
    # ruby-grpc-tools pulls in ruby, Debian's ruby-grpc (with the health service) and
    # ruby-google-protobuf: the Ruby server of tests/fixtures/servers/ruby.
    Tool("grpc_tools_ruby_protoc", "ruby-grpc-tools", "Ruby, its gRPC and the Ruby server test"),
    Tool("pkg-config", "pkg-config", "finds the gRPC C++ libraries' flags"),
    Tool(
        "grpc++ headers",
        "libgrpc++-dev",
        "the gRPC C++ library the generated server links with",
        marker="/usr/include/grpcpp/grpcpp.h",
    ),
    Tool(
        "grpc-go",
        "golang-google-grpc-dev",
        "Debian's grpc-go (a GOPATH, no module proxy) for the generated Go server",
        marker="/usr/share/gocode/src/google.golang.org/grpc/server.go",
    ),
    Tool(
        "protobuf-go",
        "golang-google-protobuf-dev",
        "Debian's protobuf-go for the generated Go server",
        marker="/usr/share/gocode/src/google.golang.org/protobuf/proto/proto.go",
    ),
)


class InstallError(Exception):
    pass


def missing(tools: tuple[Tool, ...], path: str | None) -> list[Tool]:
    return [t for t in tools if not t.present(path)]


def plan(tools: tuple[Tool, ...], path: str | None) -> list[list[str]]:
    """The apt-get commands, in order: one update, then one install per missing tool."""
    absent = missing(tools, path)
    if not absent:
        return []
    commands = [["apt-get", "update", "-q"]]
    for tool in absent:
        commands.append(["apt-get", "install", "-y", "-q", tool.package])
    return commands


def install(tools: tuple[Tool, ...], path: str | None) -> None:
    absent = missing(tools, path)
    for tool in tools:
        state = "missing" if tool in absent else "present: " + tool.where(path)
        print(f"install-tools: {tool.command:<16} {state}", flush=True)
    if not absent:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if path is not None:
        env["PATH"] = path
    _run(["apt-get", "update", "-q"], env, "the package lists (apt-get update)")
    for tool in absent:
        print(f"install-tools: installing {tool.package} for {tool.command} ({tool.why})", flush=True)
        command = ["apt-get", "install", "-y", "-q", tool.package]
        _run(command, env, f"{tool.command} (Debian package {tool.package}, {tool.why})")
        if not tool.present(path):
            where = tool.marker or f"{tool.command} on PATH"
            raise InstallError(
                f"{tool.command}: Debian package {tool.package} installed, yet {where} "
                "is missing; install it by hand and run again"
            )


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-12:])
        raise InstallError(
            f"could not install {what}: `{' '.join(command)}` exited {done.returncode}\n{tail}\n"
            "Install that tool by hand (any source will do: a present tool is kept) and run again."
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="print the apt-get commands, run nothing")
    args = parser.parse_args(argv)
    path = os.environ.get("PATH")
    if args.dry_run:
        for tool in missing(TOOLS, path):
            print(f"missing {tool.command} -> {tool.package}")
        for command in plan(TOOLS, path):
            print(" ".join(command))
        return 0
    try:
        install(TOOLS, path)
    except InstallError as error:
        print(f"install-tools: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
