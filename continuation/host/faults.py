"""Named persistence points where the fault-injection harness can kill the process.

``CONTINUATION_FAULT=<point>`` makes the process SIGKILL itself when it reaches that point (the
harness in tests/ runs a scripted session once per point); ``<point>:full`` makes it fail there
as a full disk does (``OSError`` ENOSPC); ``<point>:hang`` makes it block there (a hook's
deadline test). Unset, a point costs one dict lookup.
"""
from __future__ import annotations

import os

#: the points a hook's persistence passes (the harness kills a PreCompact or an event append at
#: each); a checkpoint is one store transaction with the boundary it was taken for
#: (``checkpoint.before_commit``, ``checkpoint.after_commit``), no file. File
#: writes (``atomic_write``: a spilled context, a handoff prompt) pass ``file.mid_write``,
#: ``file.before_rename`` and ``file.before_dir_fsync``.
POINTS = (
    "event.before_commit",
    "event.after_commit",
    "checkpoint.before_commit",
    "checkpoint.after_commit",
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
