"""The store contract, run against every backend (SQLite always; PostgreSQL when a throwaway
cluster can be started). A backend is conformant when all of these pass: they define
exactly-once admission, contiguous per-thread ordering, concurrent writers (several
processes), checkpoints and markers, and the recovery reads."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from continuation.store.view import row_json
from continuation.store import (
    GenerationTaken,
    IllegalFact,
    Store,
    UnknownThread,
    backend_name,
    open_store,
)
from statemachine import events as ev


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, home, monkeypatch):
    """(url, state home) of a fresh store of the parametrised backend; CONTINUATION_STORE set
    so that subprocesses and the engine pick the same one."""
    if request.param == "sqlite":
        url = "sqlite"
    else:
        pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")
        url = request.getfixturevalue("pg_url")
    monkeypatch.setenv("CONTINUATION_STORE", url)
    return url, str(home)


@pytest.fixture
def store(backend):
    s = open_store(backend[1])
    yield s
    s.close()


def _admit(store, key, input_id, text="hi", **extra):
    return store.append(key, ev.INPUT_ADMITTED,
                        {"input_id": input_id, "text": text, "turn_id": extra.get("turn_id"),
                         "ordinal": 0, "queued": False, "id_source": "runtime"},
                        source="test")


def test_factory_picks_the_backend(backend, store):
    url, _ = backend
    assert isinstance(store, Store)
    assert backend_name() == backend_name(url)
    assert type(store).__name__ == {"sqlite": "SqliteStore",
                                    "postgresql": "PostgresStore"}[backend_name(url)]
    assert "password" not in store.location


def test_exactly_once_admission(backend, store):
    key = store.ensure_thread("codex", "s1", workspace_root="/w")
    first = _admit(store, key, "in-1", "do it")
    again = _admit(store, key, "in-1", "do it")
    assert first.seq == 1 and first.outcome != "duplicate"
    assert again.seq is None and again.outcome == "duplicate"
    other = open_store(backend[1])  # another connection (another process/host) sees it too
    try:
        assert _admit(other, key, "in-1", "do it").seq is None
        assert [r.input_id for r in other.inputs(key)] == ["in-1"]
    finally:
        other.close()
    assert [e["seq"] for e in store.events(key)] == [1]
    assert store.thread(key)["last_seq"] == 1


def test_an_illegal_fact_leaves_no_trace(store):
    key = store.ensure_thread("codex", "s1")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c1", "tool": "sh", "args": {},
                                        "turn_id": None}, source="test")
    store.append(key, ev.TOOL_FINISHED, {"call_id": "c1", "status": "ok", "turn_id": None},
                 source="test")
    with pytest.raises(IllegalFact):
        store.append(key, ev.RECONCILED, {"call_id": "c1", "decision": "retry", "note": ""},
                     source="test")
    assert [e["seq"] for e in store.events(key)] == [1, 2]
    with pytest.raises(UnknownThread):
        _admit(store, "no-such-thread", "x")


def test_per_thread_contiguous_ordering_and_reads(store):
    a = store.ensure_thread("codex", "a")
    b = store.ensure_thread("claude", "b")
    for i in range(10):
        _admit(store, a if i % 2 else b, f"in-{i}", f"text {i}")
        store.append(a, ev.ASSISTANT_CLAIM, {"text": f"claim {i}", "turn_id": None},
                     source="test")
    assert [e["seq"] for e in store.events(a)] == list(range(1, 16))
    assert [e["seq"] for e in store.events(b)] == list(range(1, 6))
    assert [e["seq"] for e in store.events(a, after=3, upto=7)] == [4, 5, 6, 7]
    assert [e["seq"] for e in store.events(a, after=3, limit=2)] == [4, 5]
    claims = store.events_of_types(a, [ev.ASSISTANT_CLAIM], newest=2)
    assert [e["data"]["text"] for e in claims] == ["claim 8", "claim 9"]
    assert [c["text"] for c in store.claims(a)][:2] == ["claim 0", "claim 1"]
    assert [r.input_id for r in store.inputs(a)] == ["in-1", "in-3", "in-5", "in-7", "in-9"]
    assert [r.input_id for r in store.newest_inputs(a, 2)] == ["in-7", "in-9"]
    assert sum(store.input_counts(a).values()) == 5
    assert store.thread("a")["thread_key"] == a  # by session id
    assert store.thread_by_session("claude", "b")["thread_key"] == b
    assert store.thread_by_session("claude", "nope") is None
    with pytest.raises(UnknownThread):
        store.thread("zzz")
    assert [t["thread_key"] for t in store.threads()] == [a, b]
    # text survives exactly, lone surrogates included
    _admit(store, b, "odd", "x\ud800y é")
    assert store.events(b)[-1]["data"]["text"] == "x\ud800y é"


def test_append_many_is_all_or_nothing(store):
    key = store.ensure_thread("codex", "s")
    done = store.append_many(key, [
        (ev.TOOL_STARTED, {"call_id": "c1", "tool": "sh", "args": {}, "turn_id": None}),
        (ev.TOOL_FINISHED, {"call_id": "c1", "status": "ok", "turn_id": None})], source="test")
    assert [d.seq for d in done] == [1, 2]
    with pytest.raises(IllegalFact):  # the second is illegal: the first is not kept either
        store.append_many(key, [
            (ev.ASSISTANT_CLAIM, {"text": "c", "turn_id": None}),
            (ev.RECONCILED, {"call_id": "c1", "decision": "retry", "note": ""})], source="test")
    assert [e["seq"] for e in store.events(key)] == [1, 2]
    assert store.claims(key) == []


WRITER = r"""
import sys
from continuation.session.engine import Engine
from continuation.store import IllegalFact
home, who, n, shared = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with Engine(home) as engine:
    thread = engine.thread("codex", "shared-session")
    for i in range(n):
        thread.admit(f"text {who} {i}", input_id=f"{who}-{i}")
        # every writer also offers the same shared ids: exactly one admission each
        if i < shared:
            thread.admit(f"shared {i}", input_id=f"shared-{i}")
"""


def test_concurrent_processes_exactly_once_and_contiguous(backend):
    url, home = backend
    writers, n, shared = 4, 40, 10
    env = {**os.environ, "CONTINUATION_STORE": url, "CONTINUATION_HOME": home}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, home, f"w{w}", str(n), str(shared)],
                              env=env, stderr=subprocess.PIPE) for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    store = open_store(home)
    try:
        key = store.thread("shared-session")["thread_key"]
        events = store.events(key)
        ids = [e["data"]["input_id"] for e in events if e["type"] == ev.INPUT_ADMITTED]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))  # no gap
        assert len(ids) == len(set(ids)) == writers * n + shared  # none lost, none twice
        assert store.thread(key)["last_seq"] == len(events)
        for w in range(writers):  # each writer's own order is kept
            mine = [int(i.split("-")[1]) for i in ids if i.startswith(f"w{w}-")]
            assert mine == list(range(n))
    finally:
        store.close()


def _checkpoint(key, generation, capsule=b'{"capsule": 1}'):
    row = {"checkpoint_id": f"cp-{key}-g{generation}", "thread_key": key,
           "generation": generation, "seq": 0, "reason": "test", "created_at": 1.0 + generation,
           "capsule": capsule, "sha256": hashlib.sha256(capsule).hexdigest(),
           "capsule_version": 1, "rendered": f"rendered {generation}",
           "workspace": json.dumps({"snapshot_ref": "r"}), "file_path": None}
    fact = {"checkpoint_id": row["checkpoint_id"], "generation": generation, "reason": "test",
            "sha256": row["sha256"], "covers_seq": 0, "snapshot_ref": "r"}
    return row, fact


def test_checkpoints_commit_once_with_their_hash(store):
    key = store.ensure_thread("codex", "s")
    capsule = bytes(range(256)) * 4  # exact bytes, not text
    store.commit_checkpoint(*_checkpoint(key, 1, capsule))
    store.commit_checkpoint(*_checkpoint(key, 2))
    with pytest.raises(GenerationTaken):
        store.commit_checkpoint(*_checkpoint(key, 2))
    with pytest.raises(GenerationTaken):
        store.commit_checkpoint(*_checkpoint(key, 1))
    facts = store.events_of_types(key, [ev.CHECKPOINT_COMMITTED])
    assert [f["data"]["generation"] for f in facts] == [1, 2]  # the refused ones left no fact
    assert store.thread(key)["generation"] == 2
    rows = store.checkpoint_rows(key)
    assert [r["generation"] for r in rows] == [1, 2]
    assert bytes(rows[0]["capsule"]) == capsule
    assert rows[0]["sha256"] == hashlib.sha256(capsule).hexdigest()
    newest = store.checkpoint_rows(key, newest_first=True, limit=1)
    assert [r["generation"] for r in newest] == [2]
    assert [r["generation"] for r in store.checkpoint_rows(key, upto_generation=1,
                                                           newest_first=True)] == [1]
    assert [r["checkpoint_id"] for r in store.find_checkpoint_rows(f"cp-{key}-g2")] == \
        [f"cp-{key}-g2"]
    assert len(store.find_checkpoint_rows(f"cp-{key}")) == 2


def test_markers_sessions_and_facts(store):
    key = store.ensure_thread("codex", "s", workspace_root=None)
    assert store.ensure_thread("codex", "s", workspace_root="/w") == key
    assert store.thread(key)["workspace_root"] == "/w"  # a later hook fills it in
    marker = {"pid": 4242, "proc_start": "123", "host": "host-a"}
    _admit(store, key, "i1")
    store.append(key, ev.ASSISTANT_CLAIM, {"text": "x", "turn_id": None}, source="test",
                 ts=100.0, session=marker)
    store.append(key, ev.ASSISTANT_CLAIM, {"text": "y", "turn_id": None}, source="test",
                 ts=200.0, session=marker)
    [live] = store.sessions(key)
    assert (live["pid"], live["host"], live["heartbeat"], live["ended_at"]) == \
        (4242, "host-a", 200.0, None)
    store.end_sessions(key, now=300.0)
    assert store.sessions(key)[0]["ended_at"] == 300.0
    store.append(key, ev.BOUNDARY, {"reason": "compact"}, source="test")
    assert store.thread(key)["needs_context"] == 1
    store.append(key, ev.CONTEXT_DELIVERED, {"generation": 3}, source="test")
    row = store.thread(key)
    assert (row["needs_context"], row["delivered_generation"]) == (0, 3)
    store.append(key, ev.SETTINGS, {"model": "m1"}, source="test")
    store.append(key, ev.SETTINGS, {"model": "m2"}, source="test")
    assert store.meta(key)[ev.SETTINGS]["model"] == "m2"


def test_recovery_reads_agree_with_replay(store):
    key = store.ensure_thread("codex", "s")
    _admit(store, key, "i1", turn_id="t1")
    store.append(key, ev.INPUT_DELIVERED, {"input_id": "i1", "turn_id": "t1"}, source="test")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c1", "tool": "sh", "args": {"cmd": "x"},
                                        "turn_id": "t1"}, source="test")
    store.append(key, ev.CRASH_DETECTED, {"reason": "runtime died"}, source="test")
    _admit(store, key, "i2", turn_id=None)
    statuses = {c.call_id: c.status for c in store.tool_calls(key)}
    states = {r.input_id: r.state for r in store.inputs(key)}
    assert states["i1"] != "handled" and statuses["c1"] != "ok"
    open_calls = store.tool_calls(key, [statuses["c1"]])
    assert [c.call_id for c in open_calls] == ["c1"]
    assert [r.input_id for r in store.inputs(key, [states["i2"]])] == ["i2"]
    c2 = store.append(key, ev.TOOL_STARTED, {"call_id": "c2", "tool": "sh", "turn_id": "t1"},
                      source="test")
    later = store.tool_calls(key, after_seq=int(c2.seq) - 1)  # only calls past a position
    assert [c.call_id for c in later] == ["c2"]
    assert store.tool_calls(key, ["ok"], after_seq=int(c2.seq) - 1) == []
    replayed = store.replay(key)
    assert store.derived_state(key).inputs == replayed.inputs
    assert store.derived_state(key).calls == replayed.calls
    store.rebuild(key)  # recovery re-derives the same state from the log
    assert store.derived_state(key).inputs == replayed.inputs
    assert store.derived_state(key).calls == replayed.calls


def test_backend_selection_errors_are_one_clear_line(home, monkeypatch):
    from continuation.store import StoreError

    monkeypatch.setenv("CONTINUATION_STORE", "mysql://x")
    with pytest.raises(StoreError, match="not a store"):
        open_store(str(home))
    monkeypatch.setenv("CONTINUATION_STORE", "postgresql://u@/db")
    monkeypatch.setitem(sys.modules, "psycopg", None)  # the extra is not installed
    monkeypatch.delitem(sys.modules, "continuation.store.postgres", raising=False)
    with pytest.raises(StoreError, match=r"continuation-engine\[postgres\]"):
        open_store(str(home))
    r = subprocess.run([sys.executable, "-m", "continuation", "status"], capture_output=True,
                       text=True, timeout=60,
                       env={**os.environ, "CONTINUATION_HOME": str(home),
                            "CONTINUATION_STORE": "mysql://x"})
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "not a store" in r.stderr


CHECK_THEN_WRITE = r"""
import sys
from continuation.store import open_store
store = open_store(sys.argv[1])
key = store.ensure_thread("codex", "once")
def items():  # read inside the transaction: nobody can write this thread meanwhile
    if not any(c["text"] == "only once" for c in store.claims(key)):
        yield ("assistant_claim", {"text": "only once", "turn_id": None})
store.append_many(key, items(), source="test")
store.close()
"""


def test_append_many_reads_under_the_thread_lock(backend):
    url, home = backend
    env = {**os.environ, "CONTINUATION_STORE": url, "CONTINUATION_HOME": home}
    procs = [subprocess.Popen([sys.executable, "-c", CHECK_THEN_WRITE, home], env=env,
                              stderr=subprocess.PIPE) for _ in range(6)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
    store = open_store(home)
    try:
        assert [c["text"] for c in store.claims(store.thread("once")["thread_key"])] == \
            ["only once"]
    finally:
        store.close()


def test_every_input_and_call_row_keeps_its_data_size(store):
    """``data_bytes`` (what a boundary sums for the rows it does not gather) is the byte size
    of the row's ``data`` after every kind of write: admission, delivery, calls started and
    finished, a crash settling them, a text with non-ASCII and a lone surrogate, a rebuild."""
    key = store.ensure_thread("codex", "sizes")
    _admit(store, key, "i1", text="renommer le module \u00e9\u4e2d \ud800", turn_id="t1")
    store.append(key, ev.INPUT_DELIVERED, {"input_id": "i1", "turn_id": "t1"}, source="test")
    for n in range(3):
        store.append(key, ev.TOOL_STARTED, {"call_id": f"c{n}", "tool": "sh", "turn_id": "t1",
                                            "args": {"cmd": "echo " + "x" * 50 * n}}, source="test")
    store.append(key, ev.TOOL_FINISHED, {"call_id": "c0", "status": "ok"}, source="test")
    store.append(key, ev.CRASH_DETECTED, {"reason": "runtime died"}, source="test")
    _admit(store, key, "i2", turn_id=None)

    def kept_and_actual():
        """(the kept sizes, the rows' actual sizes) of the inputs by state and of the calls
        by status, as the boundary's counting reads them."""
        inputs, calls = store.inputs(key), store.tool_calls(key)
        kept = ({s: b for s, (_, b) in store.state_view(key).input_totals().items()},
                {s: store.unread_finished_calls(key, [s], [], None)[1]
                 for s in {c.status for c in calls}})
        actual = ({s: sum(len(row_json(r.to_row())) for r in inputs if r.state == s)
                   for s in {r.state for r in inputs}},
                  {s: sum(len(row_json(c.to_row())) for c in calls if c.status == s)
                   for s in {c.status for c in calls}})
        return kept, actual

    kept, actual = kept_and_actual()
    assert sum(kept[1].values()) > 300 and kept == actual
    store.rebuild(key)
    assert kept_and_actual() == (kept, actual)


def test_the_recording_rules_questions_agree_with_the_log(store):
    """Every named read of ``store.thread_reads`` on both backends, against a log whose answers
    are known: two turns (one still running), a call ok without an exit code, a call in flight,
    a boundary, a crash, an import cursor, a dead owner's marker, a snapshot checkpoint."""
    key = store.ensure_thread("codex", "s-reads", workspace_root="/w/reads")
    other = store.ensure_thread("codex", "s-other", workspace_root="/w/else")
    _admit(store, key, "i1", turn_id="t1")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c1", "tool": "sh", "turn_id": "t1"}, source="test")
    store.append(key, ev.TOOL_FINISHED, {"call_id": "c1", "status": "ok"}, source="test")
    store.append(key, ev.TURN_COMPLETED, {"turn_id": "t1"}, source="test")
    _admit(store, key, "i2", text="second", turn_id="t2")
    started = store.append(key, ev.TOOL_STARTED, {"call_id": "c2", "tool": "sh", "turn_id": "t2"},
                           source="test")
    store.append(key, ev.BOUNDARY, {"kind": "compaction"}, source="test")
    store.append(key, ev.BOUNDARY, {"kind": "compaction"}, source="test")
    store.append(key, "transcript_imported", {"path": "/r.jsonl", "offset": 1}, source="test")
    store.append(key, "transcript_imported", {"path": "/r.jsonl", "offset": 9}, source="test")
    assert store.running_turn_ids(key) == ["t2"]
    assert store.newest_running_turn(key) == "t2"
    assert store.turn_count(key) == 2 and store.input_count(key) == 2
    assert store.input_data(key, "i2")["text"] == "second" and store.input_data(key, "nope") is None
    assert [d["text"] for d in store.inputs_data_of_turn(key, "t2")] == ["second"]
    assert store.turn_data(key, "t1")["input_ids"] == ["i1"] and store.turn_data(key, "t9") is None
    assert sorted(store.admitted_seqs(key, ["i1", "i2"])) == [1, 5]
    assert store.admitted_seqs(key, []) == []
    assert [(c, s) for c, s, _ in store.calls_of_turn(key, "t2")] == [("c2", "in_flight")]
    assert store.ok_calls_without_exit_code(key, "t1") == ["c1"]
    assert store.state_view(key).get_call("c2").status == "in_flight"
    assert store.newest_event_with_path(key, "transcript_imported", "/r.jsonl")["offset"] == 9
    assert store.newest_event_with_path(key, "transcript_imported", "/x") is None
    assert store.event_counts_by_kind(key, ev.BOUNDARY) == {"compaction": 2}
    kind, data, source = store.newest_event_of_turn(key, (ev.TURN_COMPLETED, ev.TURN_ABORTED), "t1")
    assert kind == ev.TURN_COMPLETED and json.loads(data)["turn_id"] == "t1" and source == "test"
    assert store.newest_event_of_turn(key, (ev.TURN_ABORTED,), "t1") is None
    assert store.has_open_work(key) and not store.has_open_work(other)
    last = store.last_seq(key)
    assert store.newest_event_seq_ts(key)[0] == last and store.newest_event_seq_ts(other) == (0, None)
    assert store.thread_row_by_key(key)["thread_key"] == key
    assert store.thread_keys() == [key, other] and store.thread_keys("/w/else") == [other]
    store.append(key, ev.CRASH_DETECTED, {"reason": "gone"}, source="test")
    assert store.newest_seq_of_type(key, ev.CRASH_DETECTED) == last + 1
    assert store.newest_seq_of_type(other, ev.CRASH_DETECTED) == 0
    store.append(key, "session_started", {}, source="test",
                 session={"pid": 4242, "proc_start": "1", "host": "h1"})
    store.end_sessions_of(key, [{"pid": 4242, "host": "h1"}], 123.0)
    assert [s["ended_at"] for s in store.sessions(key) if s["pid"] == 4242] == [123.0]
    assert store.newest_checkpoint_summary(key) is None
    assert store.newest_snapshot_before(key, started.seq + 100) is None


def test_thread_removal_and_retention_reads(store):
    key = store.ensure_thread("codex", "s-rm", workspace_root="/w/rm")
    fork = store.ensure_thread("codex", "s-fork", workspace_root="/w/rm", forked_from=key)
    _admit(store, key, "i1", turn_id="t1")
    assert store.forks_of(key) == [fork]
    assert store.workspace_references(key) == (["/w/rm"], [])
    assert sorted(store.workspace_references()[0]) == ["/w/rm", "/w/rm"]
    assert store.checkpoint_sizes() == [] and store.snapshot_workspaces() == []
    n, size, first, last = store.seq_size_totals("events", key, 0, 10)
    assert (n, first, last) == (1, 1, 1) and size > 0
    deleted = store.delete_thread_rows(key)
    assert deleted["events"] == 1 and deleted["threads"] == 1
    assert store.thread_keys() == [fork] and store.forks_of(key) == [fork]  # the lineage stays


def test_turns_claims_and_the_boundarys_bounded_reads(store):
    key = store.ensure_thread("codex", "s-b")
    _admit(store, key, "i1", text="first", turn_id="t1")
    store.append(key, ev.INPUT_DELIVERED, {"input_id": "i1", "turn_id": "t1"}, source="test")
    store.append(key, ev.ASSISTANT_CLAIM, {"text": "claim one", "turn_id": "t1"}, source="test")
    store.append(key, ev.TURN_COMPLETED, {"turn_id": "t1"}, source="test")
    _admit(store, key, "i2", text="second", turn_id="t2")
    store.append(key, ev.INPUT_DELIVERED, {"input_id": "i2", "turn_id": "t2"}, source="test")
    claim2 = store.append(key, ev.ASSISTANT_CLAIM, {"text": "claim two", "turn_id": "t2"},
                          source="test")
    _admit(store, key, "i3", text="third", turn_id=None)
    turns = {t.turn_id: t for t in store.turns(key)}
    assert turns["t1"].status == "completed" and turns["t1"].input_ids == ["i1"]
    assert turns["t2"].status == "running" and turns["t2"].input_ids == ["i2"]
    states = {r.input_id: r.state for r in store.inputs(key)}
    assert states["i1"] == "handled"
    open_states = sorted({states["i2"], states["i3"]})
    opened, newest = store.open_and_newest_inputs(key, open_states, ["handled"], 5)
    assert sorted(d["input_id"] for d in opened) == ["i2", "i3"]
    assert [(d["input_id"], seq > 0, size > 0) for d, seq, size in newest] == [("i1", True, True)]
    assert store.newest_claims(key, None, None, 1) == [
        {"seq": claim2.seq, "turn_id": "t2", "text": "claim two"}]
    assert [c["text"] for c in store.newest_claims(key, claim2.seq - 1, None, 5)] == ["claim one"]
    assert [c["text"] for c in store.newest_claims(key, None, [(claim2.seq, claim2.seq)], 5)] == \
        ["claim two"]
    # the inputs of a state a boundary did not read: all of them less those it read
    last = store.events(key)[-1]["seq"]
    total = (2, 100)
    items, size, first, newest_seq = store.unread_inputs(key, open_states, total, (1, 40), last + 1)
    assert (items, size) == (1, 60)
    assert first is not None and newest_seq is not None and first <= newest_seq <= last
    assert store.unread_inputs(key, open_states, total, total, last + 1) == (0, 0, None, None)


def test_checkpoint_rows_as_is_and_pruned(store):
    key = store.ensure_thread("codex", "s-cp")
    row, _ = _checkpoint(key, 1, b"capsule bytes")
    store.store_checkpoint_row_as_is(dict(row, file_path="/old/copy"))
    assert store.events(key) == []  # no boundary fact: how an older version's row looks
    [kept] = store.checkpoint_rows(key)
    assert (bytes(kept["capsule"]), kept["file_path"], kept["rendered"]) == \
        (b"capsule bytes", "/old/copy", "rendered 1")
    store.prune_checkpoint_data(forget_copy=[(key, 1)], drop_rendering=[(key, 1)],
                                drop_capsule=[(key, 1)])
    [pruned] = store.checkpoint_rows(key)
    assert (bytes(pruned["capsule"]), pruned["file_path"], pruned["rendered"]) == (b"", None, "")
    assert (pruned["checkpoint_id"], pruned["sha256"]) == (row["checkpoint_id"], row["sha256"])


def test_copies_land_at_their_own_seqs_or_not_at_all(store):
    source = store.ensure_thread("codex", "s-src")
    for n in range(3):
        _admit(store, source, f"i{n}", text=f"text {n}", turn_id="t1")
    events = store.events(source)
    copy = store.ensure_thread("codex", "s-copy")
    store.append_at_same_seqs(copy, events[:2])
    assert [(e["seq"], e["data"]["input_id"]) for e in store.events(copy)] == [(1, "i0"), (2, "i1")]
    with pytest.raises(ValueError):  # the third event's seq is 3, the first's 1: not its own
        store.append_at_same_seqs(copy, [events[2], events[0]])
    assert len(store.events(copy)) == 2  # all or nothing
    # a salvage appends after a gap where the events before it were lost
    gap = store.ensure_thread("codex", "s-gap")
    done = store.append_at_seq(gap, dict(events[2], seq=7))
    assert done is not None and done.seq == 7
    assert [e["seq"] for e in store.events(gap)] == [7]
    with pytest.raises(ValueError):
        store.append_at_seq(gap, dict(events[1], seq=5))


def test_drained_facts_are_marked_once(store):
    key = store.ensure_thread("codex", "s-drain")
    fact = {"type": ev.INPUT_ADMITTED, "source": "spool", "ts": 5.0,
            "data": {"input_id": "d1", "text": "x", "turn_id": None, "ordinal": 0,
                     "queued": False, "id_source": "runtime"}}
    before = store.event_count()
    assert store.append_drained("origin-a", 1, key, fact) == 1
    assert store.append_drained("origin-a", 1, key, fact) == 0  # the same mark: drained already
    assert store.append_drained("origin-b", 9, key, fact) == 0  # a duplicate input: nothing new
    assert store.event_count() == before + 1
    [row] = store.events(key)
    store.forget_event(key, row["seq"])
    assert store.events(key) == [] and store.event_count() == before


def test_spool_origin_and_heartbeat(store):
    store.ensure_spool_origin()
    origin = store.spool_origin()
    store.ensure_spool_origin()  # given once
    assert store.spool_origin() == origin and len(origin) == 24
    key = store.ensure_thread("codex", "s-hb")
    store.heartbeat(key, {"pid": 77, "proc_start": "9", "host": "h", "heartbeat": 42.0})
    store.heartbeat(key, {"pid": 77, "proc_start": "9", "host": "h", "heartbeat": 43.0})
    assert [(s["pid"], s["heartbeat"]) for s in store.sessions(key)] == [(77, 43.0)]


def test_a_hook_runs_marks_stay_with_its_facts(backend, store, monkeypatch):
    """A server keeps a hook run's mark with each fact, so a drain of the same fact from the
    spool (its commit's answer was lost) is skipped; the local store hands nothing on and keeps
    none; the spool keeps the mark beside the fact for its drain."""
    from continuation.store import log_store
    from continuation.store.spool import SpoolStore

    stamps = log_store.WriteStamps()
    monkeypatch.setattr(log_store, "STAMPS", stamps)
    key = store.ensure_thread("codex", "s-stamp")
    done = _admit(store, key, "i1", text="stamped")
    probe = log_store.WriteStamps()
    probe.run_id = stamps.run_id
    [event] = store.events(key)
    mark = probe.mark(event["type"], event["data"])
    other = dict(event, data=dict(event["data"], input_id="i2"))
    server = backend[0] != "sqlite"
    assert store.append_drained(*mark, key, other) == (0 if server else 1)
    store.ensure_spool_origin()
    assert store.spool_stamp(key, done.seq) is None
    if not server:
        spool = SpoolStore(backend[1], "postgresql://unreachable", "test")
        try:
            skey = spool.ensure_thread("codex", "s-spooled")
            spooled = _admit(spool, skey, "i3", text="spooled")
            origin, n = spool.spool_stamp(skey, spooled.seq)
            assert origin.startswith(f"run:{stamps.run_id}:") and n == 1
        finally:
            spool.close()


def test_schema_tables_and_leaving_open(backend):
    first = open_store(backend[1])
    key = first.ensure_thread("codex", "s-open")
    _admit(first, key, "i1")
    from continuation.store.schema import SCHEMA_VERSION

    assert first.schema_version == SCHEMA_VERSION
    tables = first.thread_tables()
    assert tables[-1] == "threads" and {"events", "inputs", "tool_calls", "checkpoints"} <= set(tables)
    first.leave_open()  # what a hook does before os._exit: every commit already durable
    second = open_store(backend[1])
    try:
        assert [r.input_id for r in second.inputs(key)] == ["i1"]
    finally:
        second.close()
        first.close()


#: operations whose meaning is a backend's own, not the contract's
NOT_CONTRACT = frozenset({"transaction", "sql", "conn"})


def _named_operations() -> set[str]:
    from continuation.store import boundary_reads, interface, log_store, thread_reads

    ops = set()
    for cls in (interface.Store, thread_reads.ThreadReads, boundary_reads.BoundaryReads,
                log_store.LogStore):
        ops |= {name for name, value in vars(cls).items()
                if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return ops - NOT_CONTRACT


def test_every_named_operation_is_exercised_here():
    """A backend is conformant when it passes this file: an operation no test here calls is
    one a backend can get wrong unseen."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    called = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    missing = sorted(_named_operations() - called)
    assert not missing, f"store operations with no conformance test in {Path(__file__).name}: {missing}"

# -- the timeline page's reads (store/timeline_reads.py) --------------------------------------
def _timeline_thread(store):
    key = store.ensure_thread("codex", "timeline")
    _admit(store, key, "a", "first", turn_id="t1")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c1", "tool": "Bash", "turn_id": "t1",
                                        "args": {}}, source="test")
    store.append(key, ev.TOOL_FINISHED, {"call_id": "c1", "status": "error", "turn_id": "t1",
                                         "exit_code": 2}, source="test")
    store.append(key, ev.TURN_COMPLETED, {"turn_id": "t1"}, source="test")
    _admit(store, key, "b", 'say "héllo"', turn_id="t2")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c2", "tool": "Read", "turn_id": "t2",
                                        "args": {}}, source="test")
    return key


def test_timeline_reads_window_the_log_by_position(store):
    key = _timeline_thread(store)
    assert store.turn_outline(key) == [("t1", "completed", 1, 4), ("t2", "running", 5, None)]
    assert [r.input_id for r in store.inputs_admitted_between(key, 2, 6)] == ["b"]
    assert [c.call_id for c in store.calls_started_between(key, 1, 5)] == ["c1"]
    assert set(store.event_times(key, [1, 4])) == {1, 4}
    assert sorted(store.event_density(key, 3, (ev.INPUT_ADMITTED, ev.TOOL_STARTED))) == [
        (0, ev.INPUT_ADMITTED, 1), (0, ev.TOOL_STARTED, 1),
        (1, ev.INPUT_ADMITTED, 1), (1, ev.TOOL_STARTED, 1)]
    assert store.event_density(key, 3, ()) == []
    assert sorted(store.call_density(key, 3)) == [(0, "error", 1), (1, "in_flight", 1)]
    assert store.events_matching(key, '"HÉLLO"'.lower(), 10) == [(5, ev.INPUT_ADMITTED)]


def test_timeline_reads_an_inputs_earlier_rows_by_the_seqs_that_changed_it(store):
    key = _timeline_thread(store)
    versions = {(s, k): d for s, k, d in store.input_versions(key, [1, 4])}
    assert versions[(1, "a")] is None  # the event that admitted it
    assert versions[(4, "a")]["state"] == "pending"  # as it was before the turn completed
    assert store.versions_reach(key) <= 1


def test_timeline_reads_count_what_a_rewind_reaches(store):
    key = _timeline_thread(store)
    reach = store.rewind_reach(key, 4, ("rolled_back", "superseded"), ("rolled_back",), 10)
    assert [r.input_id for r in reach["inputs"]] == ["b"]
    assert reach["input_counts"] == {"pending": 1}
    assert [c.call_id for c in reach["calls"]] == ["c2"]
    assert reach["call_counts"] == {"in_flight": 1}
    assert store.checkpoint_outline(key) == []

def test_rows_sealed_under_a_key_read_back_and_refuse_a_missing_key(backend, store, monkeypatch):
    """Encryption at rest lives in the store's row codec (store/sealed.py), the same on every
    backend: rows resealed under a key read back as they were, the store's meta names the key
    (never holds it), a store opened without the key refuses to read or write, and a reseal to
    clear puts every value back."""
    pytest.importorskip("cryptography", reason="the encryption extra (cryptography) is not installed")
    from continuation.host import keys
    from continuation.host.sealing import Sealer
    from continuation.store.sealed import PLAIN, Codec, KeyUnavailable

    key = store.ensure_thread("codex", "s1", workspace_root="/w")
    _admit(store, key, "in-1", "the secret word is opal", turn_id="t1")
    store.append(key, ev.ASSISTANT_CLAIM, {"text": "said opal", "turn_id": "t1"}, source="test")
    store.append(key, ev.TURN_COMPLETED, {"turn_id": "t1"}, source="test")
    before = (store.events(key), store.claims(key), [r.to_row() for r in store.inputs(key)])
    # the timeline's reads: the turns' bounds read inside the database, a search of payloads
    outline, found = store.turn_outline(key), store.events_matching(key, "OPAL", 10)
    assert outline[0][3] is not None and len(found) == 2
    assert store.encryption() is None and store.store_meta("encryption") is None
    assert store.codec is PLAIN
    secret = keys.new_key()
    kid = keys.key_id(secret)
    monkeypatch.setenv("CONTINUATION_KEY", keys.key_text(secret))
    done = store.reseal(Codec(Sealer({kid: secret}, kid), kid))
    assert done >= 4
    store.after_reseal()  # (run by reseal; again is harmless)
    assert store.encryption() == {"cipher": "AES-256-GCM", "key_id": kid}
    assert keys.key_text(secret) not in store.store_meta("encryption")
    assert (store.turn_outline(key), store.events_matching(key, "OPAL", 10)) == (outline, found)
    _admit(store, key, "in-2", "opal again", turn_id="t2")
    assert (store.events(key)[:3], store.claims(key)) == before[:2]
    other = open_store(backend[1])
    try:  # another connection (another process or host) with the key reads the same
        assert [r.text for r in other.inputs(key)] == ["the secret word is opal", "opal again"]
    finally:
        other.close()
    monkeypatch.delenv("CONTINUATION_KEY")
    monkeypatch.setenv("CONTINUATION_KEY_FILE", "/nonexistent/key")
    keyless = open_store(backend[1])
    try:
        with pytest.raises(KeyUnavailable, match="no key was found"):
            keyless.inputs(key)
        with pytest.raises(KeyUnavailable):
            keyless.ensure_thread("codex", "s2")
    finally:
        keyless.close()
    monkeypatch.setenv("CONTINUATION_KEY", keys.key_text(secret))
    store.reseal(PLAIN)
    assert store.encryption() is None
    assert [r.to_row() for r in store.inputs(key)][0] == before[2][0]



def test_a_call_and_a_turn_holding_a_nul_or_a_lone_surrogate_are_recorded(store):
    """A tool's output with NUL bytes (`cat` of a binary file), arguments and a claim with a
    lone surrogate: each fact is recorded (the server reads a call's and a turn's row as JSON,
    which holds neither: those rows get U+FFFD), the event keeps the exact text, and the
    turn's calls are found by their turn."""
    key = store.ensure_thread("codex", "odd-bytes")
    odd = "ELF\x00\x01\x02 \udc80 end"
    _admit(store, key, "i1", text="show " + odd, turn_id="t1")
    store.append(key, ev.TOOL_STARTED, {"call_id": "c1", "tool": "sh", "turn_id": "t1",
                                        "args": {"cmd": "cat " + odd, odd: 1}}, source="test")
    store.append(key, ev.TOOL_FINISHED, {"call_id": "c1", "status": "ok", "exit_code": 0,
                                         "output": odd * 3}, source="test")
    store.append(key, ev.ASSISTANT_CLAIM, {"text": "it printed " + odd, "turn_id": "t1"},
                 source="test")
    store.append(key, ev.TURN_COMPLETED, {"turn_id": "t1", "claim": odd}, source="test")
    events = store.events(key)
    assert [e["type"] for e in events] == [ev.INPUT_ADMITTED, ev.TOOL_STARTED, ev.TOOL_FINISHED,
                                           ev.ASSISTANT_CLAIM, ev.TURN_COMPLETED]
    assert events[2]["data"]["output"] == odd * 3  # the event: exact
    [call] = store.tool_calls(key)
    assert call.status == "ok" and call.turn_id == "t1"
    assert [call_id for call_id, _, _ in store.calls_of_turn(key, "t1")] == ["c1"]
    assert [t.status for t in store.turns(key)] == ["completed"]
