"""The questions the timeline page (``continuation show --html``, ``continuation serve``) asks.

A page shows a window of a thread (a few dozen turns) and an outline of all of it, so every
read here is either bounded by a seq window through an index, or an aggregate the database
computes without handing back the rows (counts per bucket of the log, the turns' bounds).
"""
from __future__ import annotations

from statemachine.records import InputRecord, ToolCallRecord

from continuation.host import jsontext


class TimelineReads:
    """Mixed into the store: every method runs ``self.sql``'s statements on ``self.conn``."""

    def turn_outline(self, thread_key: str) -> list[tuple[str, str, int, int | None]]:
        """(turn id, status, started seq, ended seq) of every turn, in start order: the
        bounds a page is cut by, without decoding a turn's row in Python."""
        rows = self.conn.execute(self.sql.turn_outline, (thread_key,)).fetchall()
        out = [(r[0], r[1], int(r[2] or 0), None if r[3] is None else int(r[3])) for r in rows]
        out.sort(key=lambda t: (t[2], t[0]))
        return out

    def inputs_admitted_between(self, thread_key: str, lo: int, hi: int) -> list[InputRecord]:
        """Inputs admitted at seqs ``lo``..``hi``, in admission order (the admission index)."""
        rows = self.conn.execute(self.sql.inputs_admitted_between, (thread_key, lo, hi)).fetchall()
        return [InputRecord.from_row(self.codec.load(r[0])) for r in rows]

    def calls_started_between(self, thread_key: str, lo: int, hi: int) -> list[ToolCallRecord]:
        """Tool calls started at seqs ``lo``..``hi``, in start order (the start index)."""
        rows = self.conn.execute(self.sql.calls_started_between, (thread_key, lo, hi)).fetchall()
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in rows]

    def input_versions(self, thread_key: str, seqs) -> list[tuple[int, str, dict | None]]:
        """(seq, input id, the input's row as it was before event ``seq`` changed it, None
        when that event admitted it) of the inputs events ``seqs`` changed, read by the log's
        position (``row_versions``' key)."""
        seqs = sorted(set(int(s) for s in seqs))
        rows: list = []
        for i in range(0, len(seqs), 500):
            part = seqs[i:i + 500]
            rows += self.conn.execute(self.sql.input_versions_at(len(part)),
                                      (thread_key, *self.sql.many(part))).fetchall()
        return [(int(s), k, None if d is None else self.codec.load(d)) for s, k, d in rows]

    def versions_reach(self, thread_key: str) -> int:
        """The first seq whose row versions are kept (a thread recorded by an older schema has
        none before it)."""
        row = self.conn.execute(self.sql.undo_from, (thread_key,)).fetchone()
        return 1 if row is None else int(row[0])

    def event_density(self, thread_key: str, width: int, types) -> list[tuple[int, str, int]]:
        """(bucket, event type, count) of the events of ``types``, with bucket
        ``(seq - 1) // width``: the whole log's outline, counted by the database."""
        types = tuple(dict.fromkeys(types))
        if not types:
            return []
        return [(int(b), t, int(n)) for b, t, n in self.conn.execute(
            self.sql.event_density(len(types)), (width, thread_key, *self.sql.many(types))).fetchall()]

    def call_density(self, thread_key: str, width: int) -> list[tuple[int, str, int]]:
        """(bucket, call status, count) by start seq, as :meth:`event_density`."""
        return [(int(b), s, int(n)) for b, s, n in self.conn.execute(
            self.sql.call_density, (width, thread_key)).fetchall()]

    def event_times(self, thread_key: str, seqs) -> dict[int, float]:
        """seq -> the time it was recorded, for ``seqs`` (no payload is read)."""
        seqs = sorted(set(int(s) for s in seqs))
        out: dict[int, float] = {}
        for i in range(0, len(seqs), 500):
            part = seqs[i:i + 500]
            for s, ts in self.conn.execute(self.sql.event_times_at(len(part)),
                                           (thread_key, *self.sql.many(part))).fetchall():
                out[int(s)] = float(ts)
        return out

    def checkpoint_outline(self, thread_key: str) -> list[dict]:
        """Every checkpoint's row without its capsule and rendering, by generation."""
        return self._dict_rows(self.sql.checkpoint_outline, (thread_key,))

    def rewind_reach(self, thread_key: str, to_seq: int, kept_states, kept_statuses,
                     limit: int) -> dict:
        """What a conversation rewind to ``to_seq`` reaches, counted by the database: the
        inputs admitted after it not in ``kept_states`` and the calls started after it not in
        ``kept_statuses`` (counts by state and status, the first ``limit`` of each)."""
        sql, c = self.sql, self.conn
        states = tuple(kept_states)
        statuses = tuple(kept_statuses)
        inputs = c.execute(sql.inputs_reached(len(states)),
                           (thread_key, to_seq, *sql.many(states), limit)).fetchall()
        calls = c.execute(sql.calls_reached(len(statuses)),
                          (thread_key, to_seq, *sql.many(statuses), limit)).fetchall()
        input_counts = c.execute(sql.inputs_reached_counts(len(states)),
                                 (thread_key, to_seq, *sql.many(states))).fetchall()
        call_counts = c.execute(sql.calls_reached_counts(len(statuses)),
                                (thread_key, to_seq, *sql.many(statuses))).fetchall()
        return {"inputs": [InputRecord.from_row(self.codec.load(r[0])) for r in inputs],
                "calls": [ToolCallRecord.from_row(self.codec.load(r[0])) for r in calls],
                "input_counts": {s: int(n) for s, n in input_counts},
                "call_counts": {s: int(n) for s, n in call_counts}}

    def events_matching(self, thread_key: str, needle: str, limit: int) -> list[tuple[int, str]]:
        """(seq, type) of the newest ``limit`` events whose payload holds ``needle``, ignoring
        ASCII case. Payloads are stored as ASCII JSON, so the needle is escaped the same way
        (a non-ASCII letter matches its exact case only)."""
        escaped = jsontext.dumps(needle, ensure_ascii=True)[1:-1].lower()
        if not escaped:
            return []
        if self.codec.sealing:  # sealed payloads: opened one by one, newest first
            found = []
            for event in reversed(self.events(thread_key)):
                if escaped in jsontext.dumps(event["data"], ensure_ascii=True).lower():
                    found.append((int(event["seq"]), event["type"]))
                    if len(found) >= limit:
                        break
            return found
        return [(int(s), t) for s, t in self.conn.execute(
            self.sql.events_matching, (thread_key, escaped, limit)).fetchall()]
