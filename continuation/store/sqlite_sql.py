"""Every statement the SQLite store runs, in SQLite's own dialect.

``postgres_sql.py`` holds the same names in PostgreSQL's; the store's logic (``log_store``,
``thread_reads``, ``boundary_reads``, ``view``) only names them. A statement whose shape
depends on its arguments (a list of states, optional bounds) is a function of that shape.

SQLite's planner has no statistics: where it would walk a long thread's rows, ``INDEXED BY``
names the index the schema made for the read (each such place says what it measured).
"""
from __future__ import annotations

#: states few rows of a long thread are in (the open inputs, the unsettled calls): a read of
#: them names the state index. Without it the planner, which takes every state as equally
#: common, walks all the thread's rows in key order (measured at 20,000 inputs: 18 ms instead
#: of 0.1 ms per query; an ``unlikely()`` hint was not enough for three states).
_RARE_INPUT_STATES = frozenset({"new", "queued", "pending", "interrupted", "reconciling"})
_RARE_CALL_STATUSES = frozenset({"in_flight", "unknown", "reconciled"})
#: a bound no seq or generation reaches (a "no upper bound" that keeps one statement)
NO_BOUND = (1 << 63) - 1
#: SQLite's JSON functions take any escaped text: a derived row keeps it exactly
JSON_STRICT = False


def many(values) -> tuple:
    """The arguments a list of values binds to: one per ``?`` of :func:`_marks`."""
    return tuple(values)


def _marks(n: int) -> str:
    return ",".join("?" * n)


# -- threads -------------------------------------------------------------------------------
create_thread = (
    "INSERT OR IGNORE INTO threads (thread_key, runtime, session_id, workspace_root,"
    " forked_from, forked_at_seq, name, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)")
set_workspace_root = (
    "UPDATE threads SET workspace_root=? WHERE thread_key=? AND workspace_root IS NULL")
workspace_root_of = "SELECT workspace_root FROM threads WHERE thread_key=?"
all_threads = "SELECT * FROM threads ORDER BY created_at, thread_key"
thread_by_key = "SELECT * FROM threads WHERE thread_key=?"
threads_by_session_id = "SELECT * FROM threads WHERE session_id=?"
thread_by_session = "SELECT * FROM threads WHERE runtime=? AND session_id=?"
thread_keys = "SELECT thread_key FROM threads ORDER BY created_at"
thread_keys_of_workspace = (
    "SELECT thread_key FROM threads WHERE workspace_root=? ORDER BY created_at")
forks_of = "SELECT thread_key FROM threads WHERE forked_from=?"
last_seq = "SELECT last_seq FROM threads WHERE thread_key=?"
#: the read before a write: ``BEGIN IMMEDIATE`` holds the write lock already
last_seq_for_write = last_seq
generation_for_write = "SELECT generation FROM threads WHERE thread_key=?"
#: a salvage leaves a gap where an event could not be read
skip_to_seq = "UPDATE threads SET last_seq=? WHERE thread_key=? AND last_seq<?"
advance_thread = "UPDATE threads SET last_seq=?, updated_at=? WHERE thread_key=?"
mark_needs_context = "UPDATE threads SET needs_context=1 WHERE thread_key=?"
mark_context_delivered = (
    "UPDATE threads SET needs_context=0, delivered_generation=MAX(delivered_generation, ?)"
    " WHERE thread_key=?")
raise_generation = "UPDATE threads SET generation=MAX(generation, ?) WHERE thread_key=?"
thread_roots = "SELECT workspace_root FROM threads WHERE workspace_root IS NOT NULL"
thread_roots_of = thread_roots + " AND thread_key=?"


def delete_rows_of(table: str) -> str:
    return f'DELETE FROM "{table}" WHERE thread_key=?'


#: the tables holding per-thread rows
thread_tables = ("SELECT m.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c"
                 " WHERE m.type='table' AND c.name='thread_key'")


# -- events --------------------------------------------------------------------------------
insert_event = ("INSERT INTO events (thread_key, seq, type, kind, data, ts, source)"
                " VALUES (?,?,?,?,?,?,?)")
#: (thread, after, upto, limit): pass NO_BOUND for no upper bound or no limit
events_between = ("SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=?"
                  " AND seq>? AND seq<=? ORDER BY seq LIMIT ?")
#: the seqs of one type, through ``events_by_type`` alone (a ``type=?`` read that also reads
#: ``data`` walked the thread's whole primary key, even for a type that never occurs)
seqs_of_type = ("SELECT seq FROM events WHERE thread_key=? AND type=? AND seq>? AND seq<=?"
                " ORDER BY seq")
newest_seqs_of_type = ("SELECT seq FROM events WHERE thread_key=? AND type=? AND seq>?"
                       " AND seq<=? ORDER BY seq DESC LIMIT ?")


def events_at(n: int) -> str:
    return ("SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=? AND seq IN"
            f" ({_marks(n)})")


newest_event_with_path = (
    "SELECT data FROM events WHERE thread_key=? AND type=? AND json_extract(data, '$.path')=?"
    " ORDER BY seq DESC LIMIT 1")
event_counts_by_kind = ("SELECT json_extract(data, '$.kind'), COUNT(*) FROM events"
                        " WHERE thread_key=? AND type=? GROUP BY 1")


def newest_event_of_turn(n_types: int) -> str:
    return (f"SELECT type, data, source FROM events WHERE thread_key=? AND type IN"
            f" ({_marks(n_types)}) AND json_extract(data, '$.turn_id')=? ORDER BY seq DESC LIMIT 1")


newest_seq_of_type = "SELECT MAX(seq) FROM events WHERE thread_key=? AND type=?"
newest_event_seq_ts = "SELECT seq, ts FROM events WHERE thread_key=? ORDER BY seq DESC LIMIT 1"
event_count = "SELECT count(*) FROM events"
delete_event = "DELETE FROM events WHERE thread_key=? AND seq=?"

# -- inputs --------------------------------------------------------------------------------
put_input = ("INSERT OR REPLACE INTO inputs (thread_key, input_id, state, turn_id, admitted_seq,"
             " data, data_bytes) VALUES (?,?,?,?,?,?,?)")
input_data = "SELECT data FROM inputs WHERE thread_key=? AND input_id=?"
inputs_data_of_turn = "SELECT data FROM inputs WHERE thread_key=? AND turn_id=?"
all_inputs = "SELECT data FROM inputs WHERE thread_key=? ORDER BY admitted_seq"
newest_inputs = "SELECT data FROM inputs WHERE thread_key=? ORDER BY admitted_seq DESC LIMIT ?"
inputs_after = "SELECT data FROM inputs WHERE thread_key=? AND admitted_seq>? ORDER BY admitted_seq"
input_count = "SELECT count(*) FROM inputs WHERE thread_key=?"
input_counts = ("SELECT state, count(*) FROM inputs WHERE thread_key=? GROUP BY state"
                " ORDER BY state")
input_totals = ("SELECT state, count(*), sum(data_bytes) FROM inputs WHERE thread_key=?"
                " GROUP BY state ORDER BY state")
any_input_in_state = "SELECT 1 FROM inputs WHERE thread_key=? AND state=? LIMIT 1"


def _state_hint(index: str, rare, values) -> str:
    return f" INDEXED BY {index}" if set(values) <= rare else ""


def inputs_in_states(states, *, ordered: bool = True) -> str:
    """Inputs in ``states``, through the state index when every one is rare."""
    return (f"SELECT data FROM inputs{_state_hint('inputs_by_state', _RARE_INPUT_STATES, states)}"
            f" WHERE thread_key=? AND state IN ({_marks(len(states))})"
            + (" ORDER BY admitted_seq" if ordered else ""))


def newest_inputs_in_states(n_states: int) -> str:
    return (f"SELECT data, admitted_seq, data_bytes FROM inputs WHERE thread_key=?"
            f" AND state IN ({_marks(n_states)}) ORDER BY admitted_seq DESC LIMIT ?")


def admitted_seqs(n_ids: int) -> str:
    return (f"SELECT admitted_seq FROM inputs WHERE thread_key=? AND input_id IN"
            f" ({_marks(n_ids)})")


def inputs_totals_in_states(n_states: int) -> str:
    return (f"SELECT count(*), sum(data_bytes) FROM inputs WHERE thread_key=?"
            f" AND state IN ({_marks(n_states)})")


#: (thread, state, below): the first or last such input admitted before ``below``
first_input_in_state_below = ("SELECT admitted_seq FROM inputs WHERE thread_key=? AND state=?"
                              " AND admitted_seq<? ORDER BY admitted_seq LIMIT 1")
last_input_in_state_below = ("SELECT admitted_seq FROM inputs WHERE thread_key=? AND state=?"
                             " AND admitted_seq<? ORDER BY admitted_seq DESC LIMIT 1")

# -- turns ---------------------------------------------------------------------------------
put_turn = "INSERT OR REPLACE INTO turns (thread_key, turn_id, status, data) VALUES (?,?,?,?)"
turn_data = "SELECT data FROM turns WHERE thread_key=? AND turn_id=?"
all_turns = "SELECT data FROM turns WHERE thread_key=?"
running_turns = "SELECT data FROM turns WHERE thread_key=? AND status='running'"
running_turn_ids = "SELECT turn_id FROM turns WHERE thread_key=? AND status='running'"
newest_running_turn = ("SELECT turn_id FROM turns WHERE thread_key=? AND status='running'"
                       " ORDER BY json_extract(data, '$.started_seq') DESC LIMIT 1")
turn_count = "SELECT count(*) FROM turns WHERE thread_key=?"
any_running_turn = "SELECT 1 FROM turns WHERE thread_key=? AND status='running' LIMIT 1"

# -- tool calls ----------------------------------------------------------------------------
put_call = ("INSERT OR REPLACE INTO tool_calls (thread_key, call_id, status, started_seq, data,"
            " data_bytes) VALUES (?,?,?,?,?,?)")
call_data = "SELECT data FROM tool_calls WHERE thread_key=? AND call_id=?"
all_calls = "SELECT data FROM tool_calls WHERE thread_key=? ORDER BY started_seq"
calls_after = ("SELECT data FROM tool_calls WHERE thread_key=? AND started_seq>?"
               " ORDER BY started_seq")
any_call_in_flight = ("SELECT 1 FROM tool_calls WHERE thread_key=? AND status='in_flight'"
                      " LIMIT 1")
#: through the turn index (without it every call of the thread is read, on each tool call of
#: a runtime that pairs calls itself)
calls_of_turn = ("SELECT call_id, status, data FROM tool_calls INDEXED BY tool_calls_by_turn"
                 " WHERE thread_key=? AND json_extract(data, '$.turn_id')=? ORDER BY started_seq")
ok_calls_without_exit_code = (
    "SELECT call_id FROM tool_calls INDEXED BY tool_calls_by_turn WHERE thread_key=?"
    " AND status='ok' AND json_extract(data, '$.turn_id')=?"
    " AND json_extract(data, '$.outcome.exit_code') IS NULL")


def calls_in_statuses(statuses) -> str:
    return (f"SELECT data FROM tool_calls"
            f"{_state_hint('tool_calls_by_status', _RARE_CALL_STATUSES, statuses)}"
            f" WHERE thread_key=? AND status IN ({_marks(len(statuses))}) ORDER BY started_seq")


def newest_calls(n_statuses: int) -> str:
    """The newest ``limit`` of each status through the status index, then the newest of those:
    args (thread, status, limit) per status, then limit."""
    each = ("SELECT data, started_seq FROM (SELECT data, started_seq FROM tool_calls"
            " WHERE thread_key=? AND status=? ORDER BY started_seq DESC LIMIT ?) AS s{}")
    return (" UNION ALL ".join(each.format(n) for n in range(n_statuses))
            + " ORDER BY started_seq DESC LIMIT ?")


def calls_of_turns(n_turns: int, n_statuses: int) -> str:
    # through the turn index: the status index would read every finished call
    return (f"SELECT data FROM tool_calls INDEXED BY tool_calls_by_turn WHERE thread_key=? AND"
            f" json_extract(data, '$.turn_id') IN ({_marks(n_turns)}) AND status IN"
            f" ({_marks(n_statuses)}) ORDER BY started_seq")


def calls_totals_in_statuses(n_statuses: int) -> str:
    """(count, bytes) of the calls in the statuses started up to a seq."""
    return (f"SELECT count(*), sum(data_bytes) FROM tool_calls WHERE thread_key=?"
            f" AND status IN ({_marks(n_statuses)}) AND started_seq<=?")


def calls_by_id(n_ids: int) -> str:
    return (f"SELECT status, started_seq, data_bytes FROM tool_calls WHERE thread_key=?"
            f" AND call_id IN ({_marks(n_ids)})")


def call_edge_in_status(n_excluded: int, *, last: bool) -> str:
    """The first (or last) start seq of the calls in one status started up to a seq, other
    than ``n_excluded`` call ids: args (thread, status, upto, *ids)."""
    excluded = f" AND call_id NOT IN ({_marks(n_excluded)})" if n_excluded else ""
    return (f"SELECT started_seq FROM tool_calls WHERE thread_key=? AND status=?"
            f" AND started_seq<=?{excluded} ORDER BY started_seq{' DESC' if last else ''} LIMIT 1")


# -- claims --------------------------------------------------------------------------------
insert_claim = "INSERT INTO claims (thread_key, seq, turn_id, text) VALUES (?,?,?,?)"
all_claims = "SELECT seq, turn_id, text FROM claims WHERE thread_key=? ORDER BY seq"


def in_ranges(n_ranges: int | None) -> str:
    """`` AND seq<=?`` (then `` AND (seq BETWEEN ? AND ? OR ...)`` for ``n_ranges``): the seqs
    up to a bound on the current branch."""
    if n_ranges is None:
        return " AND seq<=?"
    return " AND seq<=? AND (" + " OR ".join("seq BETWEEN ? AND ?" for _ in range(n_ranges)) + ")"


def newest_claims(n_ranges: int | None) -> str:
    return (f"SELECT seq, turn_id, text FROM claims WHERE thread_key=?{in_ranges(n_ranges)}"
            " ORDER BY seq DESC LIMIT ?")


def claim_totals() -> str:
    """(count, bytes, first, last seq) of a thread's claims with seq in [lo, hi] and up to
    a bound: args (thread, upto, lo, hi)."""
    return ("SELECT count(*), sum(length(CAST(text AS BLOB))), min(seq), max(seq) FROM claims"
            " WHERE thread_key=? AND seq<=? AND seq>=? AND seq<=?")


def event_totals(n_types: int) -> str:
    """As :func:`claim_totals`, of the events of ``n_types`` types (all when 0): args
    (thread, *types, upto, lo, hi)."""
    types = f" AND type IN ({_marks(n_types)})" if n_types else ""
    return ("SELECT count(*), sum(length(CAST(data AS BLOB))), min(seq), max(seq) FROM events"
            f" WHERE thread_key=?{types} AND seq<=? AND seq>=? AND seq<=?")


# -- per-thread facts ----------------------------------------------------------------------
put_meta = "INSERT OR REPLACE INTO thread_meta (thread_key, key, value, seq) VALUES (?,?,?,?)"
all_meta = "SELECT key, value, seq FROM thread_meta WHERE thread_key=?"

# -- checkpoints ---------------------------------------------------------------------------
CHECKPOINT_COLUMNS = ("checkpoint_id", "thread_key", "generation", "seq", "reason", "created_at",
                      "capsule", "sha256", "capsule_version", "rendered", "workspace",
                      "file_path")
insert_checkpoint = (f"INSERT INTO checkpoints ({', '.join(CHECKPOINT_COLUMNS)}) VALUES"
                     f" ({_marks(len(CHECKPOINT_COLUMNS))})")
#: (thread, upto generation, limit)
checkpoints_oldest_first = ("SELECT * FROM checkpoints WHERE thread_key=? AND generation<=?"
                            " ORDER BY generation LIMIT ?")
checkpoints_newest_first = ("SELECT * FROM checkpoints WHERE thread_key=? AND generation<=?"
                            " ORDER BY generation DESC LIMIT ?")
checkpoints_by_id = "SELECT * FROM checkpoints WHERE checkpoint_id=? OR checkpoint_id LIKE ?"
newest_checkpoint_summary = (
    "SELECT checkpoint_id, generation, created_at, seq, workspace FROM checkpoints"
    " WHERE thread_key=? ORDER BY generation DESC LIMIT 1")
newest_snapshot_before = (
    "SELECT checkpoint_id, workspace FROM checkpoints WHERE thread_key=? AND seq<? AND"
    " workspace IS NOT NULL ORDER BY generation DESC LIMIT 1")
checkpoint_workspaces = "SELECT workspace FROM checkpoints WHERE workspace IS NOT NULL"
checkpoint_workspaces_of = checkpoint_workspaces + " AND thread_key=?"
checkpoint_sizes = ("SELECT thread_key, generation, created_at, length(CAST(capsule AS BLOB)),"
                    " length(CAST(rendered AS BLOB)) FROM checkpoints")
snapshot_workspaces = ("SELECT checkpoint_id, generation, workspace FROM checkpoints"
                       " WHERE workspace IS NOT NULL ORDER BY thread_key, generation")
forget_checkpoint_copy = ("UPDATE checkpoints SET file_path=NULL WHERE thread_key=?"
                          " AND generation=?")
drop_checkpoint_rendering = ("UPDATE checkpoints SET rendered='' WHERE thread_key=?"
                             " AND generation=?")
drop_checkpoint_capsule = "UPDATE checkpoints SET capsule=? WHERE thread_key=? AND generation=?"

# -- live sessions -------------------------------------------------------------------------
heartbeat = (
    "INSERT INTO sessions (thread_key, pid, proc_start, host, started_at, heartbeat)"
    " VALUES (?,?,?,?,?,?) ON CONFLICT (thread_key, host, pid) DO UPDATE SET"
    " heartbeat=excluded.heartbeat, proc_start=excluded.proc_start, ended_at=NULL")
end_sessions = "UPDATE sessions SET ended_at=? WHERE thread_key=? AND ended_at IS NULL"
end_session_of = ("UPDATE sessions SET ended_at=? WHERE thread_key=? AND pid=? AND host=?"
                  " AND ended_at IS NULL")
all_sessions = "SELECT * FROM sessions ORDER BY heartbeat"
sessions_of = "SELECT * FROM sessions WHERE thread_key=? ORDER BY heartbeat"

# -- the derived rows' earlier versions (a rewind restores them) ---------------------------
#: the row as it was before the event ``seq`` changed it (data NULL: it did not exist)
put_row_version = ("INSERT INTO row_versions (thread_key, seq, n, kind, row_key, data)"
                   " VALUES (?,?,?,?,?,?)")
#: every earlier version written after a seq, oldest first: the first of each row is the row
#: as it was at that seq
row_versions_after = ("SELECT kind, row_key, data FROM row_versions WHERE thread_key=?"
                      " AND seq>? ORDER BY seq, n")
undo_from = "SELECT seq FROM undo_from WHERE thread_key=?"
delete_row_versions = "DELETE FROM row_versions WHERE thread_key=?"
forget_undo_from = "DELETE FROM undo_from WHERE thread_key=?"
delete_input = "DELETE FROM inputs WHERE thread_key=? AND input_id=?"
delete_turn = "DELETE FROM turns WHERE thread_key=? AND turn_id=?"
delete_call = "DELETE FROM tool_calls WHERE thread_key=? AND call_id=?"
all_input_rows = "SELECT input_id, data FROM inputs WHERE thread_key=?"
all_turn_rows = "SELECT turn_id, data FROM turns WHERE thread_key=?"
all_call_rows = "SELECT call_id, data FROM tool_calls WHERE thread_key=?"

# -- a lifecycle rebuild -------------------------------------------------------------------
reset_lifecycle = ("DELETE FROM inputs WHERE thread_key=?", "DELETE FROM turns WHERE thread_key=?",
                   "DELETE FROM tool_calls WHERE thread_key=?")

# -- the spool's drain (exactly once across machines and crashes) --------------------------
create_spool_origin = "CREATE TABLE IF NOT EXISTS spool_origin (origin TEXT NOT NULL)"
spool_origin = "SELECT origin FROM spool_origin"
spool_origin_count = "SELECT count(*) FROM spool_origin"
set_spool_origin = "INSERT INTO spool_origin VALUES (?)"
#: a hook run's mark of each spooled fact (``log_store.WriteStamps``)
create_spool_stamps = ("CREATE TABLE IF NOT EXISTS spool_stamps (thread_key TEXT NOT NULL,"
                       " seq BIGINT NOT NULL, origin TEXT NOT NULL, mark BIGINT NOT NULL,"
                       " PRIMARY KEY (thread_key, seq))")
keep_spool_stamp = ("INSERT INTO spool_stamps (thread_key, seq, origin, mark)"
                    " VALUES (?,?,?,?)")
spool_stamp = "SELECT origin, mark FROM spool_stamps WHERE thread_key=? AND seq=?"
mark_drained = ("INSERT INTO spool_drained (origin, thread_key, seq) VALUES (?,?,?)"
                " ON CONFLICT DO NOTHING RETURNING seq")

# -- transactions --------------------------------------------------------------------------
begin = "BEGIN IMMEDIATE"  # the write lock up front: two writers never deadlock on an upgrade
commit = "COMMIT"
rollback = "ROLLBACK"
savepoint = "SAVEPOINT fold"
rollback_to_savepoint = "ROLLBACK TO fold"
release_savepoint = "RELEASE fold"

# -- the timeline page (timeline_reads) ------------------------------------------------------
turn_outline = ("SELECT turn_id, status, json_extract(data, '$.started_seq'),"
                " json_extract(data, '$.ended_seq') FROM turns WHERE thread_key=?")
inputs_admitted_between = ("SELECT data FROM inputs INDEXED BY inputs_by_admission"
                           " WHERE thread_key=? AND admitted_seq>=? AND admitted_seq<=?"
                           " ORDER BY admitted_seq")
calls_started_between = ("SELECT data FROM tool_calls INDEXED BY tool_calls_by_start"
                         " WHERE thread_key=? AND started_seq>=? AND started_seq<=?"
                         " ORDER BY started_seq")
def input_versions_at(n: int) -> str:
    return (f"SELECT seq, row_key, data FROM row_versions WHERE thread_key=? AND seq IN"
            f" ({_marks(n)}) AND kind='input'")


def event_density(n_types: int) -> str:
    """(width, thread, *types): through ``events_by_type`` alone (it covers type and seq), one
    range per type; the payloads are not read."""
    return ("SELECT (seq - 1) / ?, type, count(*) FROM events INDEXED BY events_by_type"
            f" WHERE thread_key=? AND type IN ({_marks(n_types)}) GROUP BY 1, 2")


#: through the status index alone (it covers status and start)
call_density = ("SELECT (started_seq - 1) / ?, status, count(*) FROM tool_calls"
                " INDEXED BY tool_calls_by_status WHERE thread_key=? GROUP BY 1, 2")


def event_times_at(n: int) -> str:
    return f"SELECT seq, ts FROM events WHERE thread_key=? AND seq IN ({_marks(n)})"


checkpoint_outline = ("SELECT checkpoint_id, thread_key, generation, seq, reason, created_at,"
                      " sha256, capsule_version, workspace, length(CAST(capsule AS BLOB))"
                      " AS capsule_bytes FROM checkpoints WHERE thread_key=? ORDER BY generation")


def inputs_reached(n_kept: int) -> str:
    """(thread, after, *kept states, limit): the first inputs a rewind rolls back."""
    return ("SELECT data FROM inputs INDEXED BY inputs_by_admission WHERE thread_key=?"
            f" AND admitted_seq>? AND state NOT IN ({_marks(n_kept)}) ORDER BY admitted_seq LIMIT ?")


def calls_reached(n_kept: int) -> str:
    return ("SELECT data FROM tool_calls INDEXED BY tool_calls_by_start WHERE thread_key=?"
            f" AND started_seq>? AND status NOT IN ({_marks(n_kept)}) ORDER BY started_seq LIMIT ?")


def inputs_reached_counts(n_kept: int) -> str:
    # the state index covers state and admission: no row is read
    return ("SELECT state, count(*) FROM inputs INDEXED BY inputs_by_state WHERE thread_key=?"
            f" AND admitted_seq>? AND state NOT IN ({_marks(n_kept)}) GROUP BY state")


def calls_reached_counts(n_kept: int) -> str:
    return ("SELECT status, count(*) FROM tool_calls INDEXED BY tool_calls_by_status"
            f" WHERE thread_key=? AND started_seq>? AND status NOT IN ({_marks(n_kept)})"
            " GROUP BY status")


#: (thread, needle, limit): the needle is lowercase ASCII JSON, as the payloads are stored
events_matching = ("SELECT seq, type FROM events WHERE thread_key=? AND instr(lower(data), ?) > 0"
                   " ORDER BY seq DESC LIMIT ?")

# -- the store's own settings, and rewriting what is sealed (store/sealed.py) ----------------
store_meta_get = "SELECT value FROM store_meta WHERE key=?"
store_meta_put = ("INSERT INTO store_meta (key, value) VALUES (?, ?)"
                  " ON CONFLICT (key) DO UPDATE SET value=excluded.value")
store_meta_delete = "DELETE FROM store_meta WHERE key=?"


def select_sealed(table: str, keys: tuple[str, ...], columns, after: bool = False) -> str:
    """``table``'s sealed ``columns`` by key order, a page at a time (``after``: the page
    starts past a key, bound first; then the limit)."""
    order = ", ".join(keys)
    where = f" WHERE ({order}) > ({_marks(len(keys))})" if after else ""
    return (f"SELECT {', '.join([*keys, *(c for c, _ in columns)])} FROM {table}{where}"
            f" ORDER BY {order} LIMIT ?")


def update_sealed(table: str, keys: tuple[str, ...], columns) -> str:
    """(the columns' new values, then the key)"""
    return (f"UPDATE {table} SET {', '.join(f'{c}=?' for c, _ in columns)} WHERE "
            + " AND ".join(f"{k}=?" for k in keys))


#: after every sealed value was rewritten: a new file without the free pages that still held
#: the values as they were, and an empty write-ahead log
after_reseal = ("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)")
