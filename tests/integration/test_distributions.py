"""`make dist`, as a test: both distributions build and pass `twine check`; the SDK's wheel
alone, in a fresh venv, serves `null` and passes `check` with no harness package present;
an SDK that drags in the harness's dependencies is refused; apmbench-grpc installs with
its SDK of the same version.

Fresh venvs get their packages from this machine's pip configuration (index, caches,
find-links), as a user's would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.build import distributions as dist

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("dist")
    return out, dist.build(ROOT, out)


def test_both_distributions_build_and_pass_twine_check(built: tuple[Path, list[Path]]) -> None:
    _, files = built
    v = dist.version(ROOT)
    assert sorted(f.name for f in files) == sorted(
        [
            f"apmbench_grpc-{v}-py3-none-any.whl",
            f"apmbench_grpc-{v}.tar.gz",
            f"apmbench_sdk-{v}-py3-none-any.whl",
            f"apmbench_sdk-{v}.tar.gz",
        ]
    )
    report = dist.twine_check(files)
    assert report.count("PASSED") == 4, report


def test_the_sdk_wheel_alone_serves_null_and_passes_check(
    built: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    out, _ = built
    wheel = out / f"apmbench_sdk-{dist.version(ROOT)}-py3-none-any.whl"
    report = dist.check_sdk(wheel, out, tmp_path)
    assert "apmbench-sdk" in report.distributions
    assert not set(dist.HARNESS_ONLY) & set(report.distributions)
    assert report.check_output  # check exited 0: no check failed
    assert 0 < report.sdk_mb < report.installed_mb


def test_an_sdk_that_drags_in_the_harness_is_refused(tmp_path: Path) -> None:
    # The cheater: an SDK whose dependencies include one only the harness needs.
    tree = dist.sdk_tree(ROOT)
    project = tree["pyproject.toml"].decode()
    assert '"simplejpeg>=1.7",\n' in project
    tree["pyproject.toml"] = project.replace(
        '"simplejpeg>=1.7",\n', '"simplejpeg>=1.7",\n    "click>=8.1",\n'
    ).encode()
    stage = dist.write_tree(tree, tmp_path / "stage")
    out = tmp_path / "out"
    dist._build(stage, out)
    wheel = next(out.glob("apmbench_sdk-*.whl"))
    with pytest.raises(dist.DistError, match=r"brought in the harness's click"):
        dist.check_sdk(wheel, out, tmp_path / "work")


def test_the_harness_wheel_installs_with_its_sdk(
    built: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    out, _ = built
    v = dist.version(ROOT)
    installed = dist.check_harness(out / f"apmbench_grpc-{v}-py3-none-any.whl", out, tmp_path)
    assert installed["apmbench-grpc"] == v
    assert installed["apmbench-sdk"] == v
