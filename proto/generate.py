"""Generate the Python code for the protocol, or check that it is in sync.

    python proto/generate.py          # rewrite proto/apmbench/v1/*_pb2*.py(i), the
                                      # reference sections of docs/PROTOCOL.md and the
                                      # Node.js template's copy of the .proto
    python proto/generate.py --check  # exit 1 and name the files that differ

The generated files are committed so that the harness installs without
grpcio-tools; the test suite runs --check so they can never drift from the
.proto. The generator versions are pinned in pyproject.toml (dev extra)
because the generated text names them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

PROTO_ROOT = Path(__file__).resolve().parent
PACKAGE_DIR = PROTO_ROOT / "apmbench" / "v1"
REPO = PROTO_ROOT.parent
PROTOCOL_PAGE = REPO / "docs" / "PROTOCOL.md"
TEMPLATE_COPY = REPO / "containers" / "template-node" / "memory_system.proto"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate_into(out_dir: Path) -> list[Path]:
    from grpc_tools import protoc  # only needed by developers, never at run time

    protos = sorted(PACKAGE_DIR.glob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--mypy_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *[str(p.relative_to(PROTO_ROOT)) for p in protos],
    ]
    plugin = shutil.which("protoc-gen-mypy", path=str(Path(sys.executable).parent))
    if plugin is None:
        raise SystemExit("protoc-gen-mypy not found next to this Python: install the dev extra")
    args.insert(1, f"--plugin=protoc-gen-mypy={plugin}")
    grpc_plugin = shutil.which("protoc-gen-mypy_grpc", path=str(Path(sys.executable).parent))
    if grpc_plugin is None:
        raise SystemExit(
            "protoc-gen-mypy_grpc not found next to this Python: install the dev extra"
        )
    args.insert(1, f"--plugin=protoc-gen-mypy_grpc={grpc_plugin}")
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sorted(
        p for p in (out_dir / "apmbench" / "v1").iterdir() if p.name.endswith(GENERATED_SUFFIXES)
    )


def derived_texts() -> dict[Path, str]:
    """The files whose text follows from the .proto: the page's reference sections (rules,
    status codes, every field's comment) and the template's verbatim copy."""
    sys.path.insert(0, str(PROTO_ROOT))
    import protocol_text

    from apmbench.harness.check.rules import RULES

    proto = protocol_text.PROTO.read_text()
    sections = protocol_text.render_sections(proto)
    named = [r for r in RULES.values() if not r.id[1:].isdigit()]
    sections["check-rules"] = "\n".join(
        ["| id | the .proto's words |", "|---|---|"]
        + [f'| {r.id} {r.title} | "{r.quote}" |' for r in named]
    )
    page = protocol_text.splice(PROTOCOL_PAGE.read_text(), sections)
    return {PROTOCOL_PAGE: page, TEMPLATE_COPY: proto}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale_texts = []
    for path, text in derived_texts().items():
        if check:
            if path.read_text() != text:
                stale_texts.append(str(path.relative_to(REPO)))
        else:
            path.write_text(text)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_into(Path(tmp))
        stale = []
        for path in fresh:
            target = PACKAGE_DIR / path.name
            if check:
                if not target.exists() or target.read_bytes() != path.read_bytes():
                    stale.append(target.name)
            else:
                shutil.copyfile(path, target)
        if check:
            fresh_names = {p.name for p in fresh}
            stale += [
                p.name
                for p in PACKAGE_DIR.iterdir()
                if p.name.endswith(GENERATED_SUFFIXES) and p.name not in fresh_names
            ]
    stale += stale_texts
    if stale:
        print("generated code is out of sync with the .proto: " + ", ".join(sorted(stale)))
        print("run `make proto` and commit the result")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
