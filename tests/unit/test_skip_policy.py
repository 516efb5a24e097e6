"""The CI skip policy (tests/skip_policy.py), on tiny pytest sessions in subprocesses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import skip_policy

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

CASES = """
import pytest

def test_passes():
    pass

def test_skips_in_its_body():
    pytest.skip("the frobnicator is not installed")

@pytest.fixture
def frobnicator():
    pytest.skip("no frobnicator in the fixture")

def test_skips_in_a_fixture(frobnicator):
    pass

@pytest.mark.skipif(True, reason="frobnicator missing (skipif)")
def test_skipif():
    pass

def test_allowed_on_a_gpu_host():
    pytest.skip("needs a GPU")

def test_allowed_node_but_another_reason():
    pytest.skip("the frobnicator is not installed")

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_xfail():
    assert False
"""

MODULE_SKIP = """
import pytest
pytest.importorskip("apm_no_such_module_for_the_policy_test")

def test_never_collected():
    pass
"""

ALLOWLIST = """
[[allow]]
node = "test_cases.py::test_allowed_*"
skip = "needs a GPU"
why = "the policy test's GPU-only case"
"""


def session(tmp_path: Path, ci: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    """`pytest -p skip_policy` on the files in tmp_path, CI set to `ci` (or unset)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # rootdir here, no project ini
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    (tmp_path / "allow.toml").write_text(ALLOWLIST)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update(PYTHONPATH=str(TESTS), APMBENCH_SKIP_ALLOWLIST=str(tmp_path / "allow.toml"))
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "skip_policy", "-p", "no:cacheprovider",
         "-rA", "-q", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def summary(out: str) -> dict[str, str]:
    """Node id -> outcome word from -rA's short summary (PASSED, FAILED, ERROR, ...)."""
    found = {}
    for line in out.splitlines():
        words = [w for w in line.split() if not re.fullmatch(r"\[\d+\]", w)]
        if len(words) >= 2 and words[0] in ("PASSED", "FAILED", "ERROR", "XFAIL", "SKIPPED"):
            found[re.sub(r":\d+:$", "", words[1])] = words[0]
    return found


def test_under_ci_an_unlisted_skip_fails_the_session_naming_it(tmp_path: Path) -> None:
    done = session(tmp_path, "true", "test_cases.py")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    outcomes = summary(out)
    assert outcomes["test_cases.py::test_passes"] == "PASSED"
    assert outcomes["test_cases.py::test_skips_in_its_body"] == "FAILED"
    # Skips at set-up (a skipif mark, a fixture) fail there: pytest calls them errors.
    assert outcomes["test_cases.py::test_skips_in_a_fixture"] == "ERROR"
    assert outcomes["test_cases.py::test_skipif"] == "ERROR"
    assert outcomes["test_cases.py::test_allowed_node_but_another_reason"] == "FAILED"
    assert outcomes["test_cases.py"] == "SKIPPED"  # the allowed one; -rA names its file
    assert "XFAIL" in outcomes.values()  # an expected failure is not a skip
    message = (
        "test_cases.py::test_skips_in_its_body skipped under CI=true: "
        "the frobnicator is not installed"
    )
    assert message in out
    assert "no frobnicator in the fixture" in out and "frobnicator missing (skipif)" in out
    assert "add it to allow.toml with the reason why" in out  # relative to the checkout
    assert "2 failed, 1 passed, 1 skipped, 1 xfailed, 2 errors" in out


def test_under_ci_an_allowlisted_skip_passes(tmp_path: Path) -> None:
    done = session(tmp_path, "true", "test_cases.py::test_allowed_on_a_gpu_host")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "needs a GPU" in done.stdout


def test_under_ci_a_module_skipped_at_collection_fails_the_session(tmp_path: Path) -> None:
    done = session(tmp_path, "true")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "skipped while collected, not allowed under CI=true" in out
    assert "test_module_skip.py skipped under CI=true: could not import" in out
    alone = session(tmp_path, "true", "test_module_skip.py")  # nothing else ran at all
    assert alone.returncode == 1, alone.stdout + alone.stderr


def test_without_ci_a_skip_stays_a_skip(tmp_path: Path) -> None:
    for ci in (None, "false"):
        done = session(tmp_path, ci)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert "1 passed, 6 skipped, 1 xfailed" in out
        assert "skipped under CI=true" not in out


def test_an_allowlist_entry_needs_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "allow.toml"
    path.write_text('[[allow]]\nnode = "tests/x.py::test_y"\n')
    with pytest.raises(pytest.UsageError, match="needs both `node` and `why`"):
        skip_policy.load_allowlist(path)
    path.write_text('[[allow]]\nnode = "a"\nwhy = "b"\nreason = "c"\n')
    with pytest.raises(pytest.UsageError, match="unknown keys"):
        skip_policy.load_allowlist(path)


def test_each_entry_of_the_real_allowlist_names_an_existing_test() -> None:
    """A stale entry (its test renamed or gone) would silently allow nothing, or too much."""
    entries = skip_policy.load_allowlist(skip_policy.ALLOWLIST)
    assert len(entries) <= 10, "the allowlist is meant to stay short"
    for entry in entries:
        path, _, name = entry.node.partition("::")
        assert (REPO / path).is_file(), entry.node
        function = name.split("[")[0]
        assert function and f"def {function}(" in (REPO / path).read_text(), entry.node
        assert entry.skip, f"{entry.node}: allow one skip reason, not any"
