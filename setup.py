"""Package discovery for the one `apmbench` namespace spread over the fixed top-level folders.

pyproject.toml cannot map a namespace prefix onto folders and still discover
sub-packages, and a hand-written list forgets new ones (they import in the
editable install and in tests, then are missing from wheels and images). So
every folder with an __init__.py under a mapped root is a package, and so is a
folder of data files inside one (the HTML templates): Python imports such a
folder as a namespace package, and setuptools then wants it listed, or warns
that its files "would be ignored" and may leave them out of a wheel.
"""

from pathlib import Path

from setuptools import setup

# apmbench.v1 and apmbench.adapters belong to apmbench-sdk (packaging/sdk/setup.py),
# which this distribution depends on at the same version.
ROOTS = {"apmbench.harness": "harness"}


def _is_data_folder(folder: Path) -> bool:
    """Files but no Python module, inside a package: data the package reads (package-data)."""
    files = [p for p in folder.iterdir() if p.is_file()]
    return (
        (folder.parent / "__init__.py").is_file()
        and bool(files)
        and not any(p.suffix == ".py" for p in files)
    )


def discover() -> list[str]:
    here = Path(__file__).parent
    packages = []
    for name, folder in ROOTS.items():
        root = here / folder
        found = sorted(
            d
            for d in [root, *root.rglob("*")]
            if d.is_dir()
            and "__pycache__" not in d.parts
            and ((d / "__init__.py").is_file() or _is_data_folder(d))
        )
        packages.extend(".".join((name, *d.relative_to(root).parts)) for d in found)
    return packages


setup(package_dir=ROOTS, packages=discover())
