"""How a time and a size are written for a person: one style, whichever floor prints it.

A time is UTC in the RFC 3339 profile of ISO 8601, to the second, with a space and a ``Z``:
``2026-01-02 03:04:05Z``. One zone for every machine and every log line, so a time copied from
one command's output compares with another's, and a team sharing a store server reads the same
clock. A size is in powers of 1024 with IEC units (``512 B``, ``16.0 KiB``, ``256.0 MiB``), as
``--keep-bytes`` and ``CONTINUATION_KEEP_BYTES`` read them. JSON output keeps exact numbers.
"""
from __future__ import annotations

import time

#: what a missing time or size prints as
ABSENT = "-"


def utc_time(ts: float | None) -> str:
    """``2026-01-02 03:04:05Z``; ``-`` for no time."""
    if ts is None or ts == "":
        return ABSENT
    try:
        return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(float(ts)))
    except (TypeError, ValueError, OverflowError, OSError):
        return ABSENT


def size_text(n: int | float | None) -> str:
    """``512 B``, ``1.5 KiB``, ``256.0 MiB``, ``3.2 GiB``, ``1.0 TiB``; ``-`` for no size."""
    if n is None:
        return ABSENT
    value = float(n)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < 1024:
        return f"{sign}{value:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if round(value, 1) < 1024:
            return f"{sign}{value:.1f} {unit}"
    return f"{sign}{value / 1024:.1f} TiB"
