"""Named persistence points where the fault-injection harness can kill the process.

``CONTINUATION_FAULT=<point>`` makes the process SIGKILL itself when it reaches that point (the
harness in tests/ runs a scripted session once per point); ``<point>:full`` makes it fail there
as a full disk does (``OSError`` ENOSPC); ``<point>:hang`` makes it block there (a hook's
deadline test). Unset, a point costs one dict lookup.
"""
from __future__ import annotations

import os

POINTS = (
    "event.before_commit",
    "event.after_commit",
    "capsule.mid_write",
    "capsule.before_rename",
    "capsule.before_dir_fsync",
    "checkpoint.before_commit",
    "snapshot.mid",
)


def point(name: str) -> None:
    armed = os.environ.get("CONTINUATION_FAULT")
    if not armed:
        return
    if armed == name + ":hang":
        import time

        time.sleep(24 * 3600)
    if armed == name + ":full":
        import errno

        raise OSError(errno.ENOSPC, f"No space left on device (injected at {name})")
    if armed == name:
        import signal  # only when a fault is armed: the import is a share of a hook run

        kill = getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has no SIGKILL
        os.kill(os.getpid(), kill)
