"""The seccomp filter every sandboxed system runs under, compiled to classic BPF for bwrap.

bwrap's namespaces and read-only binds hold only while the system cannot change its
mounts or reach kernel state shared with other processes. Capabilities are dropped
(see sandbox.py); this filter is the second wall, and it also closes channels no
capability guards: a live system and its spares run at the same time over the same
read-only files, and record locks, page-cache residency and file-access events on
those files are visible across namespaces.

Denied, with EPERM unless said otherwise:

- changing mounts or roots: mount, umount2, pivot_root, chroot, the new mount API
  (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr);
- new namespaces: unshare, setns, and clone with a CLONE_NEW* flag; clone3 answers
  ENOSYS, so the C library falls back to clone, whose flags a classic filter can read;
- other processes' memory and identity: ptrace, process_vm_readv/writev, kcmp;
- kernel objects outside the box: keyctl, add_key, request_key, bpf, perf_event_open,
  userfaultfd, name_to_handle_at, open_by_handle_at, module, kexec, swap, reboot, acct;
- shared-state probes: mincore and cachestat (page-cache residency), preadv2/pwritev2
  with RWF_NOWAIT (residency by timing-free failure), fcntl F_GETLK / F_OFD_GETLK (other
  processes' record locks), leases and F_NOTIFY, inotify and fanotify (other processes'
  opens and reads of shared files);
- host-wide counters: sysinfo (free and shared memory, which counts every tmpfs page a
  box writes, the load averages and the host's thread count: the counters of /proc/meminfo
  and /proc/loadavg that procview.py freezes, reachable without /proc). glibc's
  sysconf(_SC_PHYS_PAGES) and (_SC_AVPHYS_PAGES) ignore the failure and return whatever
  was on the stack (Python's os.sysconf too): MemTotal of the box's /proc/meminfo, a
  frozen copy, says the same without it;
- io_uring (ENOSYS: its operations would not pass through this filter; libuv and others
  fall back to plain system calls);
- page-cache eviction succeeds without evicting anything: posix_fadvise (every advice: DONTNEED
  and NOREUSE drop another start's pages, WILLNEED sets them) and madvise's MADV_COLD and
  MADV_PAGEOUT. Residency is a bit per page that outlives the process; without these calls a
  system can only make pages resident (by reading them), and the per-start memory cgroup
  (page_cache.py) evicts every page a start brought in when it stops;
- flock succeeds without locking anything: a BSD lock on a shared read-only file is a
  bit another sandbox can test, and a real failure would break libraries that lock
  their own private files (their locks then do not exclude each other within one box).

Only the native ABI is allowed: a system call made through another ABI (i386 or x32 on
x86-64) is refused, since its numbers would slip past the table below.
"""

from __future__ import annotations

import errno
import json
import platform
import struct
from dataclasses import dataclass

from apmbench.harness.errors import ConfigError

# BPF instruction classes and fields (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_NR = 0
_ARCH = 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # little-endian: the low 32 bits come first


X32_BIT = 0x40000000
CLONE_NEW_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x00000080  # CLONE_NEWTIME
)
F_GETLK, F_OFD_GETLK, F_SETLEASE, F_GETLEASE, F_NOTIFY = 5, 36, 1024, 1025, 1026
CLONE_PIDFD = 0x00001000
STATX_MNT_ID_UNIQUE = 0x00004000
RWF_NOWAIT = 0x00000008
MADV_COLD, MADV_PAGEOUT = 20, 21
AF_INET, AF_INET6, AF_PACKET, AF_NETLINK = 2, 10, 17, 16
NETLINK_SOCK_DIAG = 4
SOL_SOCKET, SO_COOKIE, SO_NETNS_COOKIE, SO_PASSPIDFD, SO_PEERPIDFD = 1, 57, 71, 76, 77


@dataclass(frozen=True)
class Abi:
    audit_arch: int
    numbers: dict[str, int]


# The numbers of each denied call on the ABIs a harness runs on (unistd_64.h, and
# asm-generic/unistd.h for aarch64, which has no mincore-less legacy calls).
_COMMON_GENERIC = {
    "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "ptrace": 117,
    "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "keyctl": 219,
    "add_key": 217, "request_key": 218, "bpf": 280, "unshare": 97, "setns": 268,
    "perf_event_open": 241, "mincore": 232, "flock": 32, "inotify_init1": 26,
    "inotify_add_watch": 27, "fanotify_init": 262, "fanotify_mark": 263, "userfaultfd": 282,
    "name_to_handle_at": 264, "open_by_handle_at": 265, "init_module": 105,
    "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
    "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89, "clone": 220, "socket": 198,
    "getsockopt": 209, "setsockopt": 208, "statx": 291, "syslog": 116,
    "fcntl": 25, "preadv2": 286, "pwritev2": 287, "fadvise64": 223, "madvise": 233,
    "lookup_dcookie": 18, "quotactl": 60, "sysinfo": 179,
}  # fmt: skip
_NEW_API = {
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "clone3": 435, "cachestat": 451, "pidfd_open": 434,
    "pidfd_getfd": 438, "statmount": 457, "listmount": 458,
}  # fmt: skip
_X86_64 = {
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "keyctl": 250,
    "add_key": 248, "request_key": 249, "bpf": 321, "unshare": 272, "setns": 308,
    "perf_event_open": 298, "mincore": 27, "flock": 73, "inotify_init": 253,
    "inotify_init1": 294, "inotify_add_watch": 254, "fanotify_init": 300,
    "fanotify_mark": 301, "userfaultfd": 323, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "swapon": 167,
    "swapoff": 168, "reboot": 169, "acct": 163, "clone": 56, "fcntl": 72,
    "preadv2": 327, "pwritev2": 328, "fadvise64": 221, "madvise": 28, "uselib": 134,
    "ustat": 136, "sysfs": 139, "socket": 41, "getsockopt": 55, "setsockopt": 54,
    "statx": 332, "syslog": 103,
    "_sysctl": 156, "lookup_dcookie": 212, "quotactl": 179, "nfsservctl": 180, "sysinfo": 99,
}  # fmt: skip
ABIS = {
    "x86_64": Abi(0xC000003E, {**_X86_64, **_NEW_API}),
    "aarch64": Abi(0xC00000B7, {**_COMMON_GENERIC, **_NEW_API}),
}
ABIS["amd64"] = ABIS["x86_64"]
ABIS["arm64"] = ABIS["aarch64"]

DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns", "ptrace",
    "process_vm_readv", "process_vm_writev", "kcmp", "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd", "name_to_handle_at", "open_by_handle_at",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "swapon", "swapoff", "reboot", "acct", "mincore", "cachestat", "inotify_init",
    "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark", "uselib",
    "ustat", "sysfs", "_sysctl", "lookup_dcookie", "quotactl", "nfsservctl", "sysinfo",
    "syslog",
)  # fmt: skip
NOT_IMPLEMENTED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "clone3", "pidfd_open", "pidfd_getfd",
    "statmount", "listmount",
)  # fmt: skip
PRETEND_SUCCESS = ("flock", "fadvise64")
BY_ARGUMENT = {
    # call: (argument index, values refused, flag bits refused)
    "fcntl": (1, (F_GETLK, F_OFD_GETLK, F_SETLEASE, F_GETLEASE, F_NOTIFY), 0),
    "clone": (0, (), CLONE_NEW_FLAGS | CLONE_PIDFD),
    "preadv2": (5, (), RWF_NOWAIT),
    "pwritev2": (5, (), RWF_NOWAIT),
    "madvise": (2, (MADV_COLD, MADV_PAGEOUT), 0),
    "statx": (3, (), STATX_MNT_ID_UNIQUE),
    "socket": (0, (AF_INET, AF_INET6, AF_PACKET), 0),
}
BY_ARGUMENT_ERRNO = {"madvise": 0, "socket": errno.EAFNOSUPPORT, "statx": errno.EINVAL}
"""Calls refused by argument with another code than EPERM: madvise's eviction advice
succeeds without evicting (a library that asks for it must not fail); statx's unique mount
id (one host-wide counter: a later start learns how many mounts, so how many starts, the
harness made in between) answers EINVAL, as a kernel before 6.8 does, and statmount and
listmount ENOSYS; an IP or packet
socket fails as on a kernel built without that family, which libraries that probe for
IPv6 already handle."""
BY_TWO_ARGUMENTS: dict[str, tuple[str, tuple[int, int], tuple[int, tuple[int, ...]], int]] = {
    # name: (call, (index, value), (index, values), errno): refused when both arguments match
    "sock_diag": ("socket", (0, AF_NETLINK), (2, (NETLINK_SOCK_DIAG,)), errno.EPROTONOSUPPORT),
    "socket_cookies": (
        "getsockopt",
        (1, SOL_SOCKET),
        (2, (SO_COOKIE, SO_NETNS_COOKIE, SO_PEERPIDFD)),
        errno.ENOPROTOOPT,
    ),
    "pidfd_messages": ("setsockopt", (1, SOL_SOCKET), (2, (SO_PASSPIDFD,)), errno.ENOPROTOOPT),
}
"""Socket cookies: one counter for the whole host, starting at 1 at boot, that a socket takes
a number from the first time anyone asks for its cookie (SO_COOKIE, or sock_diag's reply).
Nothing else on a host asks, so a box could count it up to any value and the next read it
back: an exact store of any size. Refused: the cookie options (ENOPROTOOPT, as a kernel
without them answers) and sock_diag netlink sockets (EPROTONOSUPPORT), network or not.
A pidfd's inode number is another host-wide counter (every process and thread on the host
takes one), noisy but settable by forking: no pidfd either (pidfd_open and pidfd_getfd
answer ENOSYS, as before Linux 5.3; clone's CLONE_PIDFD EPERM; no peer's pidfd through a
socket, SO_PEERPIDFD and SO_PASSPIDFD)."""
NETWORK = frozenset({"socket"})
"""Left out of the filter when the system is given a network (`--sandbox-net`, a container
on a network other than `none`). On no network, an IP socket could reach only the box's own
loopback, and the packets it carries move per-CPU counters every process on the host reads
(/proc/self/net/softnet_stat, a per-process directory no frozen copy covers) and that
outlive the process: a store across starts (red team 9: 32-40 bits per restart)."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _deny(code: int) -> bytes:
    return _insn(_RET_K, 0, 0, _RET_ERRNO | code)


def compile_filter(machine: str | None = None, allow: frozenset[str] = frozenset()) -> bytes:
    """The filter as a BPF program (struct sock_filter[]), as bwrap's --seccomp reads it.
    `allow` leaves calls out (TEMPLATE_NEEDS: the template's own, relaxed filter; "clone"
    there means clone's CLONE_NEW* flags)."""
    name = machine or platform.machine()
    abi = ABIS.get(name)
    if abi is None:
        raise ConfigError(
            f"the sandbox's seccomp filter knows no system-call table for {name}: known are "
            f"{', '.join(sorted(ABIS))}; run with --no-sandbox (the report says unconfined)"
        )
    out = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, abi.audit_arch),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _NR),
    ]
    if abi.audit_arch == ABIS["x86_64"].audit_arch:
        out += [_insn(_JGE_K, 0, 1, X32_BIT), _deny(errno.EPERM)]
    simple = [(c, errno.EPERM) for c in DENIED] + [(c, errno.ENOSYS) for c in NOT_IMPLEMENTED]
    simple += [(c, 0) for c in PRETEND_SUCCESS]
    simple = [(c, code) for c, code in simple if c not in allow]
    for call, code in simple:
        if call in abi.numbers:  # inotify_init does not exist on aarch64
            out += [_insn(_JEQ_K, 0, 1, abi.numbers[call]), _deny(code)]
    for call, (index, values, flags) in BY_ARGUMENT.items():
        if call in allow:
            continue
        code = BY_ARGUMENT_ERRNO.get(call, errno.EPERM)
        body = [_insn(_LD_W_ABS, 0, 0, _arg_low(index))]
        for value in values:
            body += [_insn(_JEQ_K, 0, 1, value), _deny(code)]
        if flags:
            body += [_insn(_JSET_K, 0, 1, flags), _deny(code)]
        body.append(_insn(_LD_W_ABS, 0, 0, _NR))  # the next rule compares the call again
        out += [_insn(_JEQ_K, 0, len(body), abi.numbers[call]), *body]
    for name, (call, (first, value), (second, values), code) in BY_TWO_ARGUMENTS.items():
        if name in allow:
            continue
        inner = [_insn(_LD_W_ABS, 0, 0, _arg_low(second))]
        for v in values:
            inner += [_insn(_JEQ_K, 0, 1, v), _deny(code)]
        body = [_insn(_LD_W_ABS, 0, 0, _arg_low(first)), _insn(_JEQ_K, 0, len(inner), value)]
        body += [*inner, _insn(_LD_W_ABS, 0, 0, _NR)]
        out += [_insn(_JEQ_K, 0, len(body), abi.numbers[call]), *body]
    out.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(out)


_DOCKER_ARCH = {0xC000003E: "SCMP_ARCH_X86_64", 0xC00000B7: "SCMP_ARCH_AARCH64"}


def docker_profile(machine: str | None = None, network: bool = False) -> str:
    """The same filter as a Docker seccomp profile (JSON), for `--security-opt seccomp=`.

    Docker applies one profile: this one replaces its default. Everything the default
    refuses beyond this list needs a capability, and a system's container has none
    (cap_drop ALL, no-new-privileges), so nothing the default stopped gets through; what
    this list adds is what no capability guards (lock inspection, page-cache residency,
    file-access events, io_uring). Calls of another ABI meet the bad-architecture action.
    With `network` (a container on a network), IP sockets are allowed (`NETWORK`)."""
    name = machine or platform.machine()
    abi = ABIS.get(name)
    if abi is None:
        compile_filter(name)  # raises the error that names the known machines
        raise AssertionError("unreachable")
    rules: list[dict[str, object]] = [
        {"names": [c for c in DENIED if c in abi.numbers], "action": "SCMP_ACT_ERRNO",
         "errnoRet": errno.EPERM},
        {"names": [c for c in NOT_IMPLEMENTED if c in abi.numbers], "action": "SCMP_ACT_ERRNO",
         "errnoRet": errno.ENOSYS},
        {"names": list(PRETEND_SUCCESS), "action": "SCMP_ACT_ERRNO", "errnoRet": 0},
    ]  # fmt: skip
    for call, (index, values, flags) in BY_ARGUMENT.items():
        if network and call in NETWORK:
            continue
        conditions = [{"index": index, "value": v, "op": "SCMP_CMP_EQ"} for v in values]
        bits = [1 << shift for shift in range(32) if flags >> shift & 1]
        conditions += [
            {"index": index, "value": bit, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}
            for bit in bits
        ]
        # One rule per condition: Docker ANDs the conditions within a rule.
        code = BY_ARGUMENT_ERRNO.get(call, errno.EPERM)
        rules += [
            {"names": [call], "action": "SCMP_ACT_ERRNO", "errnoRet": code, "args": [c]}
            for c in conditions
        ]
    for call, (first, value), (second, values), code in BY_TWO_ARGUMENTS.values():
        rules += [
            {
                "names": [call], "action": "SCMP_ACT_ERRNO", "errnoRet": code,
                "args": [
                    {"index": first, "value": value, "op": "SCMP_CMP_EQ"},
                    {"index": second, "value": v, "op": "SCMP_CMP_EQ"},
                ],
            }
            for v in values
        ]  # fmt: skip
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [_DOCKER_ARCH[abi.audit_arch]],
        "syscalls": rules,
    }
    return json.dumps(profile, sort_keys=True)


def describe() -> dict[str, object]:
    """What the manifest records of the filter."""
    return {
        "denied": sorted(DENIED),
        "not_implemented": sorted(NOT_IMPLEMENTED),
        "pretend_success": sorted(PRETEND_SUCCESS),
        "by_argument": {
            "fcntl": ["F_GETLK", "F_OFD_GETLK", "F_SETLEASE", "F_GETLEASE", "F_NOTIFY"],
            "clone": ["CLONE_NEW*", "CLONE_PIDFD"],
            "preadv2": ["RWF_NOWAIT"],
            "pwritev2": ["RWF_NOWAIT"],
            "madvise": ["MADV_COLD", "MADV_PAGEOUT (succeed without evicting)"],
            "statx": ["STATX_MNT_ID_UNIQUE (EINVAL)"],
            "socket": [
                "AF_INET",
                "AF_INET6",
                "AF_PACKET (EAFNOSUPPORT; allowed on a network)",
                "AF_NETLINK with NETLINK_SOCK_DIAG (EPROTONOSUPPORT)",
            ],
            "getsockopt": ["SOL_SOCKET SO_COOKIE, SO_NETNS_COOKIE, SO_PEERPIDFD (ENOPROTOOPT)"],
            "setsockopt": ["SOL_SOCKET SO_PASSPIDFD (ENOPROTOOPT)"],
        },
        "other_abis": "refused",
    }


BWRAP_NEEDS = (
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "unshare", "setns",
)  # fmt: skip
"""What bwrap calls to build a sandbox: the filter above refuses them to the system, so a
container the harness itself runs in must allow them (with clone's CLONE_NEW* flags)."""
TEMPLATE_NEEDS = frozenset({"unshare", "mount", "clone", "socket"})
"""What the template's start processes call before they install the full filter (new
namespaces, their own /proc, /tmp, /dev/shm, /dev/pts, covers, and an IP socket to bring
the new network namespace's loopback up): left out of the template's own filter, which is
stacked under the full one in every start."""
SHARED_STATE = (
    "mincore", "cachestat", "inotify_init", "inotify_init1", "inotify_add_watch",
    "fanotify_init", "fanotify_mark", "sysinfo",
)  # fmt: skip
"""Channels between sandboxes over shared files and host-wide counters: closed to systems
by the filter above, left to the harness (which shares nothing with another harness's
systems, and whose libraries size themselves with sysinfo)."""


def pod_profile(machine: str | None = None) -> str:
    """The seccomp profile of a container the harness runs in and starts sandboxes from (a
    Kubernetes shard's pod, deploy/k8s/seccomp/apmbench-harness.json): allow by default;
    refuse what neither the harness nor bwrap needs and what reaches kernel objects outside
    the container (tracing, keyrings, BPF, modules, io_uring). Runtime default profiles
    refuse user namespaces and mounts to a container without CAP_SYS_ADMIN, which is why
    the harness cannot use them; the namespace and mount calls are allowed here, and each
    system then runs under `compile_filter`'s filter too, which refuses them."""
    name = machine or platform.machine()
    abi = ABIS.get(name)
    if abi is None:
        compile_filter(name)  # raises the error that names the known machines
        raise AssertionError("unreachable")
    denied = [c for c in DENIED if c not in BWRAP_NEEDS and c not in SHARED_STATE]
    io_uring = [c for c in NOT_IMPLEMENTED if c.startswith("io_uring")]
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [_DOCKER_ARCH[abi.audit_arch]],
        "syscalls": [
            {"names": [c for c in denied if c in abi.numbers], "action": "SCMP_ACT_ERRNO",
             "errnoRet": errno.EPERM},
            {"names": io_uring, "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS},
        ],
    }  # fmt: skip
    return json.dumps(profile, indent=2, sort_keys=True) + "\n"
