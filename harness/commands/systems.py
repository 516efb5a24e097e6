"""`apmbench-grpc systems`: the registered reference systems, one line each (or JSON).

The facts come from each system's record in `apmbench.adapters.systems` (memory,
benchmarks, model variables); the image names from the build tools: a line of
containers/systems.txt is built as `image_name(NAME)`, a VLM system as
`vlm_image(NAME, "cpu"|"gpu")`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from apmbench.harness.commands.help_format import command

ROOT = Path(__file__).resolve().parents[2]
"""The source checkout (containers/systems.txt lives there, not in a wheel)."""


def images(root: Path = ROOT) -> dict[str, list[str]] | None:
    """Registered name -> the images `make images*` builds of it; None when there is no
    containers/systems.txt to read (an installed wheel, not a checkout)."""
    # Imported here: the build tools load the docker SDK.
    from apmbench.harness.build.images import image_name, system_lines
    from apmbench.harness.build.vlm_images import VLM_SYSTEMS, vlm_image

    if not (root / "containers" / "systems.txt").is_file():
        return None
    out: dict[str, list[str]] = {name: [image_name(name)] for name in system_lines(root)}
    for name in VLM_SYSTEMS:
        out.setdefault(name, []).extend(vlm_image(name, v) for v in ("cpu", "gpu"))
    return out


def system_rows(root: Path = ROOT) -> list[dict[str, Any]]:
    """One dict per registered system, in registration order (what `--json` prints)."""
    from apmbench.adapters.systems import SYSTEM_REGISTRY, SYSTEMS

    built = images(root)
    # A plugin's system is listed without importing it: its registration is a name and a
    # target, so what its memory keeps is the distribution that registered it.
    plugins = [
        {
            "name": entry.name,
            "memory": f"registered by the installed distribution {entry.source} ({entry.target})",
            "benchmarks": [],
            "needs_model": False,
            "model_env": [],
            "images": [],
        }
        for entry in SYSTEM_REGISTRY.entries()
        if entry.name not in SYSTEMS
    ]
    return [
        {
            "name": name,
            "memory": record.memory,
            "benchmarks": list(record.benchmarks),
            "needs_model": record.needs_model,
            "model_env": list(record.model_env),
            "images": None if built is None else built.get(name, []),
        }
        for name, record in SYSTEMS.items()
    ] + plugins


def _line(row: dict[str, Any], width: int) -> str:
    model = " or ".join(row["model_env"]) if row["needs_model"] else "none"
    if row["images"] is None:
        image = "unknown (no containers/systems.txt here)"
    else:
        image = ", ".join(row["images"]) or "none built"
    return (
        f"{row['name']:<{width}}  memory: {row['memory']}; "
        f"benchmarks: {', '.join(row['benchmarks'])}; model: {model}; image: {image}"
    )


@command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list (for scripts).")
def systems(as_json: bool) -> None:
    """List the registered reference systems (`--system NAME`): what each one's memory
    keeps, the benchmarks it answers, the variable that names its model, its image.

    Example:

        apmbench-grpc systems --json
    """
    rows = system_rows()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        click.echo(_line(row, width))
