"""Who took a claimed snapshot: host, pid and start time of the process that took it.

A checkpoint claims its generation with its snapshot ref before it commits to the store. When
the process is killed in between, the ref names no checkpoint; the next checkpoint may take the
generation over (generations stay consecutive), but only when that process is gone: a claim
whose process still runs, or that was made on another host, is left alone (the next generation
is used instead).
"""

from __future__ import annotations

import os

OWNER_TRAILER = "Continuation-Owner"


def current_owner() -> str:
    from continuation.host.liveness import hostname, proc_start

    pid = os.getpid()
    return f"{hostname()} {pid} {proc_start(pid) or '-'}"


def abandoned(owner: str | None) -> bool:
    """True only when ``owner`` names a process of this host that is gone (or whose pid now
    names another process)."""
    from continuation.host.liveness import DEAD, owner_status

    if not owner:
        return False
    parts = owner.split(" ")
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    host, pid, start = parts
    return owner_status({"host": host, "pid": int(pid),
                         "proc_start": None if start == "-" else start}) == DEAD


def owner_of_commit(message: str) -> str | None:
    """The owner trailer of a snapshot commit message."""
    for line in reversed(message.splitlines()):
        if line.startswith(OWNER_TRAILER + ": "):
            return line[len(OWNER_TRAILER) + 2:].strip()
    return None
