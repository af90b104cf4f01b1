"""The reducer's view of one thread, backed by the store's derived tables.

Every get/put is one indexed statement inside the caller's transaction, so folding one new
event touches only the rows that event names. ``sql`` is the backend's statements module.
"""
from __future__ import annotations

from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

from continuation.store.sealed import PLAIN, row_json  # noqa: F401 - row_json re-exported


def valid_text(value):
    """``value`` with each NUL and lone surrogate in its texts (keys included) made U+FFFD:
    for a backend that reads a row as JSON itself (``JSON_STRICT`` of its statements), whose
    JSON holds neither; as in the derived text columns (the event row keeps the exact text)."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\ufffd")
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {valid_text(k): valid_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_text(v) for v in value]
    return value


_RECORDS = {"input": InputRecord, "turn": TurnRecord, "call": ToolCallRecord}


class SqlStateView:
    """A view folding event ``seq`` (``at``) keeps each row as it was before the event changed
    it (``row_versions``), once per row and event: a rewind to an earlier seq then restores
    the rows changed since (:meth:`rewind_to`), bounded by what it rolls back. A view for
    reading only (``seq`` None) keeps nothing."""

    __slots__ = ("conn", "sql", "key", "seq", "_n", "_known", "_kept", "codec")

    def __init__(self, conn, sql, thread_key: str, seq: int | None = None, codec=PLAIN):
        self.conn, self.sql, self.key, self.codec = conn, sql, thread_key, codec
        self._known: dict = {}
        self.at(seq)

    def at(self, seq: int | None) -> None:
        """The event being folded from now on."""
        self.seq, self._n, self._kept = seq, 0, set()

    def _keep_version(self, kind: str, row_key: str) -> None:
        if self.seq is None or (kind, row_key) in self._kept:
            return
        if (kind, row_key) in self._known:
            before = self._known[(kind, row_key)]
        else:
            select = {"input": self.sql.input_data, "turn": self.sql.turn_data,
                      "call": self.sql.call_data}[kind]
            row = self.conn.execute(select, (self.key, row_key)).fetchone()
            before = row[0] if row else None
        self._n += 1
        self.conn.execute(self.sql.put_row_version,
                          (self.key, self.seq, self._n, kind, row_key, before))
        self._kept.add((kind, row_key))

    def rewind_to(self, to_seq: int) -> bool:
        """Put every row changed after ``to_seq`` back as it was then (a row made after it
        goes); False when the versions do not reach back that far (the caller replays)."""
        row = self.conn.execute(self.sql.undo_from, (self.key,)).fetchone()
        if row is not None and to_seq + 1 < int(row[0]):
            return False
        then: dict = {}
        for kind, row_key, data in self.conn.execute(self.sql.row_versions_after,
                                                     (self.key, to_seq)).fetchall():
            then.setdefault((kind, row_key), data)
        delete = {"input": self.sql.delete_input, "turn": self.sql.delete_turn,
                  "call": self.sql.delete_call}
        for (kind, row_key), data in then.items():
            self._keep_version(kind, row_key)
            if data is None:
                self.conn.execute(delete[kind], (self.key, row_key))
                self._known[(kind, row_key)] = None
            else:
                getattr(self, f"_write_{kind}")(_RECORDS[kind].from_row(self.codec.load(data)))
        return True

    # inputs
    def get_input(self, input_id):
        row = self.conn.execute(self.sql.input_data, (self.key, input_id)).fetchone()
        self._known[("input", input_id)] = row[0] if row else None
        return InputRecord.from_row(self.codec.load(row[0])) if row else None

    def put_input(self, rec):
        self._keep_version("input", rec.input_id)
        self._write_input(rec)

    def _write_input(self, rec) -> None:
        data, size = self.codec.dump_sized(rec.to_row())
        self.conn.execute(self.sql.put_input, (self.key, rec.input_id, rec.state, rec.turn_id,
                                               rec.admitted_seq, data, size))
        self._known[("input", rec.input_id)] = data

    def all_inputs(self):
        rows = self.conn.execute(self.sql.all_inputs, (self.key,)).fetchall()
        return [InputRecord.from_row(self.codec.load(r[0])) for r in rows]

    def newest_inputs(self, limit: int):
        """The ``limit`` most recently admitted inputs, oldest first (decodes only those)."""
        rows = self.conn.execute(self.sql.newest_inputs, (self.key, limit)).fetchall()
        return [InputRecord.from_row(self.codec.load(r[0])) for r in reversed(rows)]

    def inputs_after(self, seq: int):
        """Inputs admitted after ``seq``, in admission order."""
        rows = self.conn.execute(self.sql.inputs_after, (self.key, seq)).fetchall()
        return [InputRecord.from_row(self.codec.load(r[0])) for r in rows]

    def calls_after(self, seq: int):
        """Tool calls started after ``seq``, in start order."""
        rows = self.conn.execute(self.sql.calls_after, (self.key, seq)).fetchall()
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in rows]

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
        return [InputRecord.from_row(self.codec.load(r[0])) for r in rows]

    # turns
    def get_turn(self, turn_id):
        row = self.conn.execute(self.sql.turn_data, (self.key, turn_id)).fetchone()
        self._known[("turn", turn_id)] = row[0] if row else None
        return TurnRecord.from_row(self.codec.load(row[0])) if row else None

    def put_turn(self, rec):
        self._keep_version("turn", rec.turn_id)
        self._write_turn(rec)

    def _write_turn(self, rec) -> None:
        row = rec.to_row()
        data = self.codec.dump(valid_text(row) if self.sql.JSON_STRICT else row)
        self.conn.execute(self.sql.put_turn, (self.key, rec.turn_id, rec.status, data))
        self._known[("turn", rec.turn_id)] = data

    def running_turns(self):
        rows = self.conn.execute(self.sql.running_turns, (self.key,)).fetchall()
        return [TurnRecord.from_row(self.codec.load(r[0])) for r in rows]

    # tool calls
    def get_call(self, call_id):
        row = self.conn.execute(self.sql.call_data, (self.key, call_id)).fetchone()
        self._known[("call", call_id)] = row[0] if row else None
        return ToolCallRecord.from_row(self.codec.load(row[0])) if row else None

    def put_call(self, rec):
        self._keep_version("call", rec.call_id)
        self._write_call(rec)

    def _write_call(self, rec) -> None:
        row = rec.to_row()
        data, size = self.codec.dump_sized(valid_text(row) if self.sql.JSON_STRICT else row)
        self.conn.execute(self.sql.put_call, (self.key, rec.call_id, rec.status, rec.started_seq,
                                              data, size))
        self._known[("call", rec.call_id)] = data

    def all_calls(self):
        rows = self.conn.execute(self.sql.all_calls, (self.key,)).fetchall()
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in rows]

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
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in reversed(rows)]

    def calls_in_statuses(self, statuses):
        statuses = list(statuses)
        rows = self.conn.execute(self.sql.calls_in_statuses(statuses),
                                 (self.key, *self.sql.many(statuses))).fetchall()
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in rows]

    def calls_of_turns(self, turn_ids, statuses):
        """Calls of the given turns in ``statuses``, in start order (the turns of open inputs:
        few, but a turn may hold thousands of calls)."""
        turn_ids, statuses = [t for t in turn_ids if t is not None], list(statuses)
        if not turn_ids:
            return []
        many = self.sql.many
        rows = self.conn.execute(self.sql.calls_of_turns(len(turn_ids), len(statuses)),
                                 (self.key, *many(turn_ids), *many(statuses))).fetchall()
        return [ToolCallRecord.from_row(self.codec.load(r[0])) for r in rows]

    def reset(self):
        """Every row goes (a rollback replaying the log): each kept as it was first."""
        if self.seq is not None:
            for kind, select in (("input", self.sql.all_input_rows),
                                 ("turn", self.sql.all_turn_rows),
                                 ("call", self.sql.all_call_rows)):
                for row_key, data in self.conn.execute(select, (self.key,)).fetchall():
                    self._known[(kind, row_key)] = data
                    self._keep_version(kind, row_key)
        self._clear_rows()
        self._known = {k: None for k in self._known}

    def _clear_rows(self) -> None:
        for statement in self.sql.reset_lifecycle:
            self.conn.execute(statement, (self.key,))

    def clear(self) -> None:
        """Every row and every kept version goes (a rebuild from the log makes them again)."""
        self._clear_rows()
        self.conn.execute(self.sql.delete_row_versions, (self.key,))
        self._known = {}
