"""`python -m apmbench.adapters SYSTEM --address ADDR [--exit-with-parent]`: serve a system.

The lean entry point the harness's process runtime starts: it imports only
the SDK and the requested system, so a restart between sessions costs the
system's own start-up and little else. `apmbench-grpc serve` does the same
with the full command line.
"""

from __future__ import annotations

import argparse
import sys

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.adapters.sdk.loaded_point import wait_at_loaded_point
from apmbench.adapters.sdk.server import serve
from apmbench.adapters.systems import load_system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m apmbench.adapters")
    parser.add_argument("system")
    parser.add_argument("--address", required=True)
    parser.add_argument("--exit-with-parent", action="store_true")
    args = parser.parse_args(argv)
    try:
        system = load_system(args.system)
        # Loaded, no session data yet, nothing listening: a snapshotting harness
        # checkpoints here (apmbench.adapters.sdk.loaded_point).
        address = wait_at_loaded_point(args.address)
        serve(
            system,
            address,
            on_ready=lambda a: print(f"serving {args.system} at {a}", flush=True),
            exit_with_parent=args.exit_with_parent,
        )
    except ApmbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
