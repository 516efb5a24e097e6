"""Packages of apmbench-sdk: the generated protocol code and the adapters (SDK, reference systems).

Two layouts: in the repository (an editable install, `pip install -e
packaging/sdk`) the sources are two folders up; in a staged tree (an sdist,
or what `make dist` and the image build assemble) they sit beside this file.
The version is the repository's one version: apmbench-grpc's, read from its
pyproject.toml, or the VERSION file a staged tree carries.
"""

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
STAGED = (HERE / "adapters").is_dir()
LEAD = "" if STAGED else "../../"
ROOTS = {"apmbench.v1": LEAD + "proto/apmbench/v1", "apmbench.adapters": LEAD + "adapters"}


def version() -> str:
    if STAGED:
        return (HERE / "VERSION").read_text().strip()
    meta = tomllib.loads((HERE.parents[1] / "pyproject.toml").read_text())
    return str(meta["project"]["version"])


def discover() -> list[str]:
    packages = []
    for name, folder in ROOTS.items():
        base = (HERE / folder).resolve()
        for init in sorted(base.rglob("__init__.py")):
            packages.append(".".join((name, *init.parent.relative_to(base).parts)))
    return packages


setup(version=version(), package_dir=ROOTS, packages=discover())
