"""Counts over the older part of the log, kept from one boundary to the next (issue 15).

A boundary's "(not gathered)" cuts count what it does not read: how many older runtime facts
and assistant claims there are, their stored bytes and their first and last seq. Those rows
are a prefix of an append-only log (events are never changed; claims are derived from them),
so the counts of the rows before a position stay true for good. They are kept per thread in
``<state home>/counts/<thread>/prefix.json``, and the next boundary only counts the rows
between the kept position and its own: the cost no longer grows with the thread.

An entry names its query (a hash of the SQL and its arguments, the position excluded); a
missing, torn or foreign file, another query, or a position before the kept one means
counting from scratch, never a wrong count. The file is a cache: written without fsync,
replaced atomically, deleted with its thread (``THREAD_FOLDERS``). After a rewind the
selection is the current branch, whose filter changes with each rewind (and so does the entry's
hash: counted from scratch once, then extended again).
"""
from __future__ import annotations

import hashlib
import json
import os

FOLDER = "counts"
FILE = "prefix.json"

#: (items, bytes, first seq, last seq) of a selection
Totals = tuple[int, int, "int | None", "int | None"]


def _merge(a: Totals, b: Totals) -> Totals:
    firsts = [x for x in (a[2], b[2]) if x is not None]
    lasts = [x for x in (a[3], b[3]) if x is not None]
    return (a[0] + b[0], a[1] + b[1], min(firsts) if firsts else None,
            max(lasts) if lasts else None)


def totals_of(conn, rows_sql: str, args) -> Totals:
    """Totals of the rows ``rows_sql`` selects (columns ``seq`` and ``size``), counted by the
    database: no row is brought into Python."""
    n, size, first, last = conn.execute(
        f"SELECT count(*), sum(size), min(seq), max(seq) FROM ({rows_sql}) AS unread",
        tuple(args)).fetchone()
    return int(n or 0), int(size or 0), first, last


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

    def count(self, conn, name: str, rows_sql: str, args, before: int) -> Totals:
        """Totals of the rows ``rows_sql`` selects (columns ``seq`` and ``size``) whose seq is
        below ``before``: the kept totals of an earlier position plus the rows since."""
        sig = hashlib.sha256(json.dumps([rows_sql, list(args)], default=str).encode()).hexdigest()
        kept = self._entries.get(name)
        base: Totals = (0, 0, None, None)
        since = None
        if isinstance(kept, dict) and kept.get("sig") == sig and _valid(kept, before):
            base, since = (kept["n"], kept["size"], kept["first"], kept["last"]), kept["before"]
        sql, extra = f"{rows_sql} AND seq<?", [before]
        if since is not None:
            sql, extra = f"{sql} AND seq>=?", [before, since]
        totals = _merge(base, totals_of(conn, sql, (*args, *extra)))
        if since != before:
            self._entries[name] = {"sig": sig, "before": before, "n": totals[0],
                                   "size": totals[1], "first": totals[2], "last": totals[3]}
            self._changed = True
        return totals

    def save(self) -> None:
        """Keep the counts for the next boundary (best effort: a cache)."""
        if not self._changed:
            return
        tmp = f"{self._path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self._path), mode=0o700, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self._entries, fh)
            os.replace(tmp, self._path)
            self._changed = False
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _valid(kept: dict, before: int) -> bool:
    try:
        return (isinstance(kept["before"], int) and kept["before"] <= before
                and all(isinstance(kept[k], int) for k in ("n", "size"))
                and all(kept[k] is None or isinstance(kept[k], int) for k in ("first", "last")))
    except KeyError:
        return False
