"""Host-wide counters as a channel between two concurrently live sandboxes, measured.

A sender in one hardened sandbox moves a counter in the slots of its 1 bits; a receiver in
another reads the counter in every slot, and reads a slot as a 1 when its value (a level)
or its change over the slot (a count) is above the median (the message has as many ones
as zeros). Both align their slots on CLOCK_MONOTONIC from a start the driver passes to
both, as timing_channel.py does. The channels:

- `shmem`: 16 MiB held in the sender's /dev/shm or not; the receiver reads Shmem in
  /proc/meminfo (red team 3's channel; frozen in the box, so read through the live file
  with `--no-view`, as every box did before);
- `sockstat`: 1 MiB held unread in a loopback TCP connection or not; the receiver reads
  the host's TCP memory in /proc/self/net/sockstat (a per-process directory: no cover);
- `softnet`: 500 UDP datagrams over the sender's loopback; the receiver counts the
  packets every CPU's backlog processed, /proc/self/net/softnet_stat;
- `statvfs`: 16 KiB written to the sender's output, which lands in a file on the disk
  that holds /usr (as a system's output lands in the run's log); the receiver reads the
  free blocks of its read-only /usr, statvfs(2).

The figure printed is the raw rate (1 / slot), the bit error rate, the capacity of the
binary symmetric channel with that error rate, R * (1 - H(p)), and the spread of what the
receiver read (0: a frozen counter, which carries nothing).

    PYTHONPATH=tests .venv/bin/python -m helpers.counter_channel --channel shmem --bits 128
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from apmbench.harness.runtimes.sandbox import Sandbox, python_policy
from helpers.timing_channel import binary_entropy

SENDER = r"""
import os, socket, sys, time
channel, start, slot, bits = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
held = False
if channel == "sockstat":
    server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
    out = socket.create_connection(server.getsockname()); into, _ = server.accept()
    into.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    out.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    into.setblocking(False)
if channel == "softnet":
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); sink.bind(("127.0.0.1", 0))
    sink.setblocking(False)
    source = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
block = b"x" * (1 << 20)
for i, b in enumerate(bits):
    end = start + (i + 1) * slot
    while time.monotonic() < start + i * slot:
        time.sleep(0.0005)
    one = b == "1"
    if channel == "shmem" and one != held:
        if one:
            with open("/dev/shm/c", "wb") as f:
                for _ in range(16):
                    f.write(block)
        else:
            os.unlink("/dev/shm/c")
        held = one
    elif channel == "sockstat" and one != held:
        if one:
            out.sendall(block)
        else:
            try:
                while into.recv(1 << 20):
                    pass
            except BlockingIOError:
                pass
        held = one
    elif channel == "softnet" and one:
        for _ in range(500):
            source.sendto(b"x", sink.getsockname())
        try:
            while sink.recv(16):
                pass
        except BlockingIOError:
            pass
    elif channel == "statvfs" and one:
        sys.stdout.buffer.write(block[: 16 << 10])
        sys.stdout.buffer.flush()
    now = time.monotonic()
    if now < end:
        time.sleep(end - now)
"""

RECEIVER = r"""
import json, os, sys, time
channel, start, slot, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
def read():
    if channel == "shmem":
        for line in open("/proc/meminfo"):
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    if channel == "sockstat":
        for line in open("/proc/self/net/sockstat"):
            if line.startswith("TCP:"):
                fields = line.split()
                return int(fields[fields.index("mem") + 1])
    if channel == "softnet":
        return sum(int(line.split()[0], 16) for line in open("/proc/self/net/softnet_stat"))
    if channel == "statvfs":
        return -os.statvfs("/usr").f_bfree
values = []
for i in range(-1, n):
    # Three quarters into each slot: the sender acted at its start.
    at = start + (i + 0.75) * slot
    while time.monotonic() < at:
        time.sleep(0.0005)
    values.append(read())
print(json.dumps(values))
"""

LEVELS = ("shmem", "sockstat")
"""Channels whose counter holds the bit (the rest count events: the change is the bit)."""
CHANNELS = ("shmem", "sockstat", "softnet", "statvfs")


def decode(values: list[int], level: bool) -> str:
    """Slots above the median (of the levels, or of the changes) are ones; `values` has
    one reading before the first slot. The median of an even count of slots lies between
    the two middle ones."""
    signal = values[1:] if level else [b - a for a, b in itertools.pairwise(values)]
    ranked = sorted(signal)
    middle = (ranked[(len(ranked) - 1) // 2] + ranked[len(ranked) // 2]) / 2
    return "".join("1" if v > middle else "0" for v in signal)


def measure(
    channel: str, bits: int = 128, slot_ms: float = 20.0, view: bool = True, seed: int = 0
) -> dict[str, Any]:
    """Send `bits` random bits (half of them ones) from one hardened sandbox to another."""
    rng = random.Random(seed)
    message = ["1"] * (bits // 2) + ["0"] * (bits - bits // 2)
    rng.shuffle(message)
    sent = "".join(message)
    sandbox = Sandbox(python_policy("null", [], {}), proc_view=view)
    slot = slot_ms / 1000
    start = time.monotonic() + 3.0  # both sandboxes are up before the first slot
    # The sender's output goes to a file on the disk of /usr, as a log on the host would.
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:
        log = open(Path(folder) / "system.log", "wb")  # noqa: SIM115
        stdin = sandbox.stdin()
        args = [channel, repr(start), repr(slot)]
        sender = subprocess.Popen(
            sandbox.wrap([sys.executable, "-c", SENDER, *args, sent]), stdin=stdin, stdout=log
        )
        os.close(stdin)
        try:
            done = sandbox.run(
                [sys.executable, "-c", RECEIVER, *args, str(bits)], timeout=60 + bits * slot * 4
            )
        finally:
            sender.wait(60 + bits * slot * 4)
            log.close()
    if done.returncode != 0:
        raise RuntimeError(f"the receiver failed: {done.stderr}")
    values: list[int] = json.loads(done.stdout)
    got = decode(values, channel in LEVELS)
    errors = sum(a != b for a, b in zip(sent, got, strict=True))
    p = errors / bits
    rate = 1 / slot
    return {
        "channel": channel,
        "view": view,
        "bits": bits,
        "slot_ms": slot_ms,
        "errors": errors,
        "bit_error_rate": round(p, 4),
        "raw_bits_per_s": round(rate, 2),
        "capacity_bits_per_s": round(rate * (1 - binary_entropy(min(p, 1 - p))), 2),
        "spread": max(values) - min(values),
        "sender_exit": sender.returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--channel", choices=CHANNELS, required=True)
    parser.add_argument("--bits", type=int, default=128)
    parser.add_argument("--slot-ms", type=float, default=20.0)
    parser.add_argument(
        "--no-view", action="store_true", help="the live /proc files, as boxes had them before"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.channel, args.bits, args.slot_ms, not args.no_view, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
