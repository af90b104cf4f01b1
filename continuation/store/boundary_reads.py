"""What a boundary reads to gather a capsule, bounded: the newest rows, and totals of the rest
counted by the database (no unread row, not even a size or a seq, is brought into Python), so a
boundary stays flat in the thread's length.
"""
from __future__ import annotations


Totals = tuple[int, int, "int | None", "int | None"]


class BoundaryReads:
    """Mixed into the store: every method runs ``self.sql``'s statements on ``self.conn``."""

    def open_and_newest_inputs(self, thread_key: str, open_states, historical,
                               limit: int) -> tuple[list[dict], list[tuple[dict, int, int]]]:
        """(data of every input in ``open_states``, (data, admitted seq, bytes) of the newest
        ``limit`` in ``historical``, newest first)."""
        sql, open_states, historical = self.sql, list(open_states), list(historical)
        rows = self.conn.execute(sql.inputs_in_states(open_states, ordered=False),
                                 (thread_key, *sql.many(open_states))).fetchall()
        newest = self.conn.execute(sql.newest_inputs_in_states(len(historical)),
                                   (thread_key, *sql.many(historical), limit)).fetchall()
        return ([self.codec.load(r[0]) for r in rows],
                [(self.codec.load(d), int(s), int(b or 0)) for d, s, b in newest])

    def unread_inputs(self, thread_key: str, states, total, read, below: int) -> tuple:
        """(items, bytes, first, last admitted seq) of the inputs in ``states`` admitted
        before ``below`` (those a boundary did not read): ``total`` (count, bytes) of all of
        them less ``read``, and the first and last unread from each state's index."""
        items, size = int(total[0]) - read[0], int(total[1]) - read[1]
        if items <= 0:
            return 0, 0, None, None
        edges = [int(row[0]) for state in states
                 for statement in (self.sql.first_input_in_state_below,
                                   self.sql.last_input_in_state_below)
                 for row in [self.conn.execute(statement, (thread_key, state, below)).fetchone()]
                 if row is not None]
        return items, size, min(edges, default=None), max(edges, default=None)

    def newest_claims(self, thread_key: str, upto: int | None, ranges, limit: int) -> list[dict]:
        """The newest ``limit`` claims up to ``upto`` on the current branch (``ranges`` of
        seqs; None: every seq), oldest first."""
        sql = self.sql
        rows = self.conn.execute(
            sql.newest_claims(None if ranges is None else len(ranges)),
            (thread_key, sql.NO_BOUND if upto is None else upto,
             *[x for r in ranges or () for x in r], limit)).fetchall()
        return [{"seq": q, "turn_id": t, "text": self.codec.load_text(x)}
                for q, t, x in reversed(rows)]

    def seq_size_totals(self, selection: str, thread_key: str, lo: int, hi: int, *,
                        upto: int | None = None, types=()) -> Totals:
        """(count, bytes, first seq, last seq) of the rows of ``selection`` (``claims``, or
        ``events`` of ``types``, of every type when none) with seq in ``[lo, hi]`` (and up to
        ``upto``), counted by the database: no row is brought into Python."""
        sql = self.sql
        bound = sql.NO_BOUND if upto is None else upto
        if selection == "claims":
            statement, args = sql.claim_totals(), (thread_key, bound, lo, hi)
        elif selection == "events":
            statement = sql.event_totals(len(types))
            args = (thread_key, *(sql.many(types) if types else ()), bound, lo, hi)
        else:
            raise ValueError(f"no selection {selection!r}: claims or events")
        n, size, first, last = self.conn.execute(statement, args).fetchone()
        return int(n or 0), int(size or 0), first, last

    def unread_finished_calls(self, thread_key: str, finished, gathered: list[str],
                              upto_seq: int | None) -> tuple:
        """Totals of the calls in ``finished`` states (started up to ``upto_seq``) other than
        ``gathered``: (items, bytes, first, last started seq). Counted without a test per row:
        the total from the state index less the read ones (read by key: a filter by state
        would test every call's id), and the first and last unread start from each state's
        index, walked from either end past the read rows (they are few)."""
        sql, finished = self.sql, list(finished)
        upto = sql.NO_BOUND if upto_seq is None else upto_seq
        total = self.conn.execute(sql.calls_totals_in_statuses(len(finished)),
                                  (thread_key, *sql.many(finished), upto)).fetchone()
        read = (0, 0)
        if gathered:
            sizes = [(size or 0) for status, seq, size in self.conn.execute(
                sql.calls_by_id(len(gathered)), (thread_key, *sql.many(gathered))).fetchall()
                if status in finished and seq <= upto]
            read = (len(sizes), sum(sizes))
        items, size = int(total[0] or 0) - read[0], int(total[1] or 0) - read[1]
        if items <= 0:
            return 0, 0, None, None
        excluded = sql.many(gathered) if gathered else ()
        edges = []
        for status in finished:
            for last in (False, True):
                row = self.conn.execute(sql.call_edge_in_status(len(gathered), last=last),
                                        (thread_key, status, upto, *excluded)).fetchone()
                if row is not None:
                    edges.append(int(row[0]))
        return items, size, min(edges, default=None), max(edges, default=None)
