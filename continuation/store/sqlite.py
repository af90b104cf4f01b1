"""The embedded SQLite store: an append-only event log per thread plus derived tables.

Durability contract (docs/design.md, "Store"): WAL with ``synchronous=FULL``; every append runs in
``BEGIN IMMEDIATE`` with a busy timeout, so concurrent hook processes serialise instead of
failing; the event row and every table derived from it are written in the same transaction;
the derived lifecycle tables are produced by the same reducer that a full replay uses.
"""
from __future__ import annotations

import os
import sqlite3
import time

from statemachine import events as ev

from continuation.host import faults, jsontext
from statemachine.lifecycle import IllegalTransition
from statemachine.reducer import ThreadState, apply, fold
from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

from continuation.store.schema import MIGRATIONS, SCHEMA_VERSION
from continuation.store.boundary_reads import BoundaryReads
from continuation.store.thread_reads import ThreadReads
from continuation.store.view import SqlStateView, row_json

BUSY_TIMEOUT_S = 60.0
#: how large the write-ahead log may grow in a store that processes leave open (a hook ends
#: with ``os._exit``) before the process leaving it folds it into the database: see
#: :meth:`SqliteStore.leave_open`
WAL_FOLD_BYTES = 1 << 20
CHECKPOINT_COLUMNS = ("checkpoint_id", "thread_key", "generation", "seq", "reason", "created_at",
                      "capsule", "sha256", "capsule_version", "rendered", "workspace",
                      "file_path")


class StoreError(Exception):
    """A store problem the user can act on; the CLI prints it as one line."""


class StoreVersionError(StoreError):
    pass


class UnknownThread(StoreError):
    pass


class IllegalFact(StoreError):
    """A fact the lifecycle forbids (e.g. reconciling a call that has an outcome)."""


class CheckpointError(StoreError):
    pass


class GenerationTaken(CheckpointError):
    """Another process committed this generation (or a later one) first."""


class Appended:
    """What an append did: ``seq`` is None when nothing was written (a duplicate)."""

    __slots__ = ("thread_key", "seq", "outcome", "input_id")

    def __init__(self, thread_key: str, seq: int | None, outcome: str,
                 input_id: str | None = None):
        self.thread_key, self.seq, self.outcome = thread_key, seq, outcome
        self.input_id = input_id

    def __repr__(self):
        return f"Appended({self.thread_key!r}, seq={self.seq}, outcome={self.outcome!r})"


# no dots: git refs refuse ".." and ".lock"; no `re` import on the hot path
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def thread_key_for(runtime: str, session_id: str) -> str:
    """A key safe in file names and git ref names, stable for (runtime, session id)."""
    raw = f"{runtime}-{session_id}"
    safe = "".join(ch if ch in _SAFE else "_" for ch in raw)
    while "__" in safe:
        safe = safe.replace("__", "_")
    safe = safe.strip("_-")[:80] or "thread"
    if safe != raw:
        import hashlib

        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe}-{digest}"
    return safe


def _sql_text(text) -> str:
    """SQLite text must be valid UTF-8: lone surrogates become U+FFFD in derived columns (the
    event row keeps the exact text, JSON-escaped)."""
    text = text if isinstance(text, str) else str(text)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error). A class, not
    ``contextlib.contextmanager``: contextlib's import is a visible share of a hook run."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
        return False


def file_integrity(path, mode: str) -> tuple[int, list[str]]:
    """(schema version, ``integrity_check`` lines) of the SQLite file at ``path``, opened with
    the URI ``mode`` (``mode=ro``, ``immutable=1``) by a connection of its own: doctor reads a
    store file it may not be able to open as a store."""
    conn = sqlite3.connect(f"file:{path}?{mode}", uri=True, timeout=10)
    try:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()])
    finally:
        conn.close()


class SqliteStore(ThreadReads, BoundaryReads):
    #: appended to the statement that reads a thread's last seq before a write: SQLite's
    #: ``BEGIN IMMEDIATE`` already serialises writers; a server backend locks the thread row
    _LOCK_THREAD = ""

    def __init__(self, path, *, create: bool = True):
        self._path = os.fspath(path)
        try:
            size = os.stat(self._path).st_size
        except FileNotFoundError:
            if not create:
                raise StoreError(f"no store at {self._path}") from None
            self._create()
            size = None
        if size == 0 and create:
            # A store is born whole (see _create), so an empty one was truncated: its events
            # are gone. SQLite would silently start afresh; say so, and remember it.
            from continuation.host import lost_writes

            lost_writes.note_store_reset(os.path.dirname(self._path) or ".", self._path,
                                         "found truncated to 0 bytes")
        home = os.path.dirname(self._path) or "."
        if not os.path.exists(os.path.join(home, "lost-writes.json")):
            from continuation.host import lost_writes  # allocated while there is room: see lost_writes

            lost_writes.ensure(home)
        try:
            self.conn = sqlite3.connect(
                self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            self.conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot read the store {self.path}: {exc} (run `continuation doctor`)"
            ) from None
        if version > SCHEMA_VERSION:
            self.conn.close()
            raise StoreVersionError(
                f"the store {self.path} has schema version {version}, newer than this "
                f"continuation understands ({SCHEMA_VERSION}); upgrade continuation"
            )
        self.conn.execute("PRAGMA synchronous=FULL")
        if version < SCHEMA_VERSION:
            self._migrate()

    # -- setup -------------------------------------------------------------------------------
    def _create(self) -> None:
        """Build the empty store beside its place, then link it in: a store file is never seen
        half-made (0 bytes), so an empty one later means it was truncated. Two processes
        creating it at once: the first link wins, the other's copy is dropped."""
        from continuation.host.paths import ensure_private_dir

        folder = os.path.dirname(self._path) or "."
        ensure_private_dir(folder)
        tmp = f"{self._path}.{os.getpid()}.{time.time_ns()}.new"
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                for statement in ";".join(MIGRATIONS[:SCHEMA_VERSION]).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            finally:
                conn.close()  # checkpoints the WAL into the file and removes it
            try:
                os.link(tmp, self._path)
            except FileExistsError:
                pass  # another process made it first
            except OSError:  # no hard links here: rename (which refuses to replace on Windows)
                if not os.path.exists(self._path):
                    os.rename(tmp, self._path)
        finally:
            for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
                try:
                    os.unlink(leftover)
                except OSError:
                    pass

    def _migrate(self) -> None:
        if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self.conn.execute("PRAGMA journal_mode=WAL")
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
            self.conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def leave_open(self) -> None:
        """This process ends now without closing the store (``hooks.end_process``): every
        commit is durable already, and a close (the last connection checkpoints the WAL into
        the database and deletes it: 5 fdatasync calls) is skipped. But the WAL must stay
        bounded: a process opening the store alone rebuilds the WAL's index by reading every
        frame, and the index it rebuilds has lost what was already checkpointed, so SQLite's
        own auto-checkpoint can never restart the log: left alone it grows by every commit
        (~16 pages per tool call), each hook reading more of it and, past 1,000 pages,
        copying all of it back into the database at each commit. So once the WAL passes
        ``WAL_FOLD_BYTES`` it is checkpointed and truncated here; without waiting: when
        another connection is busy this is only a partial checkpoint, and a later process
        folds it."""
        try:
            size = os.stat(self._path + "-wal").st_size
        except OSError:
            return
        if size < WAL_FOLD_BYTES:
            return
        try:
            self.conn.execute("PRAGMA busy_timeout=0")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass  # committed facts are safe in the WAL: the next process can fold it

    @property
    def path(self):
        from pathlib import Path

        return Path(self._path)

    @property
    def location(self) -> str:
        return self._path

    def transaction(self) -> _Transaction:
        """``BEGIN IMMEDIATE``: take the write lock up front, so two writers never deadlock
        on a read-to-write upgrade; the busy timeout makes the second one wait."""
        return _Transaction(self.conn)

    # -- threads -----------------------------------------------------------------------------
    def ensure_thread(
        self,
        runtime: str,
        session_id: str,
        *,
        workspace_root: str | None = None,
        forked_from: str | None = None,
        forked_at_seq: int | None = None,
        name: str | None = None,
    ) -> str:
        key = thread_key_for(runtime, session_id)
        row = self.conn.execute("SELECT workspace_root FROM threads WHERE thread_key=?",
                                (key,)).fetchone()
        if row is not None and (row[0] or not workspace_root):
            return key  # known thread: no write transaction (one fsync less per hook)
        now = time.time()
        with self.transaction() as c:
            self._ensure_thread_in(c, key, runtime, session_id, workspace_root, now,
                                   forked_from, forked_at_seq, name)
        return key

    @staticmethod
    def _ensure_thread_in(c, key, runtime, session_id, workspace_root, now,
                          forked_from=None, forked_at_seq=None, name=None) -> None:
        c.execute(
            "INSERT OR IGNORE INTO threads (thread_key, runtime, session_id, workspace_root,"
            " forked_from, forked_at_seq, name, created_at, updated_at)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (key, runtime, session_id, workspace_root, forked_from, forked_at_seq, name, now, now),
        )
        if workspace_root:
            c.execute(
                "UPDATE threads SET workspace_root=? WHERE thread_key=? AND workspace_root IS NULL",
                (workspace_root, key),
            )

    def threads(self) -> list[dict]:
        cur = self.conn.execute("SELECT * FROM threads ORDER BY created_at, thread_key")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def thread(self, selector: str) -> dict:
        """A thread by key, by session id, or by a unique prefix of either."""
        for column in ("thread_key", "session_id"):  # indexed exact matches first: no scan
            cur = self.conn.execute(f"SELECT * FROM threads WHERE {column}=?", (selector,))
            found = cur.fetchall()
            if len(found) == 1:
                return dict(zip([d[0] for d in cur.description], found[0]))
        rows = self.threads()
        for field in ("thread_key", "session_id"):
            exact = [r for r in rows if r[field] == selector]
            if len(exact) == 1:
                return exact[0]
        matches = [r for r in rows if r["thread_key"].startswith(selector)
                   or r["session_id"].startswith(selector)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UnknownThread(f"no thread matches {selector!r} (see `continuation status`)")
        raise UnknownThread(
            f"{selector!r} matches {len(matches)} threads: "
            + ", ".join(r["thread_key"] for r in matches[:5])
        )

    def thread_by_session(self, runtime: str, session_id: str) -> dict | None:
        cur = self.conn.execute(
            "SELECT * FROM threads WHERE runtime=? AND session_id=?", (runtime, session_id)
        )
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else None

    # -- the log -----------------------------------------------------------------------------
    def append(self, thread_key: str, etype: str, data: dict, *, source: str,
               ts: float | None = None, session: dict | None = None) -> Appended:
        """Append one event and fold it into the derived tables, atomically.

        A duplicate (an input id or tool call already known) is not written: admission is
        exactly-once. A fact the lifecycle forbids raises :class:`IllegalFact` and nothing is
        written. ``session`` (pid, proc_start, host) refreshes the live-session heartbeat in
        the same transaction.
        """
        with self.transaction() as c:
            result = self._append_in(c, thread_key, etype, data, source, ts)
            if session is not None:
                self._heartbeat_in(c, thread_key, session, ts or time.time())
            faults.point("event.before_commit")
        faults.point("event.after_commit")
        return result

    def append_many(self, thread_key: str, items, *, source: str,
                    ts: float | None = None, session: dict | None = None) -> list[Appended]:
        """Append several events in one transaction (all or none). ``items`` may be a generator
        that reads the store: it runs after the transaction holds the thread's write lock, so
        what it reads cannot change before its events are written (the importers rely on it).
        ``session``: as :meth:`append`'s, refreshed once."""
        with self.transaction() as c:
            if self._LOCK_THREAD:  # SQLite: BEGIN IMMEDIATE took the lock already
                c.execute("SELECT last_seq FROM threads WHERE thread_key=?" + self._LOCK_THREAD,
                          (thread_key,))
            appended = [self._append_in(c, thread_key, t, d, source, ts) for t, d in items]
            if session is not None:
                self._heartbeat_in(c, thread_key, session, ts or time.time())
            return appended

    def _append_in(self, c, thread_key, etype, data, source, ts) -> Appended:
        row = c.execute("SELECT last_seq FROM threads WHERE thread_key=?" + self._LOCK_THREAD,
                        (thread_key,)).fetchone()
        if row is None:
            raise UnknownThread(f"no thread {thread_key!r}")
        seq = row[0] + 1
        event = {"seq": seq, "type": etype, "data": data}
        # The reducer runs first: an illegal fact or a duplicate leaves no trace.
        c.execute("SAVEPOINT fold")
        try:
            outcome = apply(SqlStateView(c, thread_key), event, self._history_fn(c, thread_key))
        except IllegalTransition as exc:
            c.execute("ROLLBACK TO fold")
            c.execute("RELEASE fold")
            raise IllegalFact(str(exc)) from None
        if outcome == "duplicate":
            c.execute("ROLLBACK TO fold")
            c.execute("RELEASE fold")
            return Appended(thread_key, None, outcome)
        c.execute("RELEASE fold")
        now = ts if ts is not None else time.time()
        c.execute(
            "INSERT INTO events (thread_key, seq, type, kind, data, ts, source) VALUES (?,?,?,?,?,?,?)",
            (thread_key, seq, etype, ev.kind_of(etype), row_json(data), now, source),
        )
        self._project_in(c, thread_key, seq, etype, data)
        c.execute("UPDATE threads SET last_seq=?, updated_at=? WHERE thread_key=?",
                  (seq, now, thread_key))
        return Appended(thread_key, seq, outcome)

    def _history_fn(self, c, thread_key):
        def history(upto: int):
            return self._event_rows(c, thread_key, upto=upto)
        return history

    @staticmethod
    def _project_in(c, key, seq, etype, data) -> None:
        """Derived tables outside the input lifecycle (claims, per-thread facts)."""
        if etype == ev.ASSISTANT_CLAIM:
            c.execute("INSERT INTO claims (thread_key, seq, turn_id, text) VALUES (?,?,?,?)",
                      (key, seq, data.get("turn_id"), _sql_text(data.get("text", ""))))
        elif etype in (ev.BOUNDARY, ev.RECONCILED, ev.INPUT_REOPENED):
            # a new context generation, or a state the model has not seen (a decision recorded
            # outside its conversation): the next SessionStart or UserPromptSubmit delivers it
            c.execute("UPDATE threads SET needs_context=1 WHERE thread_key=?", (key,))
        elif etype == ev.CONTEXT_DELIVERED:
            c.execute(
                "UPDATE threads SET needs_context=0, delivered_generation=MAX(delivered_generation, ?)"
                " WHERE thread_key=?", (int(data.get("generation") or 0), key))
        elif etype == ev.CHECKPOINT_COMMITTED:
            c.execute("UPDATE threads SET generation=MAX(generation, ?) WHERE thread_key=?",
                      (int(data["generation"]), key))
        elif etype in (ev.SETTINGS, ev.PLAN_UPDATED, ev.BACKGROUND_TASK, ev.SESSION_STARTED,
                       ev.SESSION_ENDED):
            c.execute(
                "INSERT OR REPLACE INTO thread_meta (thread_key, key, value, seq) VALUES (?,?,?,?)",
                (key, etype, row_json(data), seq))

    @staticmethod
    def _event_rows(c, thread_key, *, after: int = 0, upto: int | None = None,
                    limit: int | None = None) -> list[dict]:
        sql = "SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=? AND seq>?"
        args: list = [thread_key, after]
        if upto is not None:
            sql += " AND seq<=?"
            args.append(upto)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [
            {"seq": s, "type": t, "kind": k, "data": jsontext.loads(d), "ts": ts, "source": src}
            for s, t, k, d, ts, src in c.execute(sql, args).fetchall()
        ]

    def events(self, thread_key: str, *, after: int = 0, upto: int | None = None,
               limit: int | None = None) -> list[dict]:
        return self._event_rows(self.conn, thread_key, after=after, upto=upto, limit=limit)

    def events_of_types(self, thread_key: str, types, *, upto: int | None = None,
                        newest: int | None = None, after: int | None = None) -> list[dict]:
        """Events of the given types in seq order (``after`` < seq <= ``upto``); ``newest=N``:
        only the last N of them.

        Two steps, because SQLite's planner (no statistics) answers a ``type IN (...)`` or a
        ``type=?`` query that also reads ``data`` by walking the thread's whole primary key
        (every event of a 100,000-event thread, even for a type that never occurs): the seqs
        come from ``events_by_type`` alone (one covering range per type, already in seq order,
        cut by ``LIMIT``), then only the kept events are read by primary key and decoded."""
        sql = "SELECT seq FROM events WHERE thread_key=? AND type=?"
        bounds: list = []
        if after is not None:
            sql += " AND seq>?"
            bounds.append(after)
        if upto is not None:
            sql += " AND seq<=?"
            bounds.append(upto)
        sql += " ORDER BY seq DESC LIMIT ?" if newest is not None else " ORDER BY seq"
        tail = [newest] if newest is not None else []
        seqs = sorted(r[0] for t in dict.fromkeys(types)
                      for r in self.conn.execute(sql, (thread_key, t, *bounds, *tail)).fetchall())
        if newest is not None:
            seqs = seqs[max(0, len(seqs) - newest):] if newest > 0 else []
        rows: list = []
        for i in range(0, len(seqs), 500):
            part = seqs[i:i + 500]
            rows += self.conn.execute(
                f"SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=? AND seq IN"
                f" ({','.join('?' * len(part))})", (thread_key, *part)).fetchall()
        rows.sort(key=lambda r: r[0])
        return [{"seq": s, "type": t, "kind": k, "data": jsontext.loads(d), "ts": ts, "source": src}
                for s, t, k, d, ts, src in rows]

    # -- checkpoints -------------------------------------------------------------------------
    def commit_checkpoint(self, row: dict, fact: dict,
                          then: tuple[str, dict, str] | None = None) -> None:
        """Insert the checkpoint ``row`` and append its ``checkpoint_committed`` ``fact`` in one
        transaction, and ``then`` (type, data, source: the boundary the checkpoint was taken
        for) after it in the same one; :class:`GenerationTaken` when the thread already has
        this generation or a later one (nothing is written)."""
        key, generation = row["thread_key"], row["generation"]
        with self.transaction() as c:
            current = c.execute("SELECT generation FROM threads WHERE thread_key=?"
                                + self._LOCK_THREAD, (key,)).fetchone()
            if current is None:
                raise UnknownThread(f"no thread {key!r}")
            if current[0] >= generation:
                raise GenerationTaken(f"generation {generation} of {key} already committed")
            c.execute(f"INSERT INTO checkpoints ({','.join(CHECKPOINT_COLUMNS)}) VALUES"
                      f" ({','.join('?' * len(CHECKPOINT_COLUMNS))})",
                      [row[name] for name in CHECKPOINT_COLUMNS])
            self._append_in(c, key, ev.CHECKPOINT_COMMITTED, fact, "engine", row["created_at"])
            if then is not None:
                etype, data, source = then
                self._append_in(c, key, etype, data, source, None)
            faults.point("checkpoint.before_commit")
        faults.point("checkpoint.after_commit")

    def checkpoint_rows(self, thread_key: str, *, upto_generation: int | None = None,
                        newest_first: bool = False, limit: int | None = None) -> list[dict]:
        sql, args = "SELECT * FROM checkpoints WHERE thread_key=?", [thread_key]
        if upto_generation is not None:
            sql += " AND generation<=?"
            args.append(upto_generation)
        sql += " ORDER BY generation DESC" if newest_first else " ORDER BY generation"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return self._dict_rows(sql, args)

    def find_checkpoint_rows(self, selector: str) -> list[dict]:
        """Checkpoints whose id is ``selector`` or starts with it, across threads."""
        return self._dict_rows(
            "SELECT * FROM checkpoints WHERE checkpoint_id=? OR checkpoint_id LIKE ?",
            (selector, selector.replace("%", "") + "%"))

    def thread_tables(self) -> list[str]:
        """The tables holding per-thread rows (the thread row's table last)."""
        names = [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'").fetchall()]
        out = [n for n in names
               if "thread_key" in [r[1] for r in self.conn.execute(f'PRAGMA table_info("{n}")')]]
        return sorted(out, key=lambda n: n == "threads")

    def _dict_rows(self, sql, args) -> list[dict]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    # -- live sessions -----------------------------------------------------------------------
    @staticmethod
    def _heartbeat_in(c, key, session, now) -> None:
        c.execute(
            "INSERT INTO sessions (thread_key, pid, proc_start, host, started_at, heartbeat)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT (thread_key, host, pid) DO UPDATE SET"
            " heartbeat=excluded.heartbeat, proc_start=excluded.proc_start, ended_at=NULL",
            (key, int(session["pid"]), session.get("proc_start"), session["host"], now, now),
        )

    def end_sessions(self, thread_key: str, now: float | None = None) -> None:
        with self.transaction() as c:
            c.execute("UPDATE sessions SET ended_at=? WHERE thread_key=? AND ended_at IS NULL",
                      (now or time.time(), thread_key))

    def sessions(self, thread_key: str | None = None) -> list[dict]:
        sql, args = "SELECT * FROM sessions", ()
        if thread_key:
            sql, args = sql + " WHERE thread_key=?", (thread_key,)
        cur = self.conn.execute(sql + " ORDER BY heartbeat", args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    # -- derived reads -----------------------------------------------------------------------
    def inputs(self, thread_key: str, states=None) -> list[InputRecord]:
        """The thread's inputs in admission order (only those in ``states`` when given)."""
        view = SqlStateView(self.conn, thread_key)
        return view.all_inputs() if states is None else view.inputs_in_states(states)

    def newest_inputs(self, thread_key: str, limit: int) -> list[InputRecord]:
        return SqlStateView(self.conn, thread_key).newest_inputs(limit)

    def input_counts(self, thread_key: str) -> dict:
        return SqlStateView(self.conn, thread_key).input_counts()

    def tool_calls(self, thread_key: str, statuses=None, *,
                   after_seq: int | None = None) -> list[ToolCallRecord]:
        view = SqlStateView(self.conn, thread_key)
        if after_seq is not None:  # filtered in SQL: only the later calls are decoded
            calls = view.calls_after(after_seq)
            return calls if statuses is None else [c for c in calls if c.status in set(statuses)]
        return view.all_calls() if statuses is None else view.calls_in_statuses(statuses)

    def turns(self, thread_key: str) -> list[TurnRecord]:
        rows = self.conn.execute("SELECT data FROM turns WHERE thread_key=?", (thread_key,))
        return [TurnRecord.from_row(jsontext.loads(r[0])) for r in rows.fetchall()]

    def claims(self, thread_key: str) -> list[dict]:
        rows = self.conn.execute(
            "SELECT seq, turn_id, text FROM claims WHERE thread_key=? ORDER BY seq", (thread_key,))
        return [{"seq": s, "turn_id": t, "text": x} for s, t, x in rows.fetchall()]

    def meta(self, thread_key: str) -> dict:
        rows = self.conn.execute(
            "SELECT key, value, seq FROM thread_meta WHERE thread_key=?", (thread_key,))
        return {k: {"seq": s, **jsontext.loads(v)} for k, v, s in rows.fetchall()}

    def replay(self, thread_key: str) -> ThreadState:
        """The pure fold of the whole log (the definition of the derived state)."""
        return fold(self.events(thread_key))

    def derived_state(self, thread_key: str) -> ThreadState:
        """The derived tables, read back into the in-memory shape (for comparison)."""
        state = ThreadState()
        for rec in self.inputs(thread_key):
            state.put_input(rec)
        for rec in self.turns(thread_key):
            state.put_turn(rec)
        for rec in self.tool_calls(thread_key):
            state.put_call(rec)
        return state

    def rebuild(self, thread_key: str) -> None:
        """Re-derive the lifecycle tables from the log (recovery; `continuation doctor --repair`)."""
        with self.transaction() as c:
            view = SqlStateView(c, thread_key)
            view.reset()
            history = self._history_fn(c, thread_key)
            for event in self._event_rows(c, thread_key):
                apply(view, event, history)
