"""The reducer's view of one thread, backed by the store's derived tables.

Every get/put is one indexed statement inside the caller's transaction, so folding one new
event touches only the rows that event names. ``sql`` is the backend's statements module.
"""
from __future__ import annotations

from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

from continuation.host import jsontext


def row_json(row: dict) -> str:
    """A row's ``data``: ASCII (lone surrogates survive escaped), so ``len`` is its bytes
    (the ``data_bytes`` column)."""
    return jsontext.dumps(row, ensure_ascii=True, separators=(",", ":"))


class SqlStateView:
    __slots__ = ("conn", "sql", "key")

    def __init__(self, conn, sql, thread_key: str):
        self.conn, self.sql, self.key = conn, sql, thread_key

    # inputs
    def get_input(self, input_id):
        row = self.conn.execute(self.sql.input_data, (self.key, input_id)).fetchone()
        return InputRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_input(self, rec):
        data = row_json(rec.to_row())
        self.conn.execute(self.sql.put_input, (self.key, rec.input_id, rec.state, rec.turn_id,
                                               rec.admitted_seq, data, len(data)))

    def all_inputs(self):
        rows = self.conn.execute(self.sql.all_inputs, (self.key,)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def newest_inputs(self, limit: int):
        """The ``limit`` most recently admitted inputs, oldest first (decodes only those)."""
        rows = self.conn.execute(self.sql.newest_inputs, (self.key, limit)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in reversed(rows)]

    def inputs_after(self, seq: int):
        """Inputs admitted after ``seq``, in admission order."""
        rows = self.conn.execute(self.sql.inputs_after, (self.key, seq)).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def calls_after(self, seq: int):
        """Tool calls started after ``seq``, in start order."""
        rows = self.conn.execute(self.sql.calls_after, (self.key, seq)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def input_counts(self) -> dict:
        """How many inputs are in each state (from the state index, nothing decoded)."""
        return dict(self.conn.execute(self.sql.input_counts, (self.key,)).fetchall())

    def input_totals(self) -> dict[str, tuple[int, int]]:
        """State -> (inputs, their rows' bytes), in state order: :meth:`input_counts` and the
        sizes in one pass over the state index (it covers ``data_bytes``)."""
        return {state: (int(n), int(size or 0)) for state, n, size in self.conn.execute(
            self.sql.input_totals, (self.key,)).fetchall()}

    def inputs_in_states(self, states):
        """Inputs in the given states (indexed by state: no scan of a long history)."""
        states = list(states)
        rows = self.conn.execute(self.sql.inputs_in_states(states),
                                 (self.key, *self.sql.many(states))).fetchall()
        return [InputRecord.from_row(jsontext.loads(r[0])) for r in rows]

    # turns
    def get_turn(self, turn_id):
        row = self.conn.execute(self.sql.turn_data, (self.key, turn_id)).fetchone()
        return TurnRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_turn(self, rec):
        self.conn.execute(self.sql.put_turn,
                          (self.key, rec.turn_id, rec.status, row_json(rec.to_row())))

    def running_turns(self):
        rows = self.conn.execute(self.sql.running_turns, (self.key,)).fetchall()
        return [TurnRecord.from_row(jsontext.loads(r[0])) for r in rows]

    # tool calls
    def get_call(self, call_id):
        row = self.conn.execute(self.sql.call_data, (self.key, call_id)).fetchone()
        return ToolCallRecord.from_row(jsontext.loads(row[0])) if row else None

    def put_call(self, rec):
        data = row_json(rec.to_row())
        self.conn.execute(self.sql.put_call, (self.key, rec.call_id, rec.status, rec.started_seq,
                                              data, len(data)))

    def all_calls(self):
        rows = self.conn.execute(self.sql.all_calls, (self.key,)).fetchall()
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
        rows = self.conn.execute(
            self.sql.newest_calls(len(statuses)),
            (*(arg for status in statuses for arg in (self.key, status, limit)), limit)).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in reversed(rows)]

    def calls_in_statuses(self, statuses):
        statuses = list(statuses)
        rows = self.conn.execute(self.sql.calls_in_statuses(statuses),
                                 (self.key, *self.sql.many(statuses))).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def calls_of_turns(self, turn_ids, statuses):
        """Calls of the given turns in ``statuses``, in start order (the turns of open inputs:
        few, but a turn may hold thousands of calls)."""
        turn_ids, statuses = [t for t in turn_ids if t is not None], list(statuses)
        if not turn_ids:
            return []
        many = self.sql.many
        rows = self.conn.execute(self.sql.calls_of_turns(len(turn_ids), len(statuses)),
                                 (self.key, *many(turn_ids), *many(statuses))).fetchall()
        return [ToolCallRecord.from_row(jsontext.loads(r[0])) for r in rows]

    def reset(self):
        for statement in self.sql.reset_lifecycle:
            self.conn.execute(statement, (self.key,))
