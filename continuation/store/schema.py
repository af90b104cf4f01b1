"""The SQLite schema, as forward migrations. ``PRAGMA user_version`` is the schema version.

A migration is applied once, in order, inside one transaction. Never edit a released
migration: add the next one. A database whose version is newer than ``SCHEMA_VERSION`` was
written by a newer continuation and is refused with a clear error (see ``StoreVersionError``).
"""
from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: events (the durable log) and the tables derived from them
    """
    CREATE TABLE threads (
        thread_key TEXT PRIMARY KEY,
        runtime TEXT NOT NULL,
        session_id TEXT NOT NULL,
        workspace_root TEXT,
        forked_from TEXT,
        forked_at_seq INTEGER,
        name TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'active',
        generation INTEGER NOT NULL DEFAULT 0,
        needs_context INTEGER NOT NULL DEFAULT 0,
        delivered_generation INTEGER NOT NULL DEFAULT 0,
        UNIQUE (runtime, session_id)
    );
    CREATE INDEX threads_workspace ON threads (workspace_root);
    CREATE TABLE events (
        thread_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        ts REAL NOT NULL,
        source TEXT NOT NULL,
        PRIMARY KEY (thread_key, seq)
    ) WITHOUT ROWID;
    CREATE INDEX events_by_type ON events (thread_key, type, seq);
    CREATE TABLE inputs (
        thread_key TEXT NOT NULL,
        input_id TEXT NOT NULL,
        state TEXT NOT NULL,
        turn_id TEXT,
        admitted_seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (thread_key, input_id)
    ) WITHOUT ROWID;
    CREATE INDEX inputs_by_state ON inputs (thread_key, state);
    CREATE INDEX inputs_by_turn ON inputs (thread_key, turn_id);
    CREATE TABLE turns (
        thread_key TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (thread_key, turn_id)
    ) WITHOUT ROWID;
    CREATE INDEX turns_by_status ON turns (thread_key, status);
    CREATE TABLE tool_calls (
        thread_key TEXT NOT NULL,
        call_id TEXT NOT NULL,
        status TEXT NOT NULL,
        started_seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (thread_key, call_id)
    ) WITHOUT ROWID;
    CREATE INDEX tool_calls_by_status ON tool_calls (thread_key, status);
    CREATE TABLE claims (
        thread_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        turn_id TEXT,
        text TEXT NOT NULL,
        PRIMARY KEY (thread_key, seq)
    ) WITHOUT ROWID;
    CREATE TABLE thread_meta (
        thread_key TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (thread_key, key)
    ) WITHOUT ROWID;
    CREATE TABLE checkpoints (
        checkpoint_id TEXT PRIMARY KEY,
        thread_key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        reason TEXT NOT NULL,
        created_at REAL NOT NULL,
        capsule BLOB NOT NULL,
        sha256 TEXT NOT NULL,
        capsule_version INTEGER NOT NULL,
        rendered TEXT NOT NULL,
        workspace TEXT,
        file_path TEXT,
        UNIQUE (thread_key, generation)
    );
    CREATE TABLE sessions (
        thread_key TEXT NOT NULL,
        pid INTEGER NOT NULL,
        proc_start TEXT,
        host TEXT NOT NULL,
        started_at REAL NOT NULL,
        heartbeat REAL NOT NULL,
        ended_at REAL,
        PRIMARY KEY (thread_key, host, pid)
    ) WITHOUT ROWID;
    """,
    # 2: the newest inputs of a thread read through an index (`status` prints the newest 20 of
    # any number: without it, every input row of the thread was read and sorted)
    """
    CREATE INDEX inputs_by_admission ON inputs (thread_key, admitted_seq);
    """,
    # 3: the newest tool calls of a thread (a boundary's call list, the calls after a rewind
    # point) read through an index by start, not by sorting every call of the thread (25 ms
    # at 20,000 calls, growing with the thread)
    """
    CREATE INDEX tool_calls_by_start ON tool_calls (thread_key, started_seq);
    """,
    # 4: the size of each input's and call's row, kept beside it, and the state indexes extended
    # to cover it: a boundary counts the rows it does not gather (the older handled inputs, the
    # older finished calls) by state and position, and summing their sizes read every row of a
    # long thread (~30 ms at 20,000 inputs and 25,000 calls, growing with the thread); the
    # index alone answers now. ``data`` is ASCII (escaped JSON), so its length is its bytes.
    """
    ALTER TABLE inputs ADD COLUMN data_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE inputs SET data_bytes = length(CAST(data AS BLOB));
    DROP INDEX inputs_by_state;
    CREATE INDEX inputs_by_state ON inputs (thread_key, state, admitted_seq, data_bytes);
    ALTER TABLE tool_calls ADD COLUMN data_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE tool_calls SET data_bytes = length(CAST(data AS BLOB));
    DROP INDEX tool_calls_by_status;
    CREATE INDEX tool_calls_by_status ON tool_calls (thread_key, status, started_seq, data_bytes);
    """,
    # 5: the calls of given turns (the work ledger of the open inputs' turns, the calls a
    # claim's turn recorded) read through an index on the call's turn: a boundary of a thread
    # with an open input read every finished call of the thread to find its turn's (~20 ms at
    # 20,000 calls, growing with the thread)
    """
    CREATE INDEX tool_calls_by_turn ON tool_calls (thread_key, json_extract(data, '$.turn_id'));
    """,
    # 6: the marks of facts a spool's drain appended (the spool's origin and local seq) and of
    # facts a hook run wrote before it lost the server (its run stamp): a second drain, or a
    # drain of a fact whose lost commit happened after all, finds its mark and adds nothing.
    # Made with the schema (the drain created it on first use before)
    """
    CREATE TABLE IF NOT EXISTS spool_drained (
        origin TEXT NOT NULL,
        thread_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (origin, thread_key, seq)
    );
    """,
    # 7: each derived row as it was before an event changed it, so a rewind restores the rows
    # changed after its target instead of replaying the thread's whole log (29 s at 200,000
    # events, growing with the thread); ``undo_from`` is the first seq a thread's versions
    # cover (a thread recorded before this schema: its rewinds further back replay the log)
    """
    CREATE TABLE row_versions (
        thread_key TEXT NOT NULL,
        seq INTEGER NOT NULL,
        n INTEGER NOT NULL,
        kind TEXT NOT NULL,
        row_key TEXT NOT NULL,
        data TEXT,
        PRIMARY KEY (thread_key, seq, n)
    ) WITHOUT ROWID;
    CREATE TABLE undo_from (
        thread_key TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO undo_from (thread_key, seq) SELECT thread_key, last_seq + 1 FROM threads;
    """,
    # 8: the store's own settings: ``encryption`` (the cipher and the key id of the key the
    # rows are sealed with, never the key: store/sealed.py)
    """
    CREATE TABLE store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
