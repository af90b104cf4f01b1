"""The PostgreSQL schema, as forward migrations: the same tables, keys and indexes as
``schema.py``'s SQLite migrations, numbered alike (``continuation_schema.version`` is the
schema version), in PostgreSQL's types: ``BIGINT`` for integers, ``DOUBLE PRECISION`` for
times, ``BYTEA`` for the capsule's bytes; ``octet_length`` counts bytes; the JSON index is on
the expression the queries spell (``postgres_sql.py``). A test holds both schemas to the same
tables, columns and index names. Never edit a released migration: add the next one.
"""
from __future__ import annotations

MIGRATIONS: list[tuple[str, ...]] = [
    # 1: events (the durable log) and the tables derived from them
    (
        """CREATE TABLE threads (
            thread_key TEXT PRIMARY KEY,
            runtime TEXT NOT NULL,
            session_id TEXT NOT NULL,
            workspace_root TEXT,
            forked_from TEXT,
            forked_at_seq BIGINT,
            name TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            last_seq BIGINT NOT NULL DEFAULT 0,
            status TEXT NOT NULL DEFAULT 'active',
            generation BIGINT NOT NULL DEFAULT 0,
            needs_context BIGINT NOT NULL DEFAULT 0,
            delivered_generation BIGINT NOT NULL DEFAULT 0,
            UNIQUE (runtime, session_id)
        )""",
        "CREATE INDEX threads_workspace ON threads (workspace_root)",
        """CREATE TABLE events (
            thread_key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            type TEXT NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            ts DOUBLE PRECISION NOT NULL,
            source TEXT NOT NULL,
            PRIMARY KEY (thread_key, seq)
        )""",
        "CREATE INDEX events_by_type ON events (thread_key, type, seq)",
        """CREATE TABLE inputs (
            thread_key TEXT NOT NULL,
            input_id TEXT NOT NULL,
            state TEXT NOT NULL,
            turn_id TEXT,
            admitted_seq BIGINT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (thread_key, input_id)
        )""",
        "CREATE INDEX inputs_by_state ON inputs (thread_key, state)",
        "CREATE INDEX inputs_by_turn ON inputs (thread_key, turn_id)",
        """CREATE TABLE turns (
            thread_key TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            status TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (thread_key, turn_id)
        )""",
        "CREATE INDEX turns_by_status ON turns (thread_key, status)",
        """CREATE TABLE tool_calls (
            thread_key TEXT NOT NULL,
            call_id TEXT NOT NULL,
            status TEXT NOT NULL,
            started_seq BIGINT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (thread_key, call_id)
        )""",
        "CREATE INDEX tool_calls_by_status ON tool_calls (thread_key, status)",
        """CREATE TABLE claims (
            thread_key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            turn_id TEXT,
            text TEXT NOT NULL,
            PRIMARY KEY (thread_key, seq)
        )""",
        """CREATE TABLE thread_meta (
            thread_key TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            seq BIGINT NOT NULL,
            PRIMARY KEY (thread_key, key)
        )""",
        """CREATE TABLE checkpoints (
            checkpoint_id TEXT PRIMARY KEY,
            thread_key TEXT NOT NULL,
            generation BIGINT NOT NULL,
            seq BIGINT NOT NULL,
            reason TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            capsule BYTEA NOT NULL,
            sha256 TEXT NOT NULL,
            capsule_version BIGINT NOT NULL,
            rendered TEXT NOT NULL,
            workspace TEXT,
            file_path TEXT,
            UNIQUE (thread_key, generation)
        )""",
        """CREATE TABLE sessions (
            thread_key TEXT NOT NULL,
            pid BIGINT NOT NULL,
            proc_start TEXT,
            host TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            heartbeat DOUBLE PRECISION NOT NULL,
            ended_at DOUBLE PRECISION,
            PRIMARY KEY (thread_key, host, pid)
        )""",
    ),
    # 2: the newest inputs of a thread read through an index (`status` prints the newest 20 of
    # any number: without it, every input row of the thread was read and sorted)
    (
        "CREATE INDEX inputs_by_admission ON inputs (thread_key, admitted_seq)",
    ),
    # 3: the newest tool calls of a thread (a boundary's call list, the calls after a rewind
    # point) read through an index by start, not by sorting every call of the thread (25 ms
    # at 20,000 calls, growing with the thread)
    (
        "CREATE INDEX tool_calls_by_start ON tool_calls (thread_key, started_seq)",
    ),
    # 4: the size of each input's and call's row, kept beside it, and the state indexes extended
    # to cover it: a boundary counts the rows it does not gather (the older handled inputs, the
    # older finished calls) by state and position, and summing their sizes read every row of a
    # long thread (~30 ms at 20,000 inputs and 25,000 calls, growing with the thread); the
    # index alone answers now. ``data`` is ASCII (escaped JSON), so its length is its bytes.
    (
        "ALTER TABLE inputs ADD COLUMN data_bytes BIGINT NOT NULL DEFAULT 0",
        "UPDATE inputs SET data_bytes = octet_length(data)",
        "DROP INDEX inputs_by_state",
        "CREATE INDEX inputs_by_state ON inputs (thread_key, state, admitted_seq, data_bytes)",
        "ALTER TABLE tool_calls ADD COLUMN data_bytes BIGINT NOT NULL DEFAULT 0",
        "UPDATE tool_calls SET data_bytes = octet_length(data)",
        "DROP INDEX tool_calls_by_status",
        "CREATE INDEX tool_calls_by_status ON tool_calls (thread_key, status, started_seq, data_bytes)",
    ),
    # 5: the calls of given turns (the work ledger of the open inputs' turns, the calls a
    # claim's turn recorded) read through an index on the call's turn: a boundary of a thread
    # with an open input read every finished call of the thread to find its turn's (~20 ms at
    # 20,000 calls, growing with the thread)
    (
        "CREATE INDEX tool_calls_by_turn ON tool_calls (thread_key, (data::jsonb #>> '{turn_id}'))",
    ),
    # 6: as schema.py's 6 (a server the drain reached already has it)
    (
        """CREATE TABLE IF NOT EXISTS spool_drained (
            origin TEXT NOT NULL,
            thread_key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            PRIMARY KEY (origin, thread_key, seq)
        )""",
    ),
    # 7: as schema.py's 7
    (
        """CREATE TABLE row_versions (
            thread_key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            n BIGINT NOT NULL,
            kind TEXT NOT NULL,
            row_key TEXT NOT NULL,
            data TEXT,
            PRIMARY KEY (thread_key, seq, n)
        )""",
        """CREATE TABLE undo_from (
            thread_key TEXT PRIMARY KEY,
            seq BIGINT NOT NULL
        )""",
        "INSERT INTO undo_from (thread_key, seq) SELECT thread_key, last_seq + 1 FROM threads",
    ),
    # 8: as schema.py's 8
    (
        """CREATE TABLE store_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
    ),
]
