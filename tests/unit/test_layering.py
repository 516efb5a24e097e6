"""The layout's rules, enforced: adapters never import the harness, the harness's folders
import only from the folders above them (LAYERS), no suite imports another, no import cycle
between harness modules, and no APM-Bench task name outside its suite folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from apmbench.harness.suites.apmbench import tasks

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"apmbench.harness": ROOT / "harness", "apmbench.adapters": ROOT / "adapters"}


def _modules() -> dict[str, Path]:
    found = {}
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((prefix, *parts))] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """apmbench modules imported by `module` at import time (not inside functions, not
    under TYPE_CHECKING): the edges that can make a cycle or pull the harness in."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks never run
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("apmbench.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("apmbench."):
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in MODULES else node.module)
    return {m for m in out if m in MODULES}


def _all_imports(path: Path) -> set[str]:
    """Every apmbench module named anywhere in the file (lazy imports included)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n for n in names if n.startswith("apmbench.")}


def test_adapters_never_import_the_harness() -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(
            n for n in _all_imports(path) if n.startswith("apmbench.harness")
        )
        for module, path in MODULES.items()
        if module.startswith("apmbench.adapters")
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_no_import_cycle() -> None:
    graph = {m: _imports(m, p) for m, p in MODULES.items()}
    # A package imports its __init__ first; an edge to one's own package is not a cycle.
    for m in graph:
        graph[m] = {d for d in graph[m] if not m.startswith(d + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = [*stack[stack.index(d) :], d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


# The harness's folders (and top-level modules), top to bottom: each imports only from
# itself and the ones above it. README's "Layout" and docs/ARCHITECTURE.md show the same.
LAYERS = (
    ("errors", "shown", "logs", "paths", "stopping", "json_types", "wording"),
    ("protocol",),
    ("media",),
    ("runtimes",),
    ("scoring",),
    ("run",),
    ("reports",),
    ("synthetic",),
    ("suites",),
    ("check",),
    ("orchestrate",),
    ("build",),
    ("commands", "cli", "demo"),
)
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _top(module: str) -> str | None:
    """The harness folder (or top-level module) a harness module lives in."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["apmbench", "harness"] else None


def _back_edges(modules: dict[str, Path]) -> list[str]:
    found = []
    for module, path in sorted(modules.items()):
        here = _top(module)
        if here is None:
            continue
        for target in sorted(_all_imports(path)):
            there = _top(target)
            if there is not None and there != here and LEVEL[there] > LEVEL[here]:
                found.append(f"{module} ({here}) imports {target} ({there})")
    return found


def _suite_crossings(modules: dict[str, Path]) -> list[str]:
    def suite(module: str) -> str | None:
        parts = module.split(".")
        is_suite = len(parts) > 4 and parts[2] == "suites"
        return parts[3] if is_suite else None

    return [
        f"{module} imports {target}"
        for module, path in sorted(modules.items())
        if (mine := suite(module)) is not None
        for target in sorted(_all_imports(path))
        if (theirs := suite(target)) is not None and theirs != mine
    ]


def test_every_harness_folder_has_a_layer() -> None:
    tops = {_top(m) for m in MODULES} - {None, ""}
    assert tops - set(LEVEL) == set(), "add the new folder to LAYERS (and to README's Layout)"


def test_folders_import_only_from_the_layers_above() -> None:
    assert _back_edges(MODULES) == []


def test_no_suite_imports_another() -> None:
    assert _suite_crossings(MODULES) == []


def test_a_planted_back_edge_and_suite_crossing_fail(tmp_path: Path) -> None:
    kit = tmp_path / "kit.py"
    kit.write_text("def f():\n    from apmbench.harness.orchestrate.evaluate import evaluate\n")
    assert _back_edges({"apmbench.harness.run.kit": kit}) != []
    probe = tmp_path / "probe.py"
    probe.write_text("from apmbench.harness.suites.apmbench.tasks import ALL_TASKS\n")
    assert _suite_crossings({"apmbench.harness.suites.egoprobe.probe": probe}) != []
    fine = tmp_path / "fine.py"
    fine.write_text("from apmbench.harness.run.plan import Ask\n")
    assert _back_edges({"apmbench.harness.orchestrate.fine": fine}) == []


def _strings_and_names(path: Path) -> set[str]:
    """Identifiers, attribute names and string constants of a file (comments excluded)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= set(re.findall(r"[A-Za-z]+", node.value))
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def test_no_task_name_outside_the_suite() -> None:
    suite = ROOT / "harness" / "suites" / "apmbench"
    names = set(tasks.ALL_TASKS) | {"MCQA_TASKS", "ADAPTIVE_TASKS", "FAMILIES", "FAMILY_OF"}
    offenders = {}
    for path in (ROOT / "harness").rglob("*.py"):
        if suite in path.parents:
            continue
        hits = names & _strings_and_names(path)
        if hits:
            offenders[str(path.relative_to(ROOT))] = sorted(hits)
    assert offenders == {}


def test_the_checks_catch_what_they_guard(tmp_path: Path) -> None:
    """The cycle finder and the task-name scan see a planted offender."""
    bad = tmp_path / "bad.py"
    bad.write_text('KIND = "ERA"\nfrom apmbench.harness.errors import DatasetError\n')
    assert "ERA" in _strings_and_names(bad)
    assert "apmbench.harness.errors" in _all_imports(bad)


# The modules that register names ("module:object" targets) in a Registry; only the
# registry imports a module by name, so a target string elsewhere is an import that the
# folder order above cannot see.
REGISTRIES = {
    "harness/suites/__init__.py",
    "harness/media/renderers.py",
    "harness/runtimes/registry.py",
    "adapters/systems/__init__.py",
}
_TARGET = re.compile(r"apmbench\.[\w.]+:[\w.]+")


def _named_modules(path: Path) -> list[str]:
    """ "apmbench.x:y" strings in the file, and calls to import_module / __import__."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _TARGET.fullmatch(node.value):
                found.append(node.value)
        elif isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in ("import_module", "__import__"):
                found.append(name)
    return found


def _string_imports(paths: dict[str, Path]) -> dict[str, list[str]]:
    return {
        rel: hits
        for rel, path in paths.items()
        if rel not in REGISTRIES and rel != "adapters/sdk/registry.py"
        if (hits := _named_modules(path))
    }


def test_modules_are_named_as_strings_only_through_the_registry() -> None:
    paths = {str(p.relative_to(ROOT)): p for p in MODULES.values()}
    assert _string_imports(paths) == {}


def test_a_planted_string_import_fails(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden.py"
    hidden.write_text(
        "import importlib\n"
        "TARGET = 'apmbench.harness.suites.egoprobe.synth:render_frames'\n"
        "def load():\n    return importlib.import_module('x')\n"
    )
    found = _string_imports({"harness/media/hidden.py": hidden})
    assert found == {
        "harness/media/hidden.py": [
            "apmbench.harness.suites.egoprobe.synth:render_frames",
            "import_module",
        ]
    }
