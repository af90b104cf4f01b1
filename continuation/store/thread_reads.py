"""The questions the recording rules ask of a thread's derived tables, as store operations.

Each is named after what the caller asks, so callers never hold SQL or a connection. The SQL is
SQLite's (the PostgreSQL store translates it on its connection); planner hints keep the reads
on the indexes the schema defines for them.
"""
from __future__ import annotations

from continuation.host import jsontext


class ThreadReads:
    """Mixed into the store classes: every method reads through ``self.conn``."""

    def running_turn_ids(self, thread_key: str) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT turn_id FROM turns WHERE thread_key=? AND status='running'",
            (thread_key,)).fetchall()]

    def newest_running_turn(self, thread_key: str) -> str | None:
        """The most recently started turn still running: the turn a payload without a turn id
        (Claude Code without ``prompt_id``, Gemini CLI, an API steer) belongs to."""
        row = self.conn.execute(
            "SELECT turn_id FROM turns WHERE thread_key=? AND status='running'"
            " ORDER BY json_extract(data, '$.started_seq') DESC LIMIT 1", (thread_key,)).fetchone()
        return row[0] if row else None

    def turn_count(self, thread_key: str) -> int:
        return self.conn.execute("SELECT count(*) FROM turns WHERE thread_key=?",
                                 (thread_key,)).fetchone()[0]

    def input_count(self, thread_key: str) -> int:
        return self.conn.execute("SELECT count(*) FROM inputs WHERE thread_key=?",
                                 (thread_key,)).fetchone()[0]

    def input_data(self, thread_key: str, input_id: str) -> dict | None:
        row = self.conn.execute("SELECT data FROM inputs WHERE thread_key=? AND input_id=?",
                                (thread_key, input_id)).fetchone()
        return None if row is None else jsontext.loads(row[0])

    def inputs_data_of_turn(self, thread_key: str, turn_id: str) -> list[dict]:
        rows = self.conn.execute("SELECT data FROM inputs WHERE thread_key=? AND turn_id=?",
                                 (thread_key, turn_id)).fetchall()
        return [jsontext.loads(r[0]) for r in rows]

    def admitted_seqs(self, thread_key: str, input_ids: list[str]) -> list[int]:
        if not input_ids:
            return []
        rows = self.conn.execute(
            f"SELECT admitted_seq FROM inputs WHERE thread_key=? AND input_id IN"
            f" ({','.join('?' * len(input_ids))})", (thread_key, *input_ids)).fetchall()
        return [r[0] for r in rows]

    def turn_data(self, thread_key: str, turn_id: str) -> dict | None:
        row = self.conn.execute("SELECT data FROM turns WHERE thread_key=? AND turn_id=?",
                                (thread_key, turn_id)).fetchone()
        return None if row is None else jsontext.loads(row[0])

    def calls_of_turn(self, thread_key: str, turn_id: str) -> list[tuple[str, str, dict]]:
        """(call id, status, record) of each call of the turn, in start order; through the turn
        index (without it every call of the thread is read, on each tool call of a runtime that
        pairs calls itself)."""
        rows = self.conn.execute(
            "SELECT call_id, status, data FROM tool_calls INDEXED BY tool_calls_by_turn WHERE"
            " thread_key=? AND json_extract(data, '$.turn_id')=? ORDER BY started_seq",
            (thread_key, turn_id)).fetchall()
        return [(r[0], r[1], jsontext.loads(r[2])) for r in rows]

    def ok_calls_without_exit_code(self, thread_key: str, turn_id: str) -> list[str]:
        """Calls of the turn finished ok with no exit code (Codex's PostToolUse carries none)."""
        return [r[0] for r in self.conn.execute(
            "SELECT call_id FROM tool_calls INDEXED BY tool_calls_by_turn WHERE"
            " thread_key=? AND status='ok' AND json_extract(data, '$.turn_id')=?"
            " AND json_extract(data, '$.outcome.exit_code') IS NULL",
            (thread_key, turn_id)).fetchall()]

    def state_view(self, thread_key: str):
        """The thread's state as the reducer derives it, read from the derived tables."""
        from continuation.store.view import SqlStateView

        return SqlStateView(self.conn, thread_key)

    def newest_event_with_path(self, thread_key: str, etype: str, path: str) -> dict | None:
        """The data of the newest ``etype`` event whose ``path`` is ``path`` (an import's cursor)."""
        row = self.conn.execute(
            "SELECT data FROM events WHERE thread_key=? AND type=? AND json_extract(data, '$.path')=?"
            " ORDER BY seq DESC LIMIT 1", (thread_key, etype, path)).fetchone()
        return jsontext.loads(row[0]) if row else None

    def last_seq(self, thread_key: str) -> int:
        return int(self.conn.execute("SELECT last_seq FROM threads WHERE thread_key=?",
                                     (thread_key,)).fetchone()[0])

    def event_counts_by_kind(self, thread_key: str, etype: str) -> dict[str, int]:
        """How many ``etype`` events of each ``kind`` the thread has."""
        return dict(self.conn.execute(
            "SELECT json_extract(data, '$.kind'), COUNT(*) FROM events WHERE thread_key=?"
            " AND type=? GROUP BY 1", (thread_key, etype)).fetchall())

    def newest_event_of_turn(self, thread_key: str, etypes: tuple[str, ...],
                             turn_id: str) -> tuple[str, str, str] | None:
        """(type, data as JSON text, source) of the turn's newest event of one of ``etypes``."""
        row = self.conn.execute(
            f"SELECT type, data, source FROM events WHERE thread_key=? AND type IN"
            f" ({','.join('?' * len(etypes))}) AND json_extract(data, '$.turn_id')=?"
            f" ORDER BY seq DESC LIMIT 1", (thread_key, *etypes, turn_id)).fetchone()
        return tuple(row) if row else None

    def thread_row_by_key(self, thread_key: str) -> dict:
        """The thread's row by its exact key (``thread`` resolves selectors over every thread)."""
        cur = self.conn.execute("SELECT * FROM threads WHERE thread_key=?", (thread_key,))
        return dict(zip([d[0] for d in cur.description], cur.fetchone()))

    def newest_seq_of_type(self, thread_key: str, etype: str) -> int:
        row = self.conn.execute("SELECT MAX(seq) FROM events WHERE thread_key=? AND type=?",
                                (thread_key, etype)).fetchone()
        return int(row[0] or 0)

    def newest_event_seq_ts(self, thread_key: str) -> tuple[int, float | None]:
        row = self.conn.execute(
            "SELECT seq, ts FROM events WHERE thread_key=? ORDER BY seq DESC LIMIT 1",
            (thread_key,)).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, None)

    def has_open_work(self, thread_key: str, pending_state: str = "pending") -> bool:
        """A turn still running, an input pending or a call in flight."""
        c = self.conn
        if c.execute("SELECT 1 FROM turns WHERE thread_key=? AND status='running' LIMIT 1",
                     (thread_key,)).fetchone():
            return True
        if c.execute("SELECT 1 FROM inputs WHERE thread_key=? AND state=? LIMIT 1",
                     (thread_key, pending_state)).fetchone():
            return True
        return bool(c.execute(
            "SELECT 1 FROM tool_calls WHERE thread_key=? AND status='in_flight' LIMIT 1",
            (thread_key,)).fetchone())

    def newest_checkpoint_summary(self, thread_key: str) -> tuple | None:
        """(checkpoint id, generation, created at, seq, workspace JSON text) of the newest."""
        row = self.conn.execute(
            "SELECT checkpoint_id, generation, created_at, seq, workspace FROM checkpoints"
            " WHERE thread_key=? ORDER BY generation DESC LIMIT 1", (thread_key,)).fetchone()
        return tuple(row) if row else None

    def thread_keys(self, workspace_root: str | None = None) -> list[str]:
        """Every thread's key, oldest first (of one workspace root when given: indexed)."""
        if workspace_root is None:
            rows = self.conn.execute("SELECT thread_key FROM threads ORDER BY created_at")
        else:
            rows = self.conn.execute(
                "SELECT thread_key FROM threads WHERE workspace_root=? ORDER BY created_at",
                (workspace_root,))
        return [r[0] for r in rows.fetchall()]

    def end_sessions_of(self, thread_key: str, owners: list[dict], now: float) -> None:
        """Close the live-session markers of these (pid, host) owners only."""
        with self.transaction() as c:
            for m in owners:
                c.execute("UPDATE sessions SET ended_at=? WHERE thread_key=? AND pid=? AND host=?"
                          " AND ended_at IS NULL", (now, thread_key, m["pid"], m["host"]))

    def newest_snapshot_before(self, thread_key: str, seq: int) -> tuple[str, str] | None:
        """(checkpoint id, workspace JSON text) of the newest checkpoint with a workspace
        snapshot committed before event ``seq``."""
        row = self.conn.execute(
            "SELECT checkpoint_id, workspace FROM checkpoints WHERE thread_key=? AND seq<? AND"
            " workspace IS NOT NULL ORDER BY generation DESC LIMIT 1", (thread_key, seq)).fetchone()
        return tuple(row) if row else None

    def workspace_references(self, thread_key: str | None = None) -> tuple[list[str], list[str]]:
        """(workspace roots the threads name, workspace JSON texts the checkpoints hold), of one
        thread or of all."""
        sql = "SELECT workspace_root FROM threads WHERE workspace_root IS NOT NULL"
        sql2 = "SELECT workspace FROM checkpoints WHERE workspace IS NOT NULL"
        args: tuple = ()
        if thread_key:
            sql, sql2, args = sql + " AND thread_key=?", sql2 + " AND thread_key=?", (thread_key,)
        return ([r[0] for r in self.conn.execute(sql, args)],
                [r[0] for r in self.conn.execute(sql2, args)])

    def forks_of(self, thread_key: str) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT thread_key FROM threads WHERE forked_from=?", (thread_key,))]

    def delete_thread_rows(self, thread_key: str) -> dict[str, int]:
        """Delete every row of the thread, in one transaction: rows deleted per table."""
        deleted = {}
        with self.transaction() as c:
            for table in self.thread_tables():
                deleted[table] = c.execute(f'DELETE FROM "{table}" WHERE thread_key=?',
                                           (thread_key,)).rowcount
        return deleted

    def checkpoint_sizes(self) -> list[tuple[str, int, float | None, int, int]]:
        """(thread, generation, created at, capsule bytes, rendering bytes) of every checkpoint,
        sizes counted by the database (no blob is loaded)."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT thread_key, generation, created_at, length(CAST(capsule AS BLOB)),"
            " length(CAST(rendered AS BLOB)) FROM checkpoints").fetchall()]

    def totals_of(self, rows_sql: str, args) -> tuple[int, int, int | None, int | None]:
        """(count, bytes, first seq, last seq) of the rows ``rows_sql`` selects (columns ``seq``
        and ``size``), counted by the database: no row is brought into Python."""
        n, size, first, last = self.conn.execute(
            f"SELECT count(*), sum(size), min(seq), max(seq) FROM ({rows_sql}) AS unread",
            tuple(args)).fetchone()
        return int(n or 0), int(size or 0), first, last

    def snapshot_workspaces(self) -> list[tuple[str, int, str]]:
        """(checkpoint id, generation, workspace JSON text) of every checkpoint with a snapshot,
        by thread and generation."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT checkpoint_id, generation, workspace FROM checkpoints"
            " WHERE workspace IS NOT NULL ORDER BY thread_key, generation")]

    def prune_checkpoint_data(self, *, forget_copy=(), drop_rendering=(), drop_capsule=()) -> None:
        """In one transaction, for (thread, generation) pairs: forget the on-disk copy's path,
        drop the rendering, drop the capsule's bytes (the row, its hash and its id stay)."""
        with self.transaction() as c:
            if forget_copy:
                c.executemany("UPDATE checkpoints SET file_path=NULL WHERE thread_key=?"
                              " AND generation=?", list(forget_copy))
            if drop_rendering:
                c.executemany("UPDATE checkpoints SET rendered='' WHERE thread_key=?"
                              " AND generation=?", list(drop_rendering))
            if drop_capsule:
                c.executemany("UPDATE checkpoints SET capsule=? WHERE thread_key=? AND generation=?",
                              [(b"", k, g) for k, g in drop_capsule])

    def append_at_same_seqs(self, thread_key: str, events: list[dict]) -> None:
        """Append copies of ``events`` (keeping type, data, source and time) to the thread, all
        or nothing: each must land at its own seq, else nothing is appended and
        :class:`ValueError` names the first that did not."""
        with self.transaction() as c:
            for e in events:
                done = self._append_in(c, thread_key, e["type"], e["data"], e["source"], e["ts"])
                if done.seq != e["seq"]:
                    raise ValueError(f"copying event {e['seq']} gave {done.outcome} at {done.seq}")

    def store_checkpoint_row_as_is(self, row: dict) -> None:
        """Insert a checkpoint row exactly as given, with no boundary fact: how rows written by
        an older version look (the proof reads such a capsule back)."""
        columns = ("checkpoint_id", "thread_key", "generation", "seq", "reason", "created_at",
                   "capsule", "sha256", "capsule_version", "rendered", "workspace", "file_path")
        with self.transaction() as c:
            c.execute(f"INSERT INTO checkpoints ({', '.join(columns)}) VALUES"
                      f" ({','.join('?' * len(columns))})", tuple(row.get(k) for k in columns))
