"""The reducer's view of one thread, backed by the store's derived tables.

Every get/put is one indexed statement inside the caller's transaction, so folding one new
event touches only the rows that event names.
"""
from __future__ import annotations

import sqlite3

from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

from continuation.host import jsontext


def row_json(row: dict) -> str:
    """A row's ``data``: ASCII (lone surrogates survive escaped), so ``len`` is its bytes
    (the ``data_bytes`` column)."""
    return jsontext.dumps(row, ensure_ascii=True, separators=(",", ":"))


#: states few rows of a long thread are in (the open inputs, the unsettled calls): a read of
#: them names the state index. Without it SQLite's planner, which takes every state as equally
#: common, walks all the thread's rows in key order (measured at 20,000 inputs: 18 ms instead
#: of 0.1 ms per query; an ``unlikely()`` hint was not enough for three states). PostgreSQL
#: drops the hint and plans by its own statistics.
RARE_INPUT_STATES = frozenset({"new", "queued", "pending", "interrupted", "reconciling"})
RARE_CALL_STATUSES = frozenset({"in_flight", "unknown", "reconciled"})
_STATE_INDEX = {"inputs": ("state", "inputs_by_state", RARE_INPUT_STATES),
                "tool_calls": ("status", "tool_calls_by_status", RARE_CALL_STATUSES)}


def rows_in_states(table: str, values) -> str:
    """``FROM <table> WHERE thread_key=? AND <state> IN (?, ...)`` for ``values``, through the
    state index when every value is a rare one."""
    column, index, rare = _STATE_INDEX[table]
    hint = f" INDEXED BY {index}" if set(values) <= rare else ""
    return (f"FROM {table}{hint} WHERE thread_key=? AND {column} IN"
            f" ({','.join('?' * len(values))})")


class SqlStateView:
    def __init__(self, conn: sqlite3.Connection, thread_key: str):
        self.conn = conn
        self.key = thread_key

    # inputs
    def get_input(self, input_id):
        row = self.conn.execute(
            "SELECT data FROM inputs WHERE thread_key=? AND input_id=?", (self.key, input_id)
        ).fetchone()
        return InputRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_input(self, rec):
        data = row_json(rec.to_row())
        self.conn.execute(
            "INSERT OR REPLACE INTO inputs (thread_key, input_id, state, turn_id, admitted_seq,"
            " data, data_bytes) VALUES (?,?,?,?,?,?,?)",
            (self.key, rec.input_id, rec.state, rec.turn_id, rec.admitted_seq, data, len(data)),
        )

    def all_inputs(self):
        rows = self.conn.execute(
            "SELECT data FROM inputs WHERE thread_key=? ORDER BY admitted_seq", (self.key,)
        ).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def newest_inputs(self, limit: int):
        """The ``limit`` most recently admitted inputs, oldest first (decodes only those)."""
        rows = self.conn.execute(
            "SELECT data FROM inputs WHERE thread_key=? ORDER BY admitted_seq DESC LIMIT ?",
            (self.key, limit)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in reversed(rows)]

    def inputs_after(self, seq: int):
        """Inputs admitted after ``seq``, in admission order."""
        rows = self.conn.execute(
            "SELECT data FROM inputs WHERE thread_key=? AND admitted_seq>? ORDER BY admitted_seq",
            (self.key, seq)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def calls_after(self, seq: int):
        """Tool calls started after ``seq``, in start order."""
        rows = self.conn.execute(
            "SELECT data FROM tool_calls WHERE thread_key=? AND started_seq>? ORDER BY started_seq",
            (self.key, seq)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def input_counts(self) -> dict:
        """How many inputs are in each state (from the state index, nothing decoded)."""
        return dict(self.conn.execute(
            "SELECT state, count(*) FROM inputs WHERE thread_key=? GROUP BY state ORDER BY state",
            (self.key,)).fetchall())

    def input_totals(self) -> dict[str, tuple[int, int]]:
        """State -> (inputs, their rows' bytes), in state order: :meth:`input_counts` and the
        sizes in one pass over the state index (it covers ``data_bytes``)."""
        return {state: (int(n), int(size or 0)) for state, n, size in self.conn.execute(
            "SELECT state, count(*), sum(data_bytes) FROM inputs WHERE thread_key=?"
            " GROUP BY state ORDER BY state", (self.key,)).fetchall()}

    def inputs_in_states(self, states):
        """Inputs in the given states (indexed by state: no scan of a long history)."""
        states = list(states)
        rows = self.conn.execute(
            f"SELECT data {rows_in_states('inputs', states)} ORDER BY admitted_seq",
            (self.key, *states)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    # turns
    def get_turn(self, turn_id):
        row = self.conn.execute(
            "SELECT data FROM turns WHERE thread_key=? AND turn_id=?", (self.key, turn_id)
        ).fetchone()
        return TurnRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_turn(self, rec):
        self.conn.execute(
            "INSERT OR REPLACE INTO turns (thread_key, turn_id, status, data) VALUES (?,?,?,?)",
            (self.key, rec.turn_id, rec.status, row_json(rec.to_row())),
        )

    def running_turns(self):
        rows = self.conn.execute(
            "SELECT data FROM turns WHERE thread_key=? AND status='running'", (self.key,)
        ).fetchall()
        return [TurnRecord.from_row(jsontext.loads(r[0])) for r in rows]

    # tool calls
    def get_call(self, call_id):
        row = self.conn.execute(
            "SELECT data FROM tool_calls WHERE thread_key=? AND call_id=?", (self.key, call_id)
        ).fetchone()
        return ToolCallRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_call(self, rec):
        data = row_json(rec.to_row())
        self.conn.execute(
            "INSERT OR REPLACE INTO tool_calls (thread_key, call_id, status, started_seq, data,"
            " data_bytes) VALUES (?,?,?,?,?,?)",
            (self.key, rec.call_id, rec.status, rec.started_seq, data, len(data)),
        )

    def all_calls(self):
        rows = self.conn.execute(
            "SELECT data FROM tool_calls WHERE thread_key=? ORDER BY started_seq", (self.key,)
        ).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def newest_calls(self, limit: int, statuses):
        """The ``limit`` most recently started calls in ``statuses``, oldest first.

        The newest ``limit`` of each status through the status index, then the newest of
        those: walking the start index back read every newer call in another status first,
        and a rewind far back leaves its whole branch's calls ``rolled_back`` at the newest
        end (10,000 of them: ~5 ms at every boundary after it)."""
        statuses = list(statuses)
        if not statuses:
            return []
        each = ("SELECT data, started_seq FROM (SELECT data, started_seq FROM tool_calls"
                " WHERE thread_key=? AND status=? ORDER BY started_seq DESC LIMIT ?) AS s{}")
        rows = self.conn.execute(
            " UNION ALL ".join(each.format(n) for n in range(len(statuses)))
            + " ORDER BY started_seq DESC LIMIT ?",
            (*(arg for status in statuses for arg in (self.key, status, limit)), limit)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in reversed(rows)]

    def calls_in_statuses(self, statuses):
        statuses = list(statuses)
        rows = self.conn.execute(
            f"SELECT data {rows_in_states('tool_calls', statuses)} ORDER BY started_seq",
            (self.key, *statuses)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def calls_of_turns(self, turn_ids, statuses):
        """Calls of the given turns in ``statuses``, in start order (the turns of open inputs:
        few, but a turn may hold thousands of calls)."""
        turn_ids, statuses = [t for t in turn_ids if t is not None], list(statuses)
        if not turn_ids:
            return []
        # through the turn index (schema 5): the status index would read every finished call
        rows = self.conn.execute(
            f"SELECT data FROM tool_calls INDEXED BY tool_calls_by_turn WHERE thread_key=? AND"
            f" json_extract(data, '$.turn_id') IN ({','.join('?' * len(turn_ids))}) AND status IN"
            f" ({','.join('?' * len(statuses))}) ORDER BY started_seq",
            (self.key, *turn_ids, *statuses)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def reset(self):
        for table in ("inputs", "turns", "tool_calls"):
            self.conn.execute(f"DELETE FROM {table} WHERE thread_key=?", (self.key,))
