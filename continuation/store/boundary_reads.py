"""What a boundary reads to gather a capsule, bounded: the newest rows, and totals of the rest
counted by the database (no unread row, not even a size or a seq, is brought into Python), so a
boundary stays flat in the thread's length.
"""
from __future__ import annotations

from continuation.host import jsontext
from continuation.store.view import rows_in_states

Totals = tuple[int, int, "int | None", "int | None"]

#: the append-only selections whose older rows are counted, each as (seq, size) rows
_SEQ_SIZE_ROWS = {
    "claims": "SELECT seq, length(CAST(text AS BLOB)) AS size FROM claims WHERE thread_key=?",
    "events": "SELECT seq, length(CAST(data AS BLOB)) AS size FROM events WHERE thread_key=?",
}


def seq_filter(upto: int | None, ranges: list[tuple[int, int]] | None) -> tuple[str, list]:
    """SQL (and its arguments) keeping the seqs up to ``upto`` on the current branch."""
    sql, args = "", []
    if upto is not None:
        sql, args = " AND seq<=?", [upto]
    if ranges is not None:
        sql += " AND (" + " OR ".join("seq BETWEEN ? AND ?" for _ in ranges) + ")"
        args += [x for r in ranges for x in r]
    return sql, args


class BoundaryReads:
    """Mixed into the store classes: every method reads through ``self.conn``."""

    def open_and_newest_inputs(self, thread_key: str, open_states, historical,
                               limit: int) -> tuple[list[dict], list[tuple[dict, int, int]]]:
        """(data of every input in ``open_states``, (data, admitted seq, bytes) of the newest
        ``limit`` in ``historical``, newest first)."""
        rows = self.conn.execute(f"SELECT data {rows_in_states('inputs', open_states)}",
                                 (thread_key, *open_states)).fetchall()
        marks = ",".join("?" * len(historical))
        newest = self.conn.execute(
            f"SELECT data, admitted_seq, data_bytes FROM inputs WHERE thread_key=?"
            f" AND state IN ({marks}) ORDER BY admitted_seq DESC LIMIT ?",
            (thread_key, *historical, limit)).fetchall()
        return ([jsontext.loads(r[0]) for r in rows],
                [(jsontext.loads(d), int(s), int(b or 0)) for d, s, b in newest])

    def unread_inputs(self, thread_key: str, states, total, read, below: int) -> tuple:
        """(items, bytes, first, last admitted seq) of the inputs in ``states`` admitted
        before ``below`` (those a boundary did not read)."""
        return self._unread_totals("inputs", "state", "admitted_seq", thread_key, states, total,
                                   read, " AND admitted_seq<?", [below])

    def newest_claims(self, thread_key: str, upto: int | None, ranges, limit: int) -> list[dict]:
        where, args = seq_filter(upto, ranges)
        rows = self.conn.execute(
            f"SELECT seq, turn_id, text FROM claims WHERE thread_key=?{where} ORDER BY seq DESC"
            " LIMIT ?", (thread_key, *args, limit)).fetchall()
        return [{"seq": q, "turn_id": t, "text": x} for q, t, x in reversed(rows)]

    def seq_size_totals(self, selection: str, thread_key: str, lo: int, hi: int, *,
                        upto: int | None = None, types=()) -> Totals:
        """(count, bytes, first seq, last seq) of the rows of ``selection`` (``claims``, or
        ``events`` of ``types``) with seq in ``[lo, hi]`` (and up to ``upto``)."""
        sql, args = _SEQ_SIZE_ROWS[selection], [thread_key]
        if types:
            sql += f" AND type IN ({','.join('?' * len(types))})"
            args += list(types)
        upto_sql, upto_args = seq_filter(upto, None)
        return self.totals_of(f"{sql}{upto_sql} AND seq>=? AND seq<=?", (*args, *upto_args, lo, hi))

    def unread_finished_calls(self, thread_key: str, finished, gathered: list[str],
                              upto_seq: int | None) -> tuple:
        """Totals of the calls in ``finished`` states (started up to ``upto_seq``) other than
        ``gathered``: (items, bytes, first, last started seq)."""
        marks = ",".join("?" * len(finished))
        within_sql, within_args = ("", [])
        if upto_seq is not None:
            within_sql, within_args = " AND started_seq<=?", [upto_seq]
        where = f" FROM tool_calls WHERE thread_key=? AND status IN ({marks}){within_sql}"
        total = self.conn.execute(f"SELECT count(*), sum(data_bytes){where}",
                                  (thread_key, *finished, *within_args)).fetchone()
        read, unread_sql = (0, 0), ""
        if gathered:  # the read ones by their key (a filter by state would test every call's id)
            ids = ",".join("?" * len(gathered))
            rows = [(size or 0) for status, seq, size in self.conn.execute(
                f"SELECT status, started_seq, data_bytes FROM tool_calls WHERE thread_key=?"
                f" AND call_id IN ({ids})", (thread_key, *gathered)).fetchall()
                if status in finished and (upto_seq is None or seq <= upto_seq)]
            read, unread_sql = (len(rows), sum(rows)), f" AND call_id NOT IN ({ids})"
        return self._unread_totals("tool_calls", "status", "started_seq", thread_key, finished,
                                   (int(total[0] or 0), int(total[1] or 0)), read, unread_sql,
                                   gathered, within_sql, within_args)

    def _unread_totals(self, table: str, state: str, seq: str, key: str, states, total, read,
                       unread_sql: str, unread_args, within_sql: str = "",
                       within_args=()) -> tuple:
        """(items, bytes, first seq, last seq) of the rows of ``table`` in ``states`` (and
        ``within_sql``) that were not read (those ``unread_sql`` selects), counted without a
        test per row: ``total`` (of all of them, from the state index) minus ``read``, and the
        first and last unread seq from each state's index, walked from either end past the read
        rows (they are few)."""
        items, size = int(total[0]) - read[0], int(total[1]) - read[1]
        if items <= 0:
            return 0, 0, None, None
        edges = []
        for value in states:
            for order in ("", " DESC"):
                row = self.conn.execute(
                    f"SELECT {seq} FROM {table} WHERE thread_key=? AND {state}=?"
                    f"{within_sql}{unread_sql} ORDER BY {seq}{order} LIMIT 1",
                    (key, value, *within_args, *unread_args)).fetchone()
                if row is not None:
                    edges.append(int(row[0]))
        return items, size, min(edges, default=None), max(edges, default=None)
