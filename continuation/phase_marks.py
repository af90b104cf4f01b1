"""Timestamps of a boundary's phases, for finding where its time goes (issue 15).

With ``CONTINUATION_PHASE_MARKS`` naming a file, each phase a boundary reaches (the hook
having read its payload, the snapshot's thread reaching git's scan, the worker's models
and tokenizer ready, the request and the reply, the commit; a files rewind's planning,
restore and record) appends one line to it:
``<time ns> <process id> <boundary's process id> <label>``. The worker, another process,
writes under its own process id and its boundary's, so the lines of one boundary are found
together. ``scripts/trace_precompact.py`` runs PreCompact hooks (``--rewind``: files rewinds)
this way and prints the median timeline; the README's "Where the time goes" is read off it.

Unset (always, but for that script), a mark is one environment lookup. The hot path
(UserPromptSubmit, PreToolUse, PostToolUse) marks nothing. A mark that cannot be written is
dropped: it never fails a boundary.
"""
from __future__ import annotations

import os
import time

VARIABLE = "CONTINUATION_PHASE_MARKS"

#: the boundary's process id a worker's marks go under (set in the worker; None: this process)
boundary_pid: int | None = None


def mark(label: str) -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    line = f"{time.time_ns()} {os.getpid()} {boundary_pid or os.getpid()} {label}\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())  # one write of one short line: appends do not interleave
        finally:
            os.close(fd)
    except OSError:
        pass


def read(path) -> list[tuple[int, int, int, str]]:
    """The marks written to ``path``: (time ns, process id, boundary's process id, label)."""
    marks = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            ns, pid, boundary, label = line.rstrip("\n").split(" ", 3)
            marks.append((int(ns), int(pid), int(boundary), label))
    return marks
