"""What every command shares: the console, exit codes, error reporting."""

from __future__ import annotations

from rich.console import Console

EXIT_USAGE = 2
"""Bad input or settings: the message says what to fix; nothing was started."""
EXIT_SYSTEM = 3
"""The system or its runtime failed; finished work is kept."""
EXIT_FAILED_CHECKS = 1
EXIT_INTERRUPTED = 130

console = Console(stderr=True, soft_wrap=True)
