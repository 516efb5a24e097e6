"""The layout's rules, enforced: adapters never import the harness, the harness's folders
import only from the folders above them (LAYERS), no suite imports another, no import cycle
between harness or adapter modules, and no APM-Bench task name outside its suite folder.

Every import form counts, wherever it is written: `import a.b`, `from a import b` (b a
module or a name), relative imports, and imports inside functions or under
`if TYPE_CHECKING:` (an upward import is upward wherever it sits, and a circle closed by a
lazy import is still two modules that cannot be understood apart)."""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from pathlib import Path

from helpers.layers import LEVEL

from apmbench.harness.suites.apmbench import tasks

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"apmbench.harness": ROOT / "harness", "apmbench.adapters": ROOT / "adapters"}


def _modules(folders: dict[str, Path]) -> dict[str, Path]:
    found = {}
    for prefix, folder in folders.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((prefix, *parts))] = path
    return found


MODULES = _modules(FOLDERS)


def _packages(modules: Collection[str]) -> set[str]:
    """Every module and package (each dotted prefix below apmbench) of `modules`."""
    return {".".join(m.split(".")[:i]) for m in modules for i in range(2, m.count(".") + 2)}


PACKAGES = _packages(MODULES)


def _source(module: str, path: Path, node: ast.ImportFrom) -> str | None:
    """The absolute name of what `from ... import` reads from; None past the top."""
    if node.level == 0:
        return node.module
    # A relative import counts from the module's package: an __init__ is its own package.
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if node.level > len(package):
        return None
    anchor = package[: len(package) - node.level + 1]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def _imports(module: str, path: Path, planted: Collection[str] = ()) -> set[str]:
    """The apmbench modules `module` imports, wherever the import is written (module level,
    inside a function, under TYPE_CHECKING), each resolved to the module it names:
    `from apmbench.harness import shown` and `from .. import shown` name the module
    apmbench.harness.shown, `from .plan import Ask` names ...plan. The real tree and the
    `planted` modules tell a module (or package) from a name defined in one."""
    packages = PACKAGES | _packages(planted)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (source := _source(module, path, node)):
            for alias in node.names:
                full = f"{source}.{alias.name}"
                out.add(full if full in packages else source)
    return {m for m in out if m.startswith("apmbench.")}


def _harness_in_adapters(modules: dict[str, Path]) -> dict[str, list[str]]:
    wrong = {
        str(module): sorted(
            n for n in _imports(module, path, modules) if n.startswith("apmbench.harness")
        )
        for module, path in modules.items()
        if module.startswith("apmbench.adapters")
    }
    return {k: v for k, v in wrong.items() if v}


def test_adapters_never_import_the_harness() -> None:
    assert _harness_in_adapters(MODULES) == {}


def _cycles(modules: dict[str, Path]) -> list[str]:
    """Each import cycle a depth-first walk meets (one per edge that closes a circle), over
    every import edge between the modules."""
    graph = {m: _imports(m, p, modules) & modules.keys() for m, p in modules.items()}
    # A package imports its __init__ first; an edge to one's own package is not a cycle.
    for m in graph:
        graph[m] = {d for d in graph[m] if not m.startswith(d + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                found.append(" -> ".join([*stack[stack.index(d) :], d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return found


def test_no_import_cycle() -> None:
    cycles = _cycles(MODULES)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


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
        for target in sorted(_imports(module, path, modules)):
            there = _top(target)
            if there is not None and there != here and LEVEL[there] > LEVEL[here]:
                found.append(f"{module} ({here}) imports {target} ({there})")
    return found


def _suite_crossings(modules: dict[str, Path]) -> list[str]:
    # A suite is a folder under suites/ (base.py and its like are the shared layer), and
    # its package itself (`from apmbench.harness.suites import apmbench`) is the suite too.
    suites = {
        parts[3]
        for m in {*MODULES, *modules}
        if len(parts := m.split(".")) > 4 and parts[2] == "suites"
    }

    def suite(module: str) -> str | None:
        parts = module.split(".")
        is_suite = len(parts) > 3 and parts[2] == "suites" and parts[3] in suites
        return parts[3] if is_suite else None

    return [
        f"{module} imports {target}"
        for module, path in sorted(modules.items())
        if (mine := suite(module)) is not None
        for target in sorted(_imports(module, path, modules))
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


def _tree(root: Path, sources: dict[str, str]) -> dict[str, Path]:
    """A planted tree of source (paths as under the repository root) and its modules."""
    for rel, text in sources.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return _modules({"apmbench.harness": root / "harness", "apmbench.adapters": root / "adapters"})


def test_the_reader_resolves_every_import_form(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "harness/run/audits/__init__.py": "",
            "harness/run/audits/settings.py": "",
            "harness/run/audits/repeat.py": "",
            "harness/run/audits/kit.py": (
                "from __future__ import annotations\n"
                "from typing import TYPE_CHECKING\n"
                "import apmbench.harness.errors\n"
                "from apmbench.harness import shown\n"
                "from apmbench.harness.run import plan\n"
                "from apmbench.harness.run.executor import TrajectoryRunner\n"
                "from . import repeat\n"
                "from .settings import AuditSettings\n"
                "from .. import records\n"
                "from ..manifest import load\n"
                "if TYPE_CHECKING:\n"
                "    from apmbench.harness.scoring import answers\n"
                "def later():\n"
                "    from apmbench.harness.media import frames\n"
            ),
        },
    )
    kit = "apmbench.harness.run.audits.kit"
    assert _imports(kit, tree[kit], tree) == {
        "apmbench.harness.errors",
        "apmbench.harness.shown",
        "apmbench.harness.run.plan",
        "apmbench.harness.run.executor",
        "apmbench.harness.run.audits.repeat",
        "apmbench.harness.run.audits.settings",
        "apmbench.harness.run.records",
        "apmbench.harness.run.manifest",
        "apmbench.harness.scoring.answers",
        "apmbench.harness.media.frames",
    }
    # In a package's __init__, `.` is the package itself.
    init = "apmbench.harness.run.audits"
    assert _imports(init, tree[init], tree) == set()
    tree[init].write_text("from .repeat import x\nfrom .. import plan\n")
    assert _imports(init, tree[init], tree) == {
        "apmbench.harness.run.audits.repeat",
        "apmbench.harness.run.plan",
    }


def test_package_form_and_relative_imports_break_the_rules(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "harness/run/kit.py": "from apmbench.harness import orchestrate\n",
            "harness/run/audits/up.py": "def f():\n    from ...orchestrate import evaluate\n",
            "harness/suites/egoprobe/probe.py": (
                "from apmbench.harness.suites import apmbench\nfrom ..apmbench import tasks\n"
            ),
            "adapters/vlm/leak.py": "from apmbench import harness\n",
        },
    )
    assert _back_edges(tree) == [
        "apmbench.harness.run.audits.up (run) imports apmbench.harness.orchestrate.evaluate"
        " (orchestrate)",
        "apmbench.harness.run.kit (run) imports apmbench.harness.orchestrate (orchestrate)",
    ]
    assert _suite_crossings(tree) == [
        "apmbench.harness.suites.egoprobe.probe imports apmbench.harness.suites.apmbench",
        "apmbench.harness.suites.egoprobe.probe imports apmbench.harness.suites.apmbench.tasks",
    ]
    assert _harness_in_adapters(tree) == {"apmbench.adapters.vlm.leak": ["apmbench.harness"]}


def test_every_cycle_is_found_through_lazy_imports(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            # an __init__ importing its module, which imports its package: no cycle
            "harness/check/__init__.py": "from .context import CheckContext\n",
            "harness/check/context.py": "from apmbench.harness.check.model import Outcome\n",
            "harness/check/model.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from .context import CheckContext\n"
            ),
            "harness/run/audits/queries.py": (
                "def later():\n    from apmbench.harness.run.audits import repeat\n"
            ),
            "harness/run/audits/repeat.py": "from .queries import AuditSettings\n",
            "harness/run/audits/settings.py": "",
        },
    )
    assert _cycles(tree) == [
        "apmbench.harness.check.context -> apmbench.harness.check.model"
        " -> apmbench.harness.check.context",
        "apmbench.harness.run.audits.queries -> apmbench.harness.run.audits.repeat"
        " -> apmbench.harness.run.audits.queries",
    ]


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
    assert "apmbench.harness.errors" in _imports("apmbench.harness.run.bad", bad)


# The modules that register names ("module:object" targets) in a Registry; only the
# registry imports a module by name, so a target string elsewhere is an import that the
# folder order above cannot see.
REGISTRIES = {
    "harness/suites/__init__.py",
    "harness/media/renderers.py",
    "harness/runtimes/registry.py",
    "harness/scoring/judge/config.py",
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
