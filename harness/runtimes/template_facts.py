"""What a template start (`--start template`) leaves beside the system's log and records in
the manifest.

How a start is forked from the run's template and confined is template.py's (and
apmbench/adapters/template.py's); this module holds only where the template's own output goes
(`TEMPLATE_LOG`) and the facts of its confinement that the manifest of a run of template
starts records (`TEMPLATE_FACTS`), which the process runtime reads.
"""

from __future__ import annotations

TEMPLATE_LOG = "template.log"
"""Beside the system's log: the template's own output (never a start's: each has a pipe)."""
TEMPLATE_FACTS: dict[str, object] = {
    "kind": "fork of a pre-imported template (apmbench.adapters.template) in the same box",
    "template_capabilities": "CAP_SYS_ADMIN and CAP_SETFCAP in its own user namespace; no "
    "system code runs in it, and no start keeps them",
    "per_start": {
        "namespaces": ["user", "mount", "pid", "network", "ipc", "uts", "cgroup"],
        "fresh": ["/proc", "/tmp", "/dev/shm", "/dev/pts", "socket directory"],
        "read_only": ["/dev", "every other mount"],
        "user_namespaces": "none further",
        "capabilities": "none (bounding and ambient sets too)",
        "no_new_privs": True,
        "seccomp": "the fresh start's filter",
        "descriptors": ["stdout and stderr: its log pipe (no stdin, as a fresh start)"],
    },
}
