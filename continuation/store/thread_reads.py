"""The questions the recording rules ask of a thread's derived tables, as store operations.

Each is named after what the caller asks, so callers never hold SQL or a connection; the
statements are the backend's own (``self.sql``: ``sqlite_sql`` or ``postgres_sql``).
"""
from __future__ import annotations



class ThreadReads:
    """Mixed into the store: every method runs ``self.sql``'s statements on ``self.conn``."""

    def running_turn_ids(self, thread_key: str) -> list[str]:
        return [r[0] for r in self.conn.execute(self.sql.running_turn_ids,
                                                (thread_key,)).fetchall()]

    def newest_running_turn(self, thread_key: str) -> str | None:
        """The most recently started turn still running: the turn a payload without a turn id
        (Claude Code without ``prompt_id``, Gemini CLI, an API steer) belongs to."""
        row = self.conn.execute(self.sql.newest_running_turn, (thread_key,)).fetchone()
        return row[0] if row else None

    def turn_count(self, thread_key: str) -> int:
        return self.conn.execute(self.sql.turn_count, (thread_key,)).fetchone()[0]

    def input_count(self, thread_key: str) -> int:
        return self.conn.execute(self.sql.input_count, (thread_key,)).fetchone()[0]

    def input_data(self, thread_key: str, input_id: str) -> dict | None:
        row = self.conn.execute(self.sql.input_data, (thread_key, input_id)).fetchone()
        return None if row is None else self.codec.load(row[0])

    def inputs_data_of_turn(self, thread_key: str, turn_id: str) -> list[dict]:
        rows = self.conn.execute(self.sql.inputs_data_of_turn, (thread_key, turn_id)).fetchall()
        return [self.codec.load(r[0]) for r in rows]

    def admitted_seqs(self, thread_key: str, input_ids: list[str]) -> list[int]:
        if not input_ids:
            return []
        rows = self.conn.execute(self.sql.admitted_seqs(len(input_ids)),
                                 (thread_key, *self.sql.many(input_ids))).fetchall()
        return [r[0] for r in rows]

    def turn_data(self, thread_key: str, turn_id: str) -> dict | None:
        row = self.conn.execute(self.sql.turn_data, (thread_key, turn_id)).fetchone()
        return None if row is None else self.codec.load(row[0])

    def calls_of_turn(self, thread_key: str, turn_id: str) -> list[tuple[str, str, dict]]:
        """(call id, status, record) of each call of the turn, in start order; through the turn
        index (without it every call of the thread is read, on each tool call of a runtime that
        pairs calls itself)."""
        rows = self.conn.execute(self.sql.calls_of_turn, (thread_key, turn_id)).fetchall()
        return [(r[0], r[1], self.codec.load(r[2])) for r in rows]

    def ok_calls_without_exit_code(self, thread_key: str, turn_id: str) -> list[str]:
        """Calls of the turn finished ok with no exit code (Codex's PostToolUse carries none)."""
        return [r[0] for r in self.conn.execute(self.sql.ok_calls_without_exit_code,
                                                (thread_key, turn_id)).fetchall()]

    def state_view(self, thread_key: str):
        """The thread's state as the reducer derives it, read from the derived tables."""
        from continuation.store.view import SqlStateView

        return SqlStateView(self.conn, self.sql, thread_key, codec=self.codec)

    def newest_event_with_path(self, thread_key: str, etype: str, path: str) -> dict | None:
        """The data of the newest ``etype`` event whose ``path`` is ``path`` (an import's cursor)."""
        row = self.conn.execute(self.sql.newest_event_with_path,
                                (thread_key, etype, path)).fetchone()
        return self.codec.load(row[0]) if row else None

    def last_seq(self, thread_key: str) -> int:
        return int(self.conn.execute(self.sql.last_seq, (thread_key,)).fetchone()[0])

    def event_counts_by_kind(self, thread_key: str, etype: str) -> dict[str, int]:
        """How many ``etype`` events of each ``kind`` the thread has."""
        return dict(self.conn.execute(self.sql.event_counts_by_kind,
                                      (thread_key, etype)).fetchall())

    def newest_event_of_turn(self, thread_key: str, etypes: tuple[str, ...],
                             turn_id: str) -> tuple[str, str, str] | None:
        """(type, data as JSON text, source) of the turn's newest event of one of ``etypes``."""
        row = self.conn.execute(self.sql.newest_event_of_turn(len(etypes)),
                                (thread_key, *self.sql.many(etypes), turn_id)).fetchone()
        if row is None:
            return None
        from continuation.store.sealed import row_json

        return row[0], row_json(self.codec.load(row[1])), row[2]  # opened when sealed

    def thread_row_by_key(self, thread_key: str) -> dict:
        """The thread's row by its exact key (``thread`` resolves selectors over every thread)."""
        return self._dict_rows(self.sql.thread_by_key, (thread_key,))[0]

    def newest_seq_of_type(self, thread_key: str, etype: str) -> int:
        row = self.conn.execute(self.sql.newest_seq_of_type, (thread_key, etype)).fetchone()
        return int(row[0] or 0)

    def newest_event_seq_ts(self, thread_key: str) -> tuple[int, float | None]:
        row = self.conn.execute(self.sql.newest_event_seq_ts, (thread_key,)).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, None)

    def has_open_work(self, thread_key: str, pending_state: str = "pending") -> bool:
        """A turn still running, an input pending or a call in flight."""
        c, sql = self.conn, self.sql
        if c.execute(sql.any_running_turn, (thread_key,)).fetchone():
            return True
        if c.execute(sql.any_input_in_state, (thread_key, pending_state)).fetchone():
            return True
        return bool(c.execute(sql.any_call_in_flight, (thread_key,)).fetchone())

    def newest_checkpoint_summary(self, thread_key: str) -> tuple | None:
        """(checkpoint id, generation, created at, seq, workspace JSON text) of the newest."""
        row = self.conn.execute(self.sql.newest_checkpoint_summary, (thread_key,)).fetchone()
        return tuple(row) if row else None

    def thread_keys(self, workspace_root: str | None = None) -> list[str]:
        """Every thread's key, oldest first (of one workspace root when given: indexed)."""
        if workspace_root is None:
            rows = self.conn.execute(self.sql.thread_keys, ())
        else:
            rows = self.conn.execute(self.sql.thread_keys_of_workspace, (workspace_root,))
        return [r[0] for r in rows.fetchall()]

    def end_sessions_of(self, thread_key: str, owners: list[dict], now: float) -> None:
        """Close the live-session markers of these (pid, host) owners only."""
        with self.transaction() as c:
            for m in owners:
                c.execute(self.sql.end_session_of, (now, thread_key, m["pid"], m["host"]))

    def newest_snapshot_before(self, thread_key: str, seq: int) -> tuple[str, str] | None:
        """(checkpoint id, workspace JSON text) of the newest checkpoint with a workspace
        snapshot committed before event ``seq``."""
        row = self.conn.execute(self.sql.newest_snapshot_before, (thread_key, seq)).fetchone()
        return tuple(row) if row else None

    def workspace_references(self, thread_key: str | None = None) -> tuple[list[str], list[str]]:
        """(workspace roots the threads name, workspace JSON texts the checkpoints hold), of one
        thread or of all."""
        if thread_key:
            roots, workspaces, args = (self.sql.thread_roots_of, self.sql.checkpoint_workspaces_of,
                                       (thread_key,))
        else:
            roots, workspaces, args = self.sql.thread_roots, self.sql.checkpoint_workspaces, ()
        return ([r[0] for r in self.conn.execute(roots, args).fetchall()],
                [r[0] for r in self.conn.execute(workspaces, args).fetchall()])

    def forks_of(self, thread_key: str) -> list[str]:
        return [r[0] for r in self.conn.execute(self.sql.forks_of, (thread_key,)).fetchall()]

    def delete_thread_rows(self, thread_key: str) -> dict[str, int]:
        """Delete every row of the thread, in one transaction: rows deleted per table."""
        deleted = {}
        with self.transaction() as c:
            for table in self.thread_tables():
                deleted[table] = c.execute(self.sql.delete_rows_of(table), (thread_key,)).rowcount
        return deleted

    def checkpoint_sizes(self) -> list[tuple[str, int, float | None, int, int]]:
        """(thread, generation, created at, capsule bytes, rendering bytes) of every checkpoint,
        sizes counted by the database (no blob is loaded)."""
        return [tuple(r) for r in self.conn.execute(self.sql.checkpoint_sizes, ()).fetchall()]

    def snapshot_workspaces(self) -> list[tuple[str, int, str]]:
        """(checkpoint id, generation, workspace JSON text) of every checkpoint with a snapshot,
        by thread and generation."""
        return [tuple(r) for r in self.conn.execute(self.sql.snapshot_workspaces, ()).fetchall()]

    def prune_checkpoint_data(self, *, forget_copy=(), drop_rendering=(), drop_capsule=()) -> None:
        """In one transaction, for (thread, generation) pairs: forget the on-disk copy's path,
        drop the rendering, drop the capsule's bytes (the row, its hash and its id stay)."""
        with self.transaction() as c:
            if forget_copy:
                c.executemany(self.sql.forget_checkpoint_copy, list(forget_copy))
            if drop_rendering:
                c.executemany(self.sql.drop_checkpoint_rendering, list(drop_rendering))
            if drop_capsule:
                c.executemany(self.sql.drop_checkpoint_capsule,
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
        with self.transaction() as c:
            c.execute(self.sql.insert_checkpoint,
                      tuple(row.get(k) for k in self.sql.CHECKPOINT_COLUMNS))
