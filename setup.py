"""Package discovery for the one `apmbench` namespace spread over the fixed top-level folders.

pyproject.toml cannot map a namespace prefix onto folders and still discover
sub-packages, and a hand-written list forgets new ones (they import in the
editable install and in tests, then are missing from wheels and images). So
every folder with an __init__.py under a mapped root is a package.
"""

from pathlib import Path

from setuptools import setup

# apmbench.v1 and apmbench.adapters belong to apmbench-sdk (packaging/sdk/setup.py),
# which this distribution depends on at the same version.
ROOTS = {"apmbench.harness": "harness"}


def discover() -> list[str]:
    here = Path(__file__).parent
    packages = []
    for name, folder in ROOTS.items():
        for init in sorted((here / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(here / folder)
            packages.append(".".join((name, *rel.parts)))
    return packages


setup(package_dir=ROOTS, packages=discover())
