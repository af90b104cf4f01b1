"""The store's logic, one for both backends: an append-only event log per thread plus the
tables derived from it by the reducer, in the same transaction.

A backend (``sqlite.SqliteStore``, ``postgres.PostgresStore``) gives the connection, the
transaction and ``sql``: the module of its own statements (``sqlite_sql``, ``postgres_sql``),
which this logic names and never spells. Durability contract: docs/design.md, "Store".
"""
from __future__ import annotations

import os
import time

from statemachine import events as ev

from continuation.host import faults
from statemachine.lifecycle import IllegalTransition
from statemachine.reducer import ThreadState, apply, fold
from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

from continuation.store import sealed
from continuation.store.boundary_reads import BoundaryReads
from continuation.store.errors import StoreError
from continuation.store.sealed import KeyUnavailable  # noqa: F401 - a store error, re-exported
from continuation.store.thread_reads import ThreadReads
from continuation.store.timeline_reads import TimelineReads
from continuation.store.view import SqlStateView, row_json


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


class ServerUnreachable(StoreError):
    """The store server cannot be reached, or was lost in the middle of a write (whose commit
    may or may not have happened): facts then go to the local spool."""


class WriteStamps:
    """The marks of one hook run's facts, by content: ``run:<run id>:<digest>`` and how many
    times that fact came before it in the run.

    A run that loses the server in the middle of a write is retried against the local spool,
    and the commit it was in may have happened all the same. Written on the server in the
    same transaction as the fact (``spool_drained``, the drain's table) and kept beside the
    fact in the spool, the mark lets the drain skip a fact the server has already: exactly
    once whichever way the lost commit went. By content, not by position: the retry reads
    the spool's (stale) view and may record other facts besides."""

    __slots__ = ("run_id", "seen")

    def __init__(self):
        self.run_id = os.urandom(8).hex()
        self.seen: dict[str, int] = {}

    def restart(self) -> None:
        """The run starts again (against the spool): its facts are marked as the first time."""
        self.seen = {}

    def mark(self, etype: str, data: dict) -> tuple[str, int]:
        from continuation.host.digest import sha256_hex

        digest = sha256_hex(f"{etype}\n{row_json(data)}".encode("utf-8", "surrogatepass"))
        origin = f"run:{self.run_id}:{digest[:24]}"
        self.seen[origin] = n = self.seen.get(origin, 0) + 1
        return origin, n


#: the hook runner's stamps (None elsewhere: only a hook run is retried against the spool)
STAMPS: WriteStamps | None = None


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


class LogStore(ThreadReads, BoundaryReads, TimelineReads):
    """What both backends share; a backend sets ``conn`` (``execute``/``executemany``),
    ``sql`` and ``transaction()``."""

    sql = None  # the backend's statements module
    _codec = None

    # -- what rows hold: in clear or sealed (store/sealed.py) -----------------------------------
    @property
    def codec(self):
        """How this store's rows are encoded, from its ``encryption`` meta row, read once:
        :class:`~continuation.store.sealed.KeyUnavailable` when the store is encrypted and its
        key cannot be had (before anything is read or written)."""
        codec = self._codec
        if codec is None:
            meta = self.encryption()
            self._remember_encryption(meta)
            codec = self._codec = sealed.codec_for(meta)
        return codec

    def encryption(self) -> dict | None:
        """The store's encryption meta (cipher and key id; never the key), None when off."""
        return sealed.parse_meta(self.store_meta(sealed.META_KEY))

    def store_meta(self, name: str) -> str | None:
        row = self.conn.execute(self.sql.store_meta_get, (name,)).fetchone()
        return row[0] if row else None

    def reseal(self, codec, progress=None) -> int:
        """Rewrite every sealed-or-sealable value of the store with ``codec`` (a new key, or
        :data:`~continuation.store.sealed.PLAIN` to decrypt), and its encryption meta, in one
        transaction: rows are read with the current codec (which must open them). Returns
        the values rewritten; ``progress(table, count)`` after each table."""
        old, done = self.codec, 0
        with self.transaction() as c:
            for table, keys, columns in sealed.SEALED_COLUMNS:
                update = self.sql.update_sealed(table, keys, columns)
                after, count = None, 0
                while True:
                    select = self.sql.select_sealed(table, keys, columns, after is not None)
                    rows = c.execute(select, (*(after or ()), sealed.BATCH)).fetchall()
                    if not rows:
                        break
                    changed = []
                    for row in rows:
                        key, values = row[:len(keys)], row[len(keys):]
                        changed.append((*(sealed.recode(old, codec, kind, v)
                                          for (_, kind), v in zip(columns, values)), *key))
                    c.executemany(update, changed)
                    count += len(changed)
                    after = tuple(rows[-1][:len(keys)])
                done += count
                if progress is not None:
                    progress(table, count)
            meta = None if codec.sealer is None else sealed.meta_text(codec.key_id)
            if meta is None:
                c.execute(self.sql.store_meta_delete, (sealed.META_KEY,))
            else:
                c.execute(self.sql.store_meta_put, (sealed.META_KEY, meta))
        self._codec = codec
        self.after_reseal()
        self._remember_encryption(self.encryption())
        return done

    def _remember_encryption(self, meta: dict | None) -> None:
        """A server store keeps its encryption meta in the state home for its local spool."""

    def after_reseal(self) -> None:
        """What a backend does once every value is rewritten (SQLite: rewrite the file and
        empty its write-ahead log, so no page of the values as they were is left)."""

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
        self.codec  # an encrypted store without its key: said before anything is written
        row = self.conn.execute(self.sql.workspace_root_of, (key,)).fetchone()
        if row is not None and (row[0] or not workspace_root):
            return key  # known thread: no write transaction (one fsync less per hook)
        now = time.time()
        with self.transaction() as c:
            self._ensure_thread_in(c, key, runtime, session_id, workspace_root, now,
                                   forked_from, forked_at_seq, name)
        return key

    def _ensure_thread_in(self, c, key, runtime, session_id, workspace_root, now,
                          forked_from=None, forked_at_seq=None, name=None) -> None:
        c.execute(self.sql.create_thread, (key, runtime, session_id, workspace_root, forked_from,
                                           forked_at_seq, name, now, now))
        if workspace_root:
            c.execute(self.sql.set_workspace_root, (workspace_root, key))

    def threads(self) -> list[dict]:
        return self._dict_rows(self.sql.all_threads, ())

    def thread(self, selector: str) -> dict:
        """A thread by key, by session id, by name (``fork --name``), or by a unique prefix
        of a key or a session id."""
        for exact in (self.sql.thread_by_key, self.sql.threads_by_session_id):
            found = self._dict_rows(exact, (selector,))  # indexed exact matches first: no scan
            if len(found) == 1:
                return found[0]
        rows = self.threads()
        for field in ("thread_key", "session_id", "name"):
            exact = [r for r in rows if r[field] == selector]
            if len(exact) == 1:
                return exact[0]
        # a prefix as the commands print it, cut with an ellipsis
        selector = selector.removesuffix("…").removesuffix("...") or selector
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
        rows = self._dict_rows(self.sql.thread_by_session, (runtime, session_id))
        return rows[0] if rows else None

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
            # the thread's write lock before ``items`` reads (SQLite's BEGIN IMMEDIATE holds it)
            c.execute(self.sql.last_seq_for_write, (thread_key,))
            appended = [self._append_in(c, thread_key, t, d, source, ts) for t, d in items]
            if session is not None:
                self._heartbeat_in(c, thread_key, session, ts or time.time())
            return appended

    def _append_in(self, c, thread_key, etype, data, source, ts, stamp: bool = True) -> Appended:
        sql = self.sql
        row = c.execute(sql.last_seq_for_write, (thread_key,)).fetchone()
        if row is None:
            raise UnknownThread(f"no thread {thread_key!r}")
        seq = row[0] + 1
        event = {"seq": seq, "type": etype, "data": data}
        # The reducer runs first: an illegal fact or a duplicate leaves no trace.
        c.execute(sql.savepoint)
        try:
            outcome = apply(SqlStateView(c, sql, thread_key, seq, self.codec), event,
                            self._history_fn(c, thread_key))
        except IllegalTransition as exc:
            c.execute(sql.rollback_to_savepoint)
            c.execute(sql.release_savepoint)
            raise IllegalFact(str(exc)) from None
        if outcome == "duplicate":
            c.execute(sql.rollback_to_savepoint)
            c.execute(sql.release_savepoint)
            return Appended(thread_key, None, outcome)
        c.execute(sql.release_savepoint)
        now = ts if ts is not None else time.time()
        c.execute(sql.insert_event,
                  (thread_key, seq, etype, ev.kind_of(etype), self.codec.dump(data), now, source))
        self._project_in(c, thread_key, seq, etype, data)
        c.execute(sql.advance_thread, (seq, now, thread_key))
        self._acknowledge_in(thread_key, seq)
        if stamp:
            self._stamp_in(c, thread_key, seq, etype, data)
        return Appended(thread_key, seq, outcome)

    def _acknowledge_in(self, thread_key: str, seq: int) -> None:
        """The commit under way makes ``seq`` the thread's last (a local store marks it)."""

    def _stamp_in(self, c, thread_key: str, seq: int, etype: str, data: dict) -> None:
        """Keep a hook run's mark of the fact just appended (see :class:`WriteStamps`): on a
        server and in the spool; a local store never hands its facts on."""

    def append_at_seq(self, thread_key: str, event: dict) -> Appended | None:
        """Append ``event`` (type, data, source, ts) at its own ``seq``, after a gap where the
        events before it are missing (a salvage of a damaged store); None when the reducer
        found it a duplicate. :class:`ValueError` when the thread is already past that seq."""
        seq = int(event["seq"])
        with self.transaction() as c:
            row = c.execute(self.sql.last_seq_for_write, (thread_key,)).fetchone()
            if row is None:
                raise UnknownThread(f"no thread {thread_key!r}")
            if row[0] >= seq:
                raise ValueError(f"thread {thread_key} is at seq {row[0]}, past {seq}")
            c.execute(self.sql.skip_to_seq, (seq - 1, thread_key, seq - 1))
            done = self._append_in(c, thread_key, event["type"], event["data"], event["source"],
                                   event["ts"], stamp=False)
        return None if done.seq is None else done

    def _history_fn(self, c, thread_key):
        def history(upto: int):
            return self._event_rows(c, thread_key, upto=upto)
        return history

    def _project_in(self, c, key, seq, etype, data) -> None:
        """Derived tables outside the input lifecycle (claims, per-thread facts)."""
        sql = self.sql
        if etype == ev.ASSISTANT_CLAIM:
            c.execute(sql.insert_claim,
                      (key, seq, data.get("turn_id"),
                       self.codec.dump_text(_sql_text(data.get("text", "")))))
        elif etype in (ev.BOUNDARY, ev.RECONCILED, ev.INPUT_REOPENED):
            # a new context generation, or a state the model has not seen (a decision recorded
            # outside its conversation): the next SessionStart or UserPromptSubmit delivers it
            c.execute(sql.mark_needs_context, (key,))
        elif etype == ev.CONTEXT_DELIVERED:
            c.execute(sql.mark_context_delivered, (int(data.get("generation") or 0), key))
        elif etype == ev.CHECKPOINT_COMMITTED:
            c.execute(sql.raise_generation, (int(data["generation"]), key))
        elif etype in (ev.SETTINGS, ev.PLAN_UPDATED, ev.BACKGROUND_TASK, ev.SESSION_STARTED,
                       ev.SESSION_ENDED):
            c.execute(sql.put_meta, (key, etype, self.codec.dump(data), seq))

    def _event_rows(self, c, thread_key, *, after: int = 0, upto: int | None = None,
                    limit: int | None = None) -> list[dict]:
        no_bound = self.sql.NO_BOUND
        rows = c.execute(self.sql.events_between, (
            thread_key, after, no_bound if upto is None else upto,
            no_bound if limit is None else limit)).fetchall()
        return [
            {"seq": s, "type": t, "kind": k, "data": self.codec.load(d), "ts": ts, "source": src}
            for s, t, k, d, ts, src in rows
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
        sql = self.sql
        bounds = (-1 if after is None else after, sql.NO_BOUND if upto is None else upto)
        if newest is None:
            statement, tail = sql.seqs_of_type, ()
        else:
            statement, tail = sql.newest_seqs_of_type, (max(newest, 0),)
        seqs = sorted(r[0] for t in dict.fromkeys(types) for r in self.conn.execute(
            statement, (thread_key, t, *bounds, *tail)).fetchall())
        if newest is not None:
            seqs = seqs[max(0, len(seqs) - newest):] if newest > 0 else []
        rows: list = []
        for i in range(0, len(seqs), 500):
            part = seqs[i:i + 500]
            rows += self.conn.execute(sql.events_at(len(part)),
                                      (thread_key, *sql.many(part))).fetchall()
        rows.sort(key=lambda r: r[0])
        return [{"seq": s, "type": t, "kind": k, "data": self.codec.load(d), "ts": ts, "source": src}
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
            current = c.execute(self.sql.generation_for_write, (key,)).fetchone()
            if current is None:
                raise UnknownThread(f"no thread {key!r}")
            if current[0] >= generation:
                raise GenerationTaken(f"generation {generation} of {key} already committed")
            codec = self.codec
            stored = {**row, "capsule": codec.dump_bytes(row["capsule"]),
                      "rendered": codec.dump_text(row["rendered"])}
            c.execute(self.sql.insert_checkpoint,
                      [stored[name] for name in self.sql.CHECKPOINT_COLUMNS])
            self._append_in(c, key, ev.CHECKPOINT_COMMITTED, fact, "engine", row["created_at"])
            if then is not None:
                etype, data, source = then
                self._append_in(c, key, etype, data, source, None)
            faults.point("checkpoint.before_commit")
        faults.point("checkpoint.after_commit")

    def checkpoint_rows(self, thread_key: str, *, upto_generation: int | None = None,
                        newest_first: bool = False, limit: int | None = None) -> list[dict]:
        sql = self.sql
        return self._checkpoints_opened(self._dict_rows(
            sql.checkpoints_newest_first if newest_first else sql.checkpoints_oldest_first,
            (thread_key, sql.NO_BOUND if upto_generation is None else upto_generation,
             sql.NO_BOUND if limit is None else limit)))

    def find_checkpoint_rows(self, selector: str) -> list[dict]:
        """Checkpoints whose id is ``selector`` or starts with it, across threads."""
        return self._checkpoints_opened(self._dict_rows(
            self.sql.checkpoints_by_id, (selector, selector.replace("%", "") + "%")))

    def _checkpoints_opened(self, rows: list[dict]) -> list[dict]:
        codec = self.codec
        for row in rows:
            row["capsule"] = codec.load_bytes(row["capsule"])
            row["rendered"] = codec.load_text(row["rendered"])
        return rows

    def thread_tables(self) -> list[str]:
        """The tables holding per-thread rows (the thread row's table last)."""
        names = {r[0] for r in self.conn.execute(self.sql.thread_tables).fetchall()}
        return sorted(names, key=lambda n: (n == "threads", n))

    def _dict_rows(self, sql, args) -> list[dict]:
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    # -- live sessions -----------------------------------------------------------------------
    def _heartbeat_in(self, c, key, session, now) -> None:
        c.execute(self.sql.heartbeat, (key, int(session["pid"]), session.get("proc_start"),
                                       session["host"], now, now))

    def end_sessions(self, thread_key: str, now: float | None = None) -> None:
        with self.transaction() as c:
            c.execute(self.sql.end_sessions, (now or time.time(), thread_key))

    def sessions(self, thread_key: str | None = None) -> list[dict]:
        if thread_key:
            return self._dict_rows(self.sql.sessions_of, (thread_key,))
        return self._dict_rows(self.sql.all_sessions, ())

    # -- derived reads -----------------------------------------------------------------------
    def inputs(self, thread_key: str, states=None) -> list[InputRecord]:
        """The thread's inputs in admission order (only those in ``states`` when given)."""
        view = self.state_view(thread_key)
        return view.all_inputs() if states is None else view.inputs_in_states(states)

    def newest_inputs(self, thread_key: str, limit: int) -> list[InputRecord]:
        return self.state_view(thread_key).newest_inputs(limit)

    def input_counts(self, thread_key: str) -> dict:
        return self.state_view(thread_key).input_counts()

    def tool_calls(self, thread_key: str, statuses=None, *,
                   after_seq: int | None = None) -> list[ToolCallRecord]:
        view = self.state_view(thread_key)
        if after_seq is not None:  # filtered in SQL: only the later calls are decoded
            calls = view.calls_after(after_seq)
            return calls if statuses is None else [c for c in calls if c.status in set(statuses)]
        return view.all_calls() if statuses is None else view.calls_in_statuses(statuses)

    def turns(self, thread_key: str) -> list[TurnRecord]:
        rows = self.conn.execute(self.sql.all_turns, (thread_key,))
        return [TurnRecord.from_row(self.codec.load(r[0])) for r in rows.fetchall()]

    def claims(self, thread_key: str) -> list[dict]:
        rows = self.conn.execute(self.sql.all_claims, (thread_key,))
        return [{"seq": s, "turn_id": t, "text": self.codec.load_text(x)}
                for s, t, x in rows.fetchall()]

    def meta(self, thread_key: str) -> dict:
        rows = self.conn.execute(self.sql.all_meta, (thread_key,))
        return {k: {"seq": s, **self.codec.load(v)} for k, v, s in rows.fetchall()}

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
            view = SqlStateView(c, self.sql, thread_key, codec=self.codec)
            view.clear()  # the rows and their earlier versions, made again event by event
            c.execute(self.sql.forget_undo_from, (thread_key,))
            history = self._history_fn(c, thread_key)
            for event in self._event_rows(c, thread_key):
                view.at(event["seq"])
                apply(view, event, history)

    # -- the spool and its drain (store/spool.py) ---------------------------------------------
    def ensure_spool_origin(self) -> None:
        """Give this store (a spool) its random origin id once."""
        sql = self.sql
        self.conn.execute(sql.create_spool_origin, ())
        self.conn.execute(sql.create_spool_stamps, ())
        if self.conn.execute(sql.spool_origin_count, ()).fetchone()[0] == 0:
            with self.transaction() as c:
                if c.execute(sql.spool_origin_count, ()).fetchone()[0] == 0:
                    c.execute(sql.set_spool_origin, (os.urandom(12).hex(),))

    def spool_origin(self) -> str:
        row = self.conn.execute(self.sql.spool_origin, ()).fetchone()
        return row[0] if row else "unknown"

    def spool_stamp(self, thread_key: str, seq: int) -> tuple[str, int] | None:
        """The hook run's mark kept beside a spooled fact (see :class:`WriteStamps`)."""
        row = self.conn.execute(self.sql.spool_stamp, (thread_key, seq)).fetchone()
        return (row[0], int(row[1])) if row else None

    def append_drained(self, origin: str, mark: int, thread_key: str, event: dict) -> int:
        """Append a spooled ``event`` here, marked ``(origin, mark)`` in the same transaction
        (the spool's origin and the event's local seq, or the hook run's stamp): 1 when
        appended, 0 when the mark is here already (drained before by a process that died
        before emptying the spool, or committed by a run that lost the server after its
        commit), a duplicate, or refused by the reducer."""
        try:
            with self.transaction() as c:
                if c.execute(self.sql.mark_drained, (origin, thread_key, mark)).fetchone() is None:
                    return 0
                done = self._append_in(c, thread_key, event["type"], event["data"],
                                       event["source"], event["ts"], stamp=False)
                return 0 if done.seq is None else 1
        except IllegalFact:
            return 0

    def forget_event(self, thread_key: str, seq: int) -> None:
        """Delete one event row (a drained spool's, nothing derived from it)."""
        with self.transaction() as c:
            c.execute(self.sql.delete_event, (thread_key, seq))

    def heartbeat(self, thread_key: str, session: dict) -> None:
        with self.transaction() as c:
            self._heartbeat_in(c, thread_key, session, session["heartbeat"])

    def event_count(self) -> int:
        return self.conn.execute(self.sql.event_count, ()).fetchone()[0]
