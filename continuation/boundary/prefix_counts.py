"""Counts over the older part of the log, kept from one boundary to the next.

A boundary's "(not gathered)" cuts count what it does not read: how many older runtime facts
and assistant claims there are, their stored bytes and their first and last seq. Those rows
are a prefix of an append-only log (events are never changed; claims are derived from them),
so the counts of the rows in a seq range stay true for good. They are kept per thread in
``<state home>/counts/<thread>/prefix.json``, and the next boundary only counts the rows
between a kept position and its own: the cost no longer grows with the thread.

After a rewind the selection is the current branch: inclusive seq ranges (a rewind ends the
newest range at the position rewound to and starts a new one at its ``rolled_back`` fact).
Each range is counted on its own, from the counts kept for the same range start at the
nearest position at or below the range's end (the last :data:`POSITIONS_KEPT` positions of
each start are kept, one per boundary), plus the rows since. So the first boundary after a
rewind to a recent checkpoint reads only the rows past that checkpoint's boundary, not the
whole branch again.

An entry names its query (a hash of the SQL and its arguments, the positions excluded); a
missing, torn or foreign file, another query, or no kept position at or below a range's end
means counting that range from scratch, never a wrong count. The file is a cache: written
without fsync, replaced atomically, deleted with its thread (``THREAD_FOLDERS``).
"""
from __future__ import annotations

import hashlib
import json
import os

FOLDER = "counts"
FILE = "prefix.json"
#: positions kept per range start (a boundary adds one)
POSITIONS_KEPT = 32
#: queries kept per thread (an "as of" build asks another one; the oldest is dropped)
QUERIES_KEPT = 16

#: (items, bytes, first seq, last seq) of a selection
Totals = tuple[int, int, "int | None", "int | None"]
EMPTY: Totals = (0, 0, None, None)


def _merge(a: Totals, b: Totals) -> Totals:
    firsts = [x for x in (a[2], b[2]) if x is not None]
    lasts = [x for x in (a[3], b[3]) if x is not None]
    return (a[0] + b[0], a[1] + b[1], min(firsts) if firsts else None,
            max(lasts) if lasts else None)


class PrefixCounts:
    """The kept counts of one thread; :meth:`count` answers and records, :meth:`save` keeps."""

    def __init__(self, home, thread_key: str):
        self._path = os.path.join(os.fspath(home), FOLDER, thread_key, FILE)
        self._entries: dict = {}
        self._changed = False
        try:
            with open(self._path, encoding="utf-8") as fh:
                loaded = json.load(fh)
            if isinstance(loaded, dict):
                self._entries = loaded
        except (OSError, ValueError):
            pass  # no cache (or a torn one): count from scratch

    def count(self, totals, name: str, selection, before: int,
              ranges: list[tuple[int, int]] | None = None) -> Totals:
        """Totals of the rows of one selection whose seq is below ``before`` and, with
        ``ranges`` (the current branch: inclusive seq ranges, any order), inside one of them.
        ``totals(lo, hi)`` counts the selection's rows with seq in ``[lo, hi]`` (the store
        does, in the database); ``selection`` (JSON data) names it in the kept counts."""
        sig = hashlib.sha256(json.dumps(selection, default=str).encode()).hexdigest()
        starts = self._starts(f"{name} {sig[:32]}")
        total = EMPTY
        for lo, hi in (ranges if ranges is not None else [(1, before - 1)]):
            end = min(hi, before - 1)
            if end >= lo:
                total = _merge(total, self._range(totals, starts, lo, end))
        return total

    def _starts(self, key: str) -> dict:
        """The kept positions of one query, by range start (the query moves to the newest)."""
        entry = self._entries.pop(key, None)
        if not (isinstance(entry, dict) and isinstance(entry.get("starts"), dict)):
            entry = {"starts": {}}
            self._changed = True
        self._entries[key] = entry
        for old in list(self._entries)[:-QUERIES_KEPT]:
            del self._entries[old]
        return entry["starts"]

    def _range(self, totals_of, starts: dict, lo: int, end: int) -> Totals:
        """Totals of the rows in ``[lo, end]``: the kept ones of the nearest position at or
        below ``end + 1`` for this start, plus the rows from there."""
        kept = starts.get(str(lo))
        kept = [p for p in kept if _valid(p) and lo < p[0]] if isinstance(kept, list) else []
        points = [p for p in kept if p[0] <= end + 1]
        base, since = EMPTY, lo
        if points:
            nearest = max(points, key=lambda p: p[0])
            base, since = (nearest[1], nearest[2], nearest[3], nearest[4]), nearest[0]
        totals = base
        if since <= end:
            totals = _merge(base, totals_of(since, end))
            kept = [p for p in kept if p[0] != end + 1]
            starts[str(lo)] = [*kept, [end + 1, *totals]][-POSITIONS_KEPT:]
            self._changed = True
        return totals

    def save(self) -> None:
        """Keep the counts for the next boundary (best effort: a cache)."""
        if not self._changed:
            return
        from continuation.host.paths import ensure_private_dir

        tmp = f"{self._path}.{os.getpid()}.tmp"
        try:
            # owner-only, like everything under the state home (``counts/`` was left 0755)
            ensure_private_dir(os.path.dirname(self._path))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(self._entries))  # dumps: the C encoder (dump is Python's)
            os.replace(tmp, self._path)
            self._changed = False
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _valid(point) -> bool:
    """A kept position: ``[position, items, bytes, first seq, last seq]``."""
    return (isinstance(point, list) and len(point) == 5
            and all(isinstance(x, int) and not isinstance(x, bool) for x in point[:3])
            and all(x is None or (isinstance(x, int) and not isinstance(x, bool))
                    for x in point[3:]))
