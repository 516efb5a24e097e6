"""The harness's layer order, which the import guard (tests/unit/test_layering.py) and the
call tracer (tests/integration/test_call_direction.py) both check."""

from __future__ import annotations

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
