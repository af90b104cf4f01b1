"""Every statement the PostgreSQL store runs, in PostgreSQL's own dialect: the names of
``sqlite_sql.py`` (a test holds the two to the same names).

PostgreSQL plans by its statistics, so no read names an index. A list binds as one array
(``= ANY(%s)``): one statement text, prepared once, whatever the list's length. The JSON in
``data`` columns is read with ``jsonb`` operators spelled as the schema's expression index
spells them (``data::jsonb #>> '{turn_id}'``), so the reads of a turn's calls use it. Writers
on several hosts serialise per thread on the thread row (``FOR UPDATE``).
"""
from __future__ import annotations

#: as in sqlite_sql: a bound no seq or generation reaches
NO_BOUND = (1 << 63) - 1
#: a turn's and a call's row is read as JSON by the server (``::jsonb``, the index on a
#: call's turn), which refuses a NUL (``\u0000``) or a lone surrogate in it: see
#: ``view.row_json``
JSON_STRICT = True


def many(values) -> tuple:
    """The arguments a list of values binds to: one array."""
    return (list(values),)


def _upsert(table: str, columns: tuple[str, ...], keys: tuple[str, ...]) -> str:
    updates = ", ".join(f"{c}=EXCLUDED.{c}" for c in columns if c not in keys)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({','.join(['%s'] * len(columns))})"
            f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}")


# -- threads -------------------------------------------------------------------------------
create_thread = (
    "INSERT INTO threads (thread_key, runtime, session_id, workspace_root, forked_from,"
    " forked_at_seq, name, created_at, updated_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)"
    " ON CONFLICT DO NOTHING")
set_workspace_root = (
    "UPDATE threads SET workspace_root=%s WHERE thread_key=%s AND workspace_root IS NULL")
workspace_root_of = "SELECT workspace_root FROM threads WHERE thread_key=%s"
all_threads = "SELECT * FROM threads ORDER BY created_at, thread_key"
thread_by_key = "SELECT * FROM threads WHERE thread_key=%s"
threads_by_session_id = "SELECT * FROM threads WHERE session_id=%s"
thread_by_session = "SELECT * FROM threads WHERE runtime=%s AND session_id=%s"
thread_keys = "SELECT thread_key FROM threads ORDER BY created_at"
thread_keys_of_workspace = (
    "SELECT thread_key FROM threads WHERE workspace_root=%s ORDER BY created_at")
forks_of = "SELECT thread_key FROM threads WHERE forked_from=%s"
last_seq = "SELECT last_seq FROM threads WHERE thread_key=%s"
#: the read before a write takes the thread's row lock: writers on other hosts wait on it
last_seq_for_write = "SELECT last_seq FROM threads WHERE thread_key=%s FOR UPDATE"
generation_for_write = "SELECT generation FROM threads WHERE thread_key=%s FOR UPDATE"
#: a salvage leaves a gap where an event could not be read
skip_to_seq = "UPDATE threads SET last_seq=%s WHERE thread_key=%s AND last_seq<%s"
advance_thread = "UPDATE threads SET last_seq=%s, updated_at=%s WHERE thread_key=%s"
mark_needs_context = "UPDATE threads SET needs_context=1 WHERE thread_key=%s"
mark_context_delivered = (
    "UPDATE threads SET needs_context=0,"
    " delivered_generation=GREATEST(delivered_generation, %s) WHERE thread_key=%s")
raise_generation = "UPDATE threads SET generation=GREATEST(generation, %s) WHERE thread_key=%s"
thread_roots = "SELECT workspace_root FROM threads WHERE workspace_root IS NOT NULL"
thread_roots_of = thread_roots + " AND thread_key=%s"


def delete_rows_of(table: str) -> str:
    return f'DELETE FROM "{table}" WHERE thread_key=%s'


thread_tables = ("SELECT DISTINCT table_name FROM information_schema.columns"
                 " WHERE column_name='thread_key' AND table_schema=current_schema()")

# -- events --------------------------------------------------------------------------------
insert_event = ("INSERT INTO events (thread_key, seq, type, kind, data, ts, source)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s)")
events_between = ("SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=%s"
                  " AND seq>%s AND seq<=%s ORDER BY seq LIMIT %s")
seqs_of_type = ("SELECT seq FROM events WHERE thread_key=%s AND type=%s AND seq>%s AND seq<=%s"
                " ORDER BY seq")
newest_seqs_of_type = ("SELECT seq FROM events WHERE thread_key=%s AND type=%s AND seq>%s"
                       " AND seq<=%s ORDER BY seq DESC LIMIT %s")


def events_at(n: int) -> str:
    return ("SELECT seq, type, kind, data, ts, source FROM events WHERE thread_key=%s"
            " AND seq=ANY(%s)")


newest_event_with_path = (
    "SELECT data FROM events WHERE thread_key=%s AND type=%s AND (data::jsonb #>> '{path}')=%s"
    " ORDER BY seq DESC LIMIT 1")
event_counts_by_kind = ("SELECT (data::jsonb #>> '{kind}'), COUNT(*) FROM events"
                        " WHERE thread_key=%s AND type=%s GROUP BY 1")


def newest_event_of_turn(n_types: int) -> str:
    return ("SELECT type, data, source FROM events WHERE thread_key=%s AND type=ANY(%s)"
            " AND (data::jsonb #>> '{turn_id}')=%s ORDER BY seq DESC LIMIT 1")


newest_seq_of_type = "SELECT MAX(seq) FROM events WHERE thread_key=%s AND type=%s"
newest_event_seq_ts = "SELECT seq, ts FROM events WHERE thread_key=%s ORDER BY seq DESC LIMIT 1"
event_count = "SELECT count(*) FROM events"
delete_event = "DELETE FROM events WHERE thread_key=%s AND seq=%s"

# -- inputs --------------------------------------------------------------------------------
put_input = _upsert("inputs", ("thread_key", "input_id", "state", "turn_id", "admitted_seq",
                               "data", "data_bytes"), ("thread_key", "input_id"))
input_data = "SELECT data FROM inputs WHERE thread_key=%s AND input_id=%s"
inputs_data_of_turn = "SELECT data FROM inputs WHERE thread_key=%s AND turn_id=%s"
all_inputs = "SELECT data FROM inputs WHERE thread_key=%s ORDER BY admitted_seq"
newest_inputs = ("SELECT data FROM inputs WHERE thread_key=%s ORDER BY admitted_seq DESC"
                 " LIMIT %s")
inputs_after = ("SELECT data FROM inputs WHERE thread_key=%s AND admitted_seq>%s"
                " ORDER BY admitted_seq")
input_count = "SELECT count(*) FROM inputs WHERE thread_key=%s"
input_counts = ("SELECT state, count(*) FROM inputs WHERE thread_key=%s GROUP BY state"
                " ORDER BY state")
input_totals = ("SELECT state, count(*), sum(data_bytes) FROM inputs WHERE thread_key=%s"
                " GROUP BY state ORDER BY state")
any_input_in_state = "SELECT 1 FROM inputs WHERE thread_key=%s AND state=%s LIMIT 1"


def inputs_in_states(states, *, ordered: bool = True) -> str:
    return ("SELECT data FROM inputs WHERE thread_key=%s AND state=ANY(%s)"
            + (" ORDER BY admitted_seq" if ordered else ""))


def newest_inputs_in_states(n_states: int) -> str:
    return ("SELECT data, admitted_seq, data_bytes FROM inputs WHERE thread_key=%s"
            " AND state=ANY(%s) ORDER BY admitted_seq DESC LIMIT %s")


def admitted_seqs(n_ids: int) -> str:
    return "SELECT admitted_seq FROM inputs WHERE thread_key=%s AND input_id=ANY(%s)"


def inputs_totals_in_states(n_states: int) -> str:
    return ("SELECT count(*), sum(data_bytes) FROM inputs WHERE thread_key=%s"
            " AND state=ANY(%s)")


first_input_in_state_below = ("SELECT admitted_seq FROM inputs WHERE thread_key=%s AND state=%s"
                              " AND admitted_seq<%s ORDER BY admitted_seq LIMIT 1")
last_input_in_state_below = ("SELECT admitted_seq FROM inputs WHERE thread_key=%s AND state=%s"
                             " AND admitted_seq<%s ORDER BY admitted_seq DESC LIMIT 1")

# -- turns ---------------------------------------------------------------------------------
put_turn = _upsert("turns", ("thread_key", "turn_id", "status", "data"),
                   ("thread_key", "turn_id"))
turn_data = "SELECT data FROM turns WHERE thread_key=%s AND turn_id=%s"
all_turns = "SELECT data FROM turns WHERE thread_key=%s"
running_turns = "SELECT data FROM turns WHERE thread_key=%s AND status='running'"
running_turn_ids = "SELECT turn_id FROM turns WHERE thread_key=%s AND status='running'"
newest_running_turn = ("SELECT turn_id FROM turns WHERE thread_key=%s AND status='running'"
                       " ORDER BY (data::jsonb #> '{started_seq}') DESC LIMIT 1")
turn_count = "SELECT count(*) FROM turns WHERE thread_key=%s"
any_running_turn = "SELECT 1 FROM turns WHERE thread_key=%s AND status='running' LIMIT 1"

# -- tool calls ----------------------------------------------------------------------------
put_call = _upsert("tool_calls", ("thread_key", "call_id", "status", "started_seq", "data",
                                  "data_bytes"), ("thread_key", "call_id"))
call_data = "SELECT data FROM tool_calls WHERE thread_key=%s AND call_id=%s"
all_calls = "SELECT data FROM tool_calls WHERE thread_key=%s ORDER BY started_seq"
calls_after = ("SELECT data FROM tool_calls WHERE thread_key=%s AND started_seq>%s"
               " ORDER BY started_seq")
any_call_in_flight = ("SELECT 1 FROM tool_calls WHERE thread_key=%s AND status='in_flight'"
                      " LIMIT 1")
calls_of_turn = ("SELECT call_id, status, data FROM tool_calls WHERE thread_key=%s"
                 " AND (data::jsonb #>> '{turn_id}')=%s ORDER BY started_seq")
ok_calls_without_exit_code = (
    "SELECT call_id FROM tool_calls WHERE thread_key=%s AND status='ok'"
    " AND (data::jsonb #>> '{turn_id}')=%s"
    " AND (data::jsonb #>> '{outcome,exit_code}') IS NULL")


def calls_in_statuses(statuses) -> str:
    return ("SELECT data FROM tool_calls WHERE thread_key=%s AND status=ANY(%s)"
            " ORDER BY started_seq")


def newest_calls(n_statuses: int) -> str:
    """The newest ``limit`` calls in the statuses: args as sqlite_sql's (thread, status, limit)
    per status, then limit; one range of the status index per status, as there."""
    each = ("SELECT data, started_seq FROM (SELECT data, started_seq FROM tool_calls"
            " WHERE thread_key=%s AND status=%s ORDER BY started_seq DESC LIMIT %s) AS s{}")
    return (" UNION ALL ".join(each.format(n) for n in range(n_statuses))
            + " ORDER BY started_seq DESC LIMIT %s")


def calls_of_turns(n_turns: int, n_statuses: int) -> str:
    return ("SELECT data FROM tool_calls WHERE thread_key=%s"
            " AND (data::jsonb #>> '{turn_id}')=ANY(%s) AND status=ANY(%s) ORDER BY started_seq")


def calls_totals_in_statuses(n_statuses: int) -> str:
    return ("SELECT count(*), sum(data_bytes) FROM tool_calls WHERE thread_key=%s"
            " AND status=ANY(%s) AND started_seq<=%s")


def calls_by_id(n_ids: int) -> str:
    return ("SELECT status, started_seq, data_bytes FROM tool_calls WHERE thread_key=%s"
            " AND call_id=ANY(%s)")


def call_edge_in_status(n_excluded: int, *, last: bool) -> str:
    excluded = " AND call_id<>ALL(%s)" if n_excluded else ""
    return (f"SELECT started_seq FROM tool_calls WHERE thread_key=%s AND status=%s"
            f" AND started_seq<=%s{excluded} ORDER BY started_seq{' DESC' if last else ''}"
            " LIMIT 1")


# -- claims --------------------------------------------------------------------------------
insert_claim = "INSERT INTO claims (thread_key, seq, turn_id, text) VALUES (%s,%s,%s,%s)"
all_claims = "SELECT seq, turn_id, text FROM claims WHERE thread_key=%s ORDER BY seq"


def in_ranges(n_ranges: int | None) -> str:
    if n_ranges is None:
        return " AND seq<=%s"
    return (" AND seq<=%s AND ("
            + " OR ".join("seq BETWEEN %s AND %s" for _ in range(n_ranges)) + ")")


def newest_claims(n_ranges: int | None) -> str:
    return (f"SELECT seq, turn_id, text FROM claims WHERE thread_key=%s{in_ranges(n_ranges)}"
            " ORDER BY seq DESC LIMIT %s")


def claim_totals() -> str:
    return ("SELECT count(*), sum(octet_length(text)), min(seq), max(seq) FROM claims"
            " WHERE thread_key=%s AND seq<=%s AND seq>=%s AND seq<=%s")


def event_totals(n_types: int) -> str:
    types = " AND type=ANY(%s)" if n_types else ""
    return ("SELECT count(*), sum(octet_length(data)), min(seq), max(seq) FROM events"
            f" WHERE thread_key=%s{types} AND seq<=%s AND seq>=%s AND seq<=%s")


# -- per-thread facts ----------------------------------------------------------------------
put_meta = _upsert("thread_meta", ("thread_key", "key", "value", "seq"), ("thread_key", "key"))
all_meta = "SELECT key, value, seq FROM thread_meta WHERE thread_key=%s"

# -- checkpoints ---------------------------------------------------------------------------
CHECKPOINT_COLUMNS = ("checkpoint_id", "thread_key", "generation", "seq", "reason", "created_at",
                      "capsule", "sha256", "capsule_version", "rendered", "workspace",
                      "file_path")
insert_checkpoint = (f"INSERT INTO checkpoints ({', '.join(CHECKPOINT_COLUMNS)}) VALUES"
                     f" ({','.join(['%s'] * len(CHECKPOINT_COLUMNS))})")
checkpoints_oldest_first = ("SELECT * FROM checkpoints WHERE thread_key=%s AND generation<=%s"
                            " ORDER BY generation LIMIT %s")
checkpoints_newest_first = ("SELECT * FROM checkpoints WHERE thread_key=%s AND generation<=%s"
                            " ORDER BY generation DESC LIMIT %s")
checkpoints_by_id = "SELECT * FROM checkpoints WHERE checkpoint_id=%s OR checkpoint_id LIKE %s"
newest_checkpoint_summary = (
    "SELECT checkpoint_id, generation, created_at, seq, workspace FROM checkpoints"
    " WHERE thread_key=%s ORDER BY generation DESC LIMIT 1")
newest_snapshot_before = (
    "SELECT checkpoint_id, workspace FROM checkpoints WHERE thread_key=%s AND seq<%s AND"
    " workspace IS NOT NULL ORDER BY generation DESC LIMIT 1")
checkpoint_workspaces = "SELECT workspace FROM checkpoints WHERE workspace IS NOT NULL"
checkpoint_workspaces_of = checkpoint_workspaces + " AND thread_key=%s"
checkpoint_sizes = ("SELECT thread_key, generation, created_at, octet_length(capsule),"
                    " octet_length(rendered) FROM checkpoints")
snapshot_workspaces = ("SELECT checkpoint_id, generation, workspace FROM checkpoints"
                       " WHERE workspace IS NOT NULL ORDER BY thread_key, generation")
forget_checkpoint_copy = ("UPDATE checkpoints SET file_path=NULL WHERE thread_key=%s"
                          " AND generation=%s")
drop_checkpoint_rendering = ("UPDATE checkpoints SET rendered='' WHERE thread_key=%s"
                             " AND generation=%s")
drop_checkpoint_capsule = ("UPDATE checkpoints SET capsule=%s WHERE thread_key=%s"
                           " AND generation=%s")

# -- live sessions -------------------------------------------------------------------------
heartbeat = (
    "INSERT INTO sessions (thread_key, pid, proc_start, host, started_at, heartbeat)"
    " VALUES (%s,%s,%s,%s,%s,%s) ON CONFLICT (thread_key, host, pid) DO UPDATE SET"
    " heartbeat=EXCLUDED.heartbeat, proc_start=EXCLUDED.proc_start, ended_at=NULL")
end_sessions = "UPDATE sessions SET ended_at=%s WHERE thread_key=%s AND ended_at IS NULL"
end_session_of = ("UPDATE sessions SET ended_at=%s WHERE thread_key=%s AND pid=%s AND host=%s"
                  " AND ended_at IS NULL")
all_sessions = "SELECT * FROM sessions ORDER BY heartbeat"
sessions_of = "SELECT * FROM sessions WHERE thread_key=%s ORDER BY heartbeat"

# -- the derived rows' earlier versions (a rewind restores them) ---------------------------
#: the row as it was before the event ``seq`` changed it (data NULL: it did not exist)
put_row_version = ("INSERT INTO row_versions (thread_key, seq, n, kind, row_key, data)"
                   " VALUES (%s,%s,%s,%s,%s,%s)")
#: every earlier version written after a seq, oldest first: the first of each row is the row
#: as it was at that seq
row_versions_after = ("SELECT kind, row_key, data FROM row_versions WHERE thread_key=%s"
                      " AND seq>%s ORDER BY seq, n")
undo_from = "SELECT seq FROM undo_from WHERE thread_key=%s"
delete_row_versions = "DELETE FROM row_versions WHERE thread_key=%s"
forget_undo_from = "DELETE FROM undo_from WHERE thread_key=%s"
delete_input = "DELETE FROM inputs WHERE thread_key=%s AND input_id=%s"
delete_turn = "DELETE FROM turns WHERE thread_key=%s AND turn_id=%s"
delete_call = "DELETE FROM tool_calls WHERE thread_key=%s AND call_id=%s"
all_input_rows = "SELECT input_id, data FROM inputs WHERE thread_key=%s"
all_turn_rows = "SELECT turn_id, data FROM turns WHERE thread_key=%s"
all_call_rows = "SELECT call_id, data FROM tool_calls WHERE thread_key=%s"

# -- a lifecycle rebuild -------------------------------------------------------------------
reset_lifecycle = ("DELETE FROM inputs WHERE thread_key=%s",
                   "DELETE FROM turns WHERE thread_key=%s",
                   "DELETE FROM tool_calls WHERE thread_key=%s")

# -- the spool's drain ---------------------------------------------------------------------
create_spool_origin = "CREATE TABLE IF NOT EXISTS spool_origin (origin TEXT NOT NULL)"
spool_origin = "SELECT origin FROM spool_origin"
spool_origin_count = "SELECT count(*) FROM spool_origin"
set_spool_origin = "INSERT INTO spool_origin VALUES (%s)"
#: a hook run's mark of each spooled fact (``log_store.WriteStamps``)
create_spool_stamps = ("CREATE TABLE IF NOT EXISTS spool_stamps (thread_key TEXT NOT NULL,"
                       " seq BIGINT NOT NULL, origin TEXT NOT NULL, mark BIGINT NOT NULL,"
                       " PRIMARY KEY (thread_key, seq))")
keep_spool_stamp = ("INSERT INTO spool_stamps (thread_key, seq, origin, mark)"
                    " VALUES (%s,%s,%s,%s)")
spool_stamp = "SELECT origin, mark FROM spool_stamps WHERE thread_key=%s AND seq=%s"
mark_drained = ("INSERT INTO spool_drained (origin, thread_key, seq) VALUES (%s,%s,%s)"
                " ON CONFLICT DO NOTHING RETURNING seq")

# -- transactions --------------------------------------------------------------------------
begin = "BEGIN"  # the row lock (FOR UPDATE) serialises a thread's writers
commit = "COMMIT"
rollback = "ROLLBACK"
savepoint = "SAVEPOINT fold"
rollback_to_savepoint = "ROLLBACK TO SAVEPOINT fold"
release_savepoint = "RELEASE SAVEPOINT fold"

# -- the timeline page (timeline_reads) ------------------------------------------------------
turn_outline = ("SELECT turn_id, status, (data::jsonb #>> '{started_seq}')::bigint,"
                " (data::jsonb #>> '{ended_seq}')::bigint FROM turns WHERE thread_key=%s")
inputs_admitted_between = ("SELECT data FROM inputs WHERE thread_key=%s AND admitted_seq>=%s"
                           " AND admitted_seq<=%s ORDER BY admitted_seq")
calls_started_between = ("SELECT data FROM tool_calls WHERE thread_key=%s AND started_seq>=%s"
                         " AND started_seq<=%s ORDER BY started_seq")
def input_versions_at(n: int) -> str:
    return ("SELECT seq, row_key, data FROM row_versions WHERE thread_key=%s"
            " AND seq=ANY(%s) AND kind='input'")


def event_density(n_types: int) -> str:
    return ("SELECT (seq - 1) / %s::bigint, type, count(*) FROM events WHERE thread_key=%s"
            " AND type=ANY(%s) GROUP BY 1, 2")


call_density = ("SELECT (started_seq - 1) / %s::bigint, status, count(*) FROM tool_calls"
                " WHERE thread_key=%s GROUP BY 1, 2")


def event_times_at(n: int) -> str:
    return "SELECT seq, ts FROM events WHERE thread_key=%s AND seq=ANY(%s)"


checkpoint_outline = ("SELECT checkpoint_id, thread_key, generation, seq, reason, created_at,"
                      " sha256, capsule_version, workspace, octet_length(capsule)"
                      " AS capsule_bytes FROM checkpoints WHERE thread_key=%s ORDER BY generation")


def inputs_reached(n_kept: int) -> str:
    """(thread, after, kept states, limit): the first inputs a rewind rolls back."""
    return ("SELECT data FROM inputs WHERE thread_key=%s AND admitted_seq>%s"
            " AND NOT (state=ANY(%s)) ORDER BY admitted_seq LIMIT %s")


def calls_reached(n_kept: int) -> str:
    return ("SELECT data FROM tool_calls WHERE thread_key=%s AND started_seq>%s"
            " AND NOT (status=ANY(%s)) ORDER BY started_seq LIMIT %s")


def inputs_reached_counts(n_kept: int) -> str:
    return ("SELECT state, count(*) FROM inputs WHERE thread_key=%s AND admitted_seq>%s"
            " AND NOT (state=ANY(%s)) GROUP BY state")


def calls_reached_counts(n_kept: int) -> str:
    return ("SELECT status, count(*) FROM tool_calls WHERE thread_key=%s AND started_seq>%s"
            " AND NOT (status=ANY(%s)) GROUP BY status")


#: (thread, needle, limit): the needle is lowercase ASCII JSON, as the payloads are stored
events_matching = ("SELECT seq, type FROM events WHERE thread_key=%s"
                   " AND strpos(lower(data), %s) > 0 ORDER BY seq DESC LIMIT %s")

# -- the store's own settings, and rewriting what is sealed (store/sealed.py) ----------------
store_meta_get = "SELECT value FROM store_meta WHERE key=%s"
store_meta_put = _upsert("store_meta", ("key", "value"), ("key",))
store_meta_delete = "DELETE FROM store_meta WHERE key=%s"


def select_sealed(table: str, keys: tuple[str, ...], columns, after: bool = False) -> str:
    """As sqlite_sql's."""
    order = ", ".join(keys)
    where = f" WHERE ({order}) > ({', '.join(['%s'] * len(keys))})" if after else ""
    return (f"SELECT {', '.join([*keys, *(c for c, _ in columns)])} FROM {table}{where}"
            f" ORDER BY {order} LIMIT %s")


def update_sealed(table: str, keys: tuple[str, ...], columns) -> str:
    return (f"UPDATE {table} SET {', '.join(f'{c}=%s' for c, _ in columns)} WHERE "
            + " AND ".join(f"{k}=%s" for k in keys))


#: after every sealed value was rewritten: each table rewritten without the row versions that
#: still held the values as they were (the server's own write-ahead log keeps them until it
#: recycles its segments: docs/encryption.md)
after_reseal = tuple(f"VACUUM FULL {t}" for t in (
    "events", "inputs", "turns", "tool_calls", "row_versions", "thread_meta", "claims",
    "checkpoints"))
