"""The SQLite store: durability settings, versioning, exactly-once, derived tables."""
from __future__ import annotations

import os
import sqlite3
import stat
import sys

import pytest

from continuation.store import IllegalFact, SqliteStore, StoreError, StoreVersionError, UnknownThread
from continuation.store.schema import SCHEMA_VERSION


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(tmp_path / "home" / "store.sqlite3")
    yield s
    s.close()


def test_store_settings_and_private_files(store):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.schema_version == SCHEMA_VERSION
    if sys.platform != "win32":
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700


def test_newer_schema_is_a_clear_error(tmp_path):
    path = tmp_path / "s.sqlite3"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreVersionError, match="newer"):
        SqliteStore(path)


def test_garbage_file_is_a_store_error(tmp_path):
    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="doctor"):
        SqliteStore(path)


def test_older_schema_is_migrated_forward(tmp_path, monkeypatch):
    from continuation.store import schema

    path = tmp_path / "s.sqlite3"
    SqliteStore(path).close()  # a version-1 database
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + [
        "CREATE TABLE future_things (x INTEGER)"])
    monkeypatch.setattr("continuation.store.sqlite.MIGRATIONS", schema.MIGRATIONS)
    monkeypatch.setattr("continuation.store.sqlite.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    s = SqliteStore(path)
    assert s.schema_version == SCHEMA_VERSION + 1
    s.conn.execute("SELECT * FROM future_things")
    s.close()


def test_duplicates_and_illegal_facts_are_not_written(store):
    key = store.ensure_thread("claude", "s1", workspace_root="/w")
    assert store.append(key, "input_admitted", {"input_id": "p1", "text": "x", "turn_id": "p1"},
                        source="t").seq == 1
    dup = store.append(key, "input_admitted", {"input_id": "p1", "text": "x", "turn_id": "p1"},
                       source="t")
    assert dup.seq is None and dup.outcome == "duplicate"
    with pytest.raises(IllegalFact):
        store.append(key, "reconciled", {"call_id": "nope", "decision": "applied"}, source="t")
    assert [e["seq"] for e in store.events(key)] == [1]
    assert store.thread(key)["last_seq"] == 1


def test_threads_are_keyed_by_runtime_and_session(store):
    a = store.ensure_thread("codex", "same", workspace_root="/repo")
    b = store.ensure_thread("claude", "same", workspace_root="/repo")
    assert a != b
    store.append(a, "input_admitted", {"input_id": "x", "text": "t", "turn_id": "1"}, source="t")
    assert store.inputs(b) == []
    assert store.ensure_thread("codex", "same") == a
    with pytest.raises(UnknownThread):
        store.thread("nothing-like-this")
    with pytest.raises(UnknownThread, match="matches 2"):
        store.thread("sam")  # a prefix of both session ids
    assert store.thread("codex")["thread_key"] == a


def test_thread_keys_are_safe_for_refs_and_files(store):
    key = store.ensure_thread("codex", "../../etc/passwd weird:name")
    assert "/" not in key and " " not in key and ":" not in key and ".." not in key


def test_rebuild_rederives_the_same_tables(store):
    key = store.ensure_thread("codex", "s")
    store.append(key, "input_admitted", {"input_id": "a", "text": "x", "turn_id": "t"}, source="t")
    store.append(key, "tool_started", {"call_id": "c", "turn_id": "t"}, source="t")
    store.append(key, "turn_completed", {"turn_id": "t"}, source="t")
    before = store.derived_state(key).snapshot()
    store.conn.execute("DELETE FROM inputs")
    store.rebuild(key)
    assert store.derived_state(key).snapshot() == before
    assert before["inputs"]["a"]["state"] == "reconciling"


def test_claims_are_stored_apart_from_facts(store):
    key = store.ensure_thread("codex", "s")
    store.append(key, "input_admitted", {"input_id": "a", "text": "x", "turn_id": "t"}, source="t")
    store.append(key, "assistant_claim", {"text": "all done", "turn_id": "t"}, source="t")
    assert store.claims(key) == [{"seq": 2, "turn_id": "t", "text": "all done"}]
    kinds = {e["type"]: e["kind"] for e in store.events(key)}
    assert kinds == {"input_admitted": "input", "assistant_claim": "claim"}
    assert store.inputs(key)[0].state == "pending"


def test_binary_and_surrogate_text_round_trips(store):
    key = store.ensure_thread("codex", "s")
    text = "nul\x00 emoji 😀 lone \udcff end"
    store.append(key, "input_admitted", {"input_id": "a", "text": text, "turn_id": "t"}, source="t")
    assert store.events(key)[0]["data"]["text"] == text
    assert store.inputs(key)[0].text == text


def test_a_version_1_store_gains_the_admission_index_and_newest_inputs_use_it(tmp_path):
    """Migration 2: a store written before it opens with its events intact, and the newest
    inputs (``status``) are read through ``inputs_by_admission``, not by sorting every input."""
    from continuation.store import schema

    path = tmp_path / "s.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(schema.MIGRATIONS[0])
    conn.execute("PRAGMA user_version=1")
    conn.close()
    s = SqliteStore(path)
    key = s.ensure_thread("codex", "old")
    for n in range(30):
        s.append(key, "input_admitted", {"input_id": f"i{n}", "text": f"t{n}", "turn_id": "t"},
                 source="t")
    s.close()
    s = SqliteStore(path)
    assert s.schema_version == SCHEMA_VERSION >= 2
    plan = " ".join(str(r) for r in s.conn.execute(
        "EXPLAIN QUERY PLAN SELECT data FROM inputs WHERE thread_key=? ORDER BY admitted_seq DESC"
        " LIMIT 20", (key,)))
    assert "inputs_by_admission" in plan and "TEMP B-TREE" not in plan
    assert [r.input_id for r in s.newest_inputs(key, 3)] == ["i27", "i28", "i29"]
    s.close()


def test_events_of_types_reads_an_index_range_not_the_whole_thread(store):
    """``events_of_types`` (every boundary's fact, cursor and rewind reads) costs the same on a
    long thread as on a short one (SQLite's planner walked every event of the thread
    for a type that never occurs); the answer is the events of those types, in seq order."""
    key = store.ensure_thread("claude", "long")

    def turns(start, n):
        batch = []
        for k in range(start, start + n):
            batch += [("input_admitted", {"input_id": f"i{k}", "text": "x", "turn_id": f"t{k}"}),
                      ("assistant_claim", {"text": "y", "turn_id": f"t{k}"}),
                      ("turn_completed", {"turn_id": f"t{k}"})]
        store.append_many(key, batch, source="t")

    def steps(*args, **kw):
        ticks = [0]
        store.conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 50)
        try:
            found = store.events_of_types(key, *args, **kw)
        finally:
            store.conn.set_progress_handler(None, 50)
        return ticks[0], found

    queries = [((["rolled_back"],), {"newest": 1}), ((["rolled_back", "boundary"],), {}),
               ((["turn_completed", "assistant_claim"],), {"newest": 3}),
               ((["turn_completed"],), {"newest": 2, "upto": 30})]
    turns(0, 100)
    short = [steps(*a, **kw)[0] for a, kw in queries]
    turns(100, 3000)
    for (a, kw), before in zip(queries, short):
        took, found = steps(*a, **kw)
        assert took <= before + 5, (a, kw, before, took)
    _, newest = steps(["turn_completed", "assistant_claim"], newest=3)
    kinds = [e for e in store.events(key) if e["type"] in ("turn_completed", "assistant_claim")]
    assert newest == kinds[-3:] and [e["type"] for e in newest] == [
        "turn_completed", "assistant_claim", "turn_completed"]
    everything = [e for e in store.events(key) if e["type"] in ("turn_completed",)]
    assert store.events_of_types(key, ["turn_completed"], after=10, upto=60) == [
        e for e in everything if 10 < e["seq"] <= 60]
    assert store.events_of_types(key, ["turn_completed"], newest=2, upto=30) == [
        e for e in everything if e["seq"] <= 30][-2:]


def test_open_inputs_and_unsettled_calls_are_read_by_their_state_index(store):
    """Every boundary and reconciliation reads the thread's open inputs and unsettled calls; on
    a long thread those are a handful among thousands of settled rows. SQLite's planner, which
    takes every state as equally common, walked all of them in key order (18 ms at 20,000
    inputs); naming the state index keeps the work the same
    on a long thread as on a short one, and the answer is the same."""
    from continuation.boundary.capsule_source import _bounded_inputs

    key = store.ensure_thread("claude", "long")

    def turns(start, n):
        batch = []
        for k in range(start, start + n):
            batch += [("input_admitted", {"input_id": f"i{k}", "text": "x", "turn_id": f"t{k}"}),
                      ("tool_started", {"call_id": f"c{k}", "tool": "Bash", "turn_id": f"t{k}",
                                        "args": {"command": "true"}}),
                      ("tool_finished", {"call_id": f"c{k}", "status": "ok", "turn_id": f"t{k}"}),
                      ("turn_completed", {"turn_id": f"t{k}"})]
        store.append_many(key, batch, source="t")

    def open_reads():
        return (store.inputs(key, ("pending", "interrupted", "reconciling")),
                store.tool_calls(key, ("in_flight", "unknown")))

    def steps(read):
        ticks = [0]
        store.conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 50)
        try:
            found = read()
        finally:
            store.conn.set_progress_handler(None, 50)
        return ticks[0], found

    def tail():  # one open input with a call in flight, after the settled history
        store.append_many(key, [
            ("input_admitted", {"input_id": "open", "text": "go on", "turn_id": "tz"}),
            ("tool_started", {"call_id": "cz", "tool": "Bash", "turn_id": "tz",
                              "args": {"command": "make"}})], source="t")

    turns(0, 50)
    short = steps(open_reads)[0]
    turns(50, 3000)
    tail()
    took, (inputs, calls) = steps(open_reads)
    assert took <= short + 5, (short, took)
    assert [r.input_id for r in inputs] == ["open"] and [c.call_id for c in calls] == ["cz"]
    # a boundary's input read: the open one and the newest historical ones, the rest counted
    bounded, older, counts = _bounded_inputs(store, key)
    assert bounded[-1].input_id == "open" and len(bounded) == 201
    assert older and older[0]["items"] == 3050 - 200
    assert counts == store.input_counts(key) == {"handled": 3050, "pending": 1}


def test_the_newest_calls_are_read_by_start_not_by_sorting_the_thread(store):
    """Migration 3: a boundary's list of the newest finished calls and the calls after a
    position cost the same on a long thread as on a short one, and are the right calls."""

    key = store.ensure_thread("claude", "calls")

    def calls(start, n):
        batch = []
        for k in range(start, start + n):
            batch += [("tool_started", {"call_id": f"c{k}", "tool": "Bash", "turn_id": "t",
                                        "args": {"command": f"echo {k}"}}),
                      ("tool_finished", {"call_id": f"c{k}", "status": "ok", "turn_id": "t"})]
        store.append_many(key, batch, source="t")

    def steps(read):
        ticks = [0]
        store.conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 50)
        try:
            found = read(store.state_view(key))
        finally:
            store.conn.set_progress_handler(None, 50)
        return ticks[0], found

    def newest(view):
        return view.newest_calls(5, ("ok", "error"))

    calls(0, 50)
    short = steps(newest)[0]
    calls(50, 3000)
    took, found = steps(newest)
    assert took <= short + 5, (short, took)
    assert [c.call_id for c in found] == [f"c{k}" for k in range(3045, 3050)]
    last_seq = store.thread(key)["last_seq"]
    took_after, after = steps(lambda view: view.calls_after(last_seq - 4))
    assert took_after <= short + 5 and [c.call_id for c in after] == ["c3048", "c3049"]


def test_a_version_3_store_gets_its_row_sizes_and_the_boundary_sums_read_only_the_index(
        tmp_path, monkeypatch):
    """Migration 4 fills ``data_bytes`` of the rows already there; the "(not gathered)" sums
    of a boundary (older handled inputs, older finished calls) are then answered from the state
    index alone, not by reading every row of a long thread."""
    from continuation.boundary.capsule_source import _HISTORICAL
    from continuation.store import schema

    path = tmp_path / "s.sqlite3"
    monkeypatch.setattr("continuation.store.sqlite.SCHEMA_VERSION", 3)
    old = SqliteStore(path)
    assert "data_bytes" not in {r[1] for r in old.conn.execute("PRAGMA table_info(inputs)")}
    old.conn.execute("INSERT INTO inputs (thread_key, input_id, state, turn_id, admitted_seq, data)"
                     " VALUES ('k', 'i1', 'handled', 't', 1, ?)", ('{"text":"caf\\u00e9"}',))
    old.conn.execute("INSERT INTO tool_calls (thread_key, call_id, status, started_seq, data)"
                     " VALUES ('k', 'c1', 'ok', 2, ?)", ('{"args":{"cmd":"ls -la"}}',))
    old.close()
    monkeypatch.setattr("continuation.store.sqlite.SCHEMA_VERSION", schema.SCHEMA_VERSION)
    s = SqliteStore(path)
    assert s.schema_version == schema.SCHEMA_VERSION >= 4
    assert s.conn.execute("SELECT data_bytes FROM inputs").fetchone()[0] == len('{"text":"caf\\u00e9"}')
    assert s.conn.execute("SELECT data_bytes FROM tool_calls").fetchone()[0] == len('{"args":{"cmd":"ls -la"}}')
    marks = ",".join("?" * len(_HISTORICAL))
    plans = [" ".join(r[-1] for r in s.conn.execute("EXPLAIN QUERY PLAN " + sql, args))
             for sql, args in (
                 (f"SELECT count(*), sum(data_bytes), min(admitted_seq) FROM inputs WHERE"
                  f" thread_key=? AND state IN ({marks}) AND admitted_seq<?", ("k", *_HISTORICAL, 9)),
                 ("SELECT count(*), sum(data_bytes), min(started_seq) FROM tool_calls WHERE"
                  " thread_key=? AND status IN (?,?,?) AND call_id NOT IN (?)",
                  ("k", "ok", "error", "reconciled", "c9")))]
    assert all("COVERING INDEX" in plan for plan in plans), plans
    s.close()


def test_migration_5_reads_the_calls_of_given_turns_through_a_turn_index(tmp_path, monkeypatch):
    """A boundary with an open input reads its turn's calls (and a claim's turn's): through
    an index on the call's turn since schema 5, built for the calls already stored, not by
    reading every finished call of the thread; the same calls either way."""
    from continuation.store import schema

    path = tmp_path / "s.sqlite3"
    monkeypatch.setattr("continuation.store.sqlite.SCHEMA_VERSION", 4)
    old = SqliteStore(path)
    rows = [("k", f"c{i}", "ok" if i % 3 else "error", i,
             f'{{"call_id":"c{i}","turn_id":"t{i % 7}","status":"ok","started_seq":{i}}}')
            for i in range(1, 200)]
    old.conn.executemany("INSERT INTO tool_calls (thread_key, call_id, status, started_seq, data)"
                         " VALUES (?, ?, ?, ?, ?)", rows)
    old.close()
    monkeypatch.setattr("continuation.store.sqlite.SCHEMA_VERSION", schema.SCHEMA_VERSION)
    s = SqliteStore(path)
    assert s.schema_version == schema.SCHEMA_VERSION >= 5
    found = [c.call_id for c in s.state_view("k").calls_of_turns(["t3", "t5"], ["ok"])]
    expected = [f"c{i}" for i in range(1, 200) if i % 7 in (3, 5) and i % 3]
    assert found == expected
    plan = " ".join(r[-1] for r in s.conn.execute(
        "EXPLAIN QUERY PLAN SELECT data FROM tool_calls INDEXED BY tool_calls_by_turn WHERE"
        " thread_key=? AND json_extract(data, '$.turn_id') IN (?, ?) AND status IN (?)",
        ("k", "t3", "t5", "ok")))
    assert "USING INDEX tool_calls_by_turn" in plan, plan
    s.close()


def test_the_newest_finished_calls_are_read_by_status_past_a_rewound_branch(home):
    """A boundary reads the newest finished calls; after a rewind far back the newest calls
    are the branch's, all ``rolled_back``: read through the status index, not by walking every
    newer call. The same calls as sorting all of them."""
    from continuation.boundary import crossing as boundary
    from continuation.boundary.capsule_source import FINISHED
    from continuation.session.engine import Engine
    from continuation.rewind.operation import rewind

    def turns(first: int, last: int):
        for i in range(first, last):
            yield from [("input_admitted", {"input_id": f"in{i}", "turn_id": f"t{i}", "text": f"r{i}"}),
                        ("tool_started", {"call_id": f"c{i}", "tool": "Bash", "turn_id": f"t{i}",
                                          "args": {"command": f"run {i}"}}),
                        ("tool_finished", {"call_id": f"c{i}", "turn_id": f"t{i}",
                                           "status": "error" if i % 7 == 0 else "ok"}),
                        ("turn_completed", {"turn_id": f"t{i}"})]

    with Engine(home) as e:
        t = e.thread("claude", "far")
        e.store.append_many(t.key, list(turns(0, 40)), source="test")
        cp = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        e.store.append_many(t.key, list(turns(40, 300)), source="test")
        rewind(e, cp.checkpoint_id, "conversation")
        view = e.store.state_view(t.key)
        every = [c for c in view.all_calls() if c.status in FINISHED]
        assert len(every) == 40 and len(view.all_calls()) == 300  # the rest rolled back
        for limit in (1, 5, 39, 40, 100):
            assert ([c.call_id for c in view.newest_calls(limit, FINISHED)]
                    == [c.call_id for c in every][-limit:])
        assert view.newest_calls(5, ()) == []
        traced: list[str] = []
        e.store.conn.set_trace_callback(traced.append)
        view.newest_calls(5, FINISHED)
        e.store.conn.set_trace_callback(None)
        sql = traced[-1]  # as run, its values in place
        plan = " ".join(r[-1] for r in e.store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert plan.count("USING INDEX tool_calls_by_status") == len(FINISHED), plan


def _plans_on_tool_calls(conn, statements: list[str]) -> list[str]:
    """The query plans of the traced statements that read tool_calls."""
    plans = []
    for sql in statements:
        if "tool_calls" in sql and sql.lstrip().upper().startswith("SELECT"):
            plans.append(" ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)))
    return plans


def test_a_turns_calls_are_read_through_the_turn_index_by_codex_and_gemini_hooks(home):
    """Codex's Stop and PreCompact (calls finished without an exit code) and Gemini's
    BeforeTool / AfterTool (every tool call: its call number, its pairing) read one turn's
    calls: through the turn index, not every call of the thread (~80 ms at 20,000 calls)."""
    from continuation.session.engine import Engine
    from continuation.hooks import gemini
    from continuation.session.recording import Recorder

    def turns(n: int):
        for i in range(n):
            yield from [("input_admitted", {"input_id": f"in{i}", "turn_id": f"t{i}", "text": f"r{i}"}),
                        ("tool_started", {"call_id": f"c{i}", "tool": "Bash", "turn_id": f"t{i}",
                                          "args": {"command": f"run {i}"}}),
                        ("tool_finished", {"call_id": f"c{i}", "turn_id": f"t{i}", "status": "ok"}),
                        ("turn_completed", {"turn_id": f"t{i}"})]

    with Engine(home) as e:
        codex = e.thread("codex", "long")
        running = [("input_admitted", {"input_id": "open", "turn_id": "now", "text": "go"}),
                   ("tool_started", {"call_id": "n1", "tool": "Bash", "turn_id": "now",
                                     "args": {"command": "ls"}}),
                   ("tool_finished", {"call_id": "n1", "turn_id": "now", "status": "ok"})]
        e.store.append_many(codex.key, [*turns(200), *running], source="test")
        traced: list[str] = []
        e.store.conn.set_trace_callback(traced.append)
        Recorder(codex, source="test").settle_open_calls(["now"], lambda wanted: {},
                                                         missing_exit_codes=True)
        gem = e.thread("gemini", "long")
        prompt = ("input_admitted", {"input_id": "p", "turn_id": "prompt-201", "text": "go"})
        e.store.append_many(gem.key, [*turns(200), prompt], source="test")
        before = {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                  "tool_input": {"command": "ls"}}
        assert gemini.translate(before, Recorder(gem, source="test"))["call_id"] == "prompt-201:call-1"
        e.store.conn.set_trace_callback(None)
        plans = _plans_on_tool_calls(e.store.conn, traced)
        assert len([p for p in plans if "tool_calls_by_turn" in p]) == 2, plans
        assert not [p for p in plans if "SCAN tool_calls" in p or "PRIMARY KEY (thread_key=?)" in p], plans


def test_append_many_refreshes_the_live_session_marker_once_with_its_events(store):
    key = store.ensure_thread("codex", "batch")
    marker = {"pid": 4242, "proc_start": "9", "host": "h"}
    store.append_many(key, [("input_admitted", {"input_id": "i1", "text": "go", "turn_id": "t"})],
                      source="test")
    assert store.sessions(key) == []  # no marker given: none written
    store.append_many(key, [("tool_started", {"call_id": f"c{i}", "tool": "Bash", "args": {},
                                              "turn_id": "t"}) for i in range(3)],
                      source="test", session=marker, ts=1000.0)
    [row] = store.sessions(key)
    assert (row["pid"], row["heartbeat"]) == (4242, 1000.0)
    assert store.thread(key)["last_seq"] == 4
