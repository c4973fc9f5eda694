"""Processes of this machine: whether one exists, and whether a recorded one is provably gone.

A process is named by more than its pid, which the kernel reuses and which means nothing on
another machine or in another PID namespace (containers on one host often share a host
name): `ProcessIdentity` adds the host name, the kernel's boot id, the PID namespace and
the process's start time.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


def process_exists(pid: int) -> bool:
    """True unless no process has this pid (one we may not signal still exists)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class ProcessIdentity:
    """Who a process is: host name, boot id, PID namespace, pid and start time (clock ticks
    after boot); the Linux-only parts are None elsewhere."""

    host: str
    boot_id: str | None
    pid_namespace: str | None
    pid: int
    start_ticks: int | None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (field 22 of /proc/PID/stat), or None when there is none."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def this_process() -> ProcessIdentity:
    """The identity of this process."""
    try:
        namespace: str | None = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = None
    pid = os.getpid()
    return ProcessIdentity(socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"),
                           namespace, pid, start_ticks(pid))


def provably_gone(holder: ProcessIdentity, here: ProcessIdentity | None = None) -> bool:
    """True only when `holder` ran on this machine since its last boot, in this PID
    namespace, and no process with its pid and start time exists any more. Anything less
    certain (another host, a container that shares the host name, a record without these
    facts) is not proof."""
    me = here or this_process()
    if None in (holder.boot_id, holder.pid_namespace, holder.start_ticks, me.boot_id,
                me.pid_namespace):
        return False
    if (holder.host, holder.boot_id, holder.pid_namespace) != (
            me.host, me.boot_id, me.pid_namespace):
        return False
    return start_ticks(holder.pid) != holder.start_ticks
