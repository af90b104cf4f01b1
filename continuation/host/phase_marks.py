"""Timestamps of a boundary's phases, for finding where its time goes.

With ``CONTINUATION_PHASE_MARKS`` naming a file, each phase a boundary reaches (the hook
having read its payload, the snapshot's thread reaching git's scan, the worker's models
and tokenizer ready, the request and the reply, the commit; a files rewind's planning,
restore and record) appends one line to it:
``<time ns> <process id> <boundary's process id> <label>``. The worker, another process,
writes under its own process id and its boundary's, so the lines of one boundary are found
together. ``scripts/trace_precompact.py`` runs PreCompact hooks (``--rewind``: files rewinds)
this way and prints the median timeline; the README's "Where the time goes" is read off it.

With the same variable, :func:`mark_modules` writes the modules a process holds, as one mark
(``modules of <whom>: <name> <name>...``): a boundary's process as it forks its capsule worker
and as it ends, the worker as it ends. What both import after the fork is imported twice, once
per process (``capsule_worker.SHARED_MODULES`` is imported before the fork for that reason);
:func:`modules_marked` reads them back.

Unset (always, but for that script and the tests), a mark is one environment lookup. The hot path
(UserPromptSubmit, PreToolUse, PostToolUse) marks nothing. A mark that cannot be written is
dropped: it never fails a boundary.
"""
from __future__ import annotations

import os
import time

VARIABLE = "CONTINUATION_PHASE_MARKS"

#: the boundary's process id a worker's marks go under (set in the worker; None: this process)
boundary_pid: int | None = None
#: how a mark of :func:`mark_modules` begins (:func:`read` leaves those out)
MODULES_PREFIX = "modules of "


def mark(label: str) -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    line = f"{time.time_ns()} {os.getpid()} {boundary_pid or os.getpid()} {label}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())  # one write per line: appends do not interleave
        finally:
            os.close(fd)
    except OSError:
        pass


def mark_modules(whom: str) -> None:
    """A mark naming every module this process has imported (see the module's docstring)."""
    if os.environ.get(VARIABLE):
        import sys

        mark(f"{MODULES_PREFIX}{whom}: " + " ".join(sorted(sys.modules)))


def modules_marked(path) -> dict[str, set[str]]:
    """whom -> the modules :func:`mark_modules` wrote for it (the last mark of each)."""
    found = {}
    for *_, label in _lines(path):
        if label.startswith(MODULES_PREFIX):
            whom, _, names = label[len(MODULES_PREFIX):].partition(": ")
            found[whom] = set(names.split())
    return found


def read(path) -> list[tuple[int, int, int, str]]:
    """The phases marked in ``path``: (time ns, process id, boundary's process id, label);
    not the module lists (:func:`modules_marked`)."""
    return [m for m in _lines(path) if not m[3].startswith(MODULES_PREFIX)]


def _lines(path) -> list[tuple[int, int, int, str]]:
    marks = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            ns, pid, boundary, label = line.rstrip("\n").split(" ", 3)
            marks.append((int(ns), int(pid), int(boundary), label))
    return marks
