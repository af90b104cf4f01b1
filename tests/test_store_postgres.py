"""The PostgreSQL backend beyond the shared contract (tests/test_store_conformance.py): the
schema is created and migrated by the tool with a version check, a second host reads what the
first recorded, and the server's absence is a clear one-line error."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")

from continuation.store import StoreError, StoreVersionError, open_store  # noqa: E402
from continuation.store.postgres import redact  # noqa: E402
from continuation.store.schema import SCHEMA_VERSION  # noqa: E402


def _cli(args, env, stdin=None):
    return subprocess.run([sys.executable, "-m", "continuation", *args], env=env,
                          input=stdin, capture_output=True, text=True, timeout=120)


def _env(url, home):
    return {**os.environ, "CONTINUATION_STORE": url, "CONTINUATION_HOME": str(home)}


def test_schema_is_created_once_and_a_newer_one_is_refused(pg_url, tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c",
                               "import sys; from continuation.store import open_store;"
                               "open_store(sys.argv[1], url=sys.argv[2]).close()",
                               str(tmp_path / f"h{i}"), pg_url], stderr=subprocess.PIPE)
             for i in range(4)]  # four hosts creating the schema at once
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    store = open_store(str(tmp_path), url=pg_url)
    try:
        assert store.schema_version == SCHEMA_VERSION
        versions = store.conn.raw.execute("SELECT version FROM continuation_schema").fetchall()
        assert [v[0] for v in versions] == list(range(1, SCHEMA_VERSION + 1))
        store.conn.raw.execute("INSERT INTO continuation_schema (version) VALUES (%s)",
                               (SCHEMA_VERSION + 1,))
    finally:
        store.close()
    with pytest.raises(StoreVersionError, match="newer"):
        open_store(str(tmp_path), url=pg_url)


def test_unreachable_server_is_one_clear_line(tmp_path):
    url = f"postgresql://u:secret@/db?host={tmp_path}/nowhere"
    with pytest.raises(StoreError) as info:  # nothing spooled here, nothing to create
        open_store(str(tmp_path), url=url, create=False)
    assert "cannot reach the store" in str(info.value) and "secret" not in str(info.value)
    doctor = _cli(["doctor"], _env(url, tmp_path / "h"))
    assert doctor.returncode != 0 and "Traceback" not in doctor.stderr + doctor.stdout
    [line] = [x for x in doctor.stdout.splitlines() if x.startswith("[XX] store:")]
    assert "cannot reach the store postgresql://u:***@" in line and "secret" not in line
    status = _cli(["status"], _env(url, tmp_path / "h"))  # a stale local view, said so
    assert status.returncode == 0 and "Traceback" not in status.stderr
    assert status.stdout.startswith("stale local view") and "secret" not in status.stdout
    assert redact("postgresql://me:pw@host/db") == "postgresql://me:***@host/db"


def test_host_b_sees_what_host_a_recorded(pg_url, tmp_path):
    """Two machines (two state homes) on one server: B's status, recover and context show the
    thread A's agent was running, with its pending input and the call that never finished."""
    a, b = _env(pg_url, tmp_path / "host-a"), _env(pg_url, tmp_path / "host-b")
    base = {"session_id": "sess-a", "turn_id": "t1", "cwd": str(tmp_path)}
    for payload in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "migrate the db"},
                    {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                     "tool_input": {"command": "make migrate"}, "tool_use_id": "call-1"}):
        r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                           input=json.dumps(payload), env=a, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    status = _cli(["status", "--json"], b)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    [thread] = doc["threads"]
    assert thread["thread"]["session_id"] == "sess-a"
    assert [i["text"] for i in thread["inputs"]] == ["migrate the db"]
    assert doc["store"].startswith("postgresql://")
    context = _cli(["context", "--thread", "sess-a"], b)
    assert context.returncode == 0, context.stderr
    assert "migrate the db" in context.stdout
    doctor = _cli(["doctor"], b)
    assert "[ok] store: store at postgresql://" in doctor.stdout
    assert "[ok] store.derived: derived state equals the replay of the log" in doctor.stdout


def test_recover_on_host_b_shows_the_thread_host_a_was_running(pg_url, tmp_path, monkeypatch):
    """Host A's agent died mid-call (its marker stopped beating long ago): host B, on the same
    server with its own state home, lists the thread with the pending input and the call in
    flight; a recent marker of another host is never judged."""
    import time

    from continuation.session.engine import Engine

    monkeypatch.setenv("CONTINUATION_STORE", pg_url)
    with Engine(tmp_path / "host-a") as engine:
        thread = engine.thread("codex", "sess-a", workspace_root=str(tmp_path))
        old = time.time() - 7200
        marker = {"pid": 4242, "proc_start": "1", "host": "host-a.example"}
        engine.store.append(thread.key, "input_admitted",
                            {"input_id": "p1", "text": "deploy it", "turn_id": "t1",
                             "ordinal": 0, "queued": False, "id_source": "runtime"},
                            source="hook", ts=old, session=marker)
        engine.store.append(thread.key, "tool_started",
                            {"call_id": "c1", "tool": "Bash", "args": {"command": "deploy"},
                             "turn_id": "t1", "started_at": old}, source="hook", ts=old,
                            session=marker)
        fresh = engine.thread("codex", "sess-live")
        fresh.admit("still running", input_id="q1", turn_id="u1",
                    session={"pid": 7, "proc_start": "1", "host": "host-c.example"})
    b = _env(pg_url, tmp_path / "host-b")
    r = _cli(["recover", "--json"], b)
    assert r.returncode == 0, r.stderr
    [item] = json.loads(r.stdout)["interrupted"]
    assert item["thread_key"] == thread.key
    text = json.dumps(item)
    assert "deploy it" in text and '"c1"' in text and "host-a.example" in text


def test_hot_path_on_the_server_stays_light(pg_url, tmp_path):
    """On PostgreSQL the hot path adds the driver and nothing else heavy."""
    script = r"""
import json, sys
from continuation import hooks
base = {"session_id": "s", "turn_id": "t", "cwd": "."}
for p in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "x"},
          {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": "ls"}, "tool_use_id": "c1"},
          {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
           "tool_input": {"command": "ls"}, "tool_use_id": "c1", "tool_response": "ok"}):
    out, code = hooks.run("codex", json.dumps(p).encode())
    assert code == 0 and out.strip() == "{}", out
print(json.dumps([m for m in ("pydantic", "tiktoken", "git", "transitions", "capsule", "psycopg")
                  if m in sys.modules]))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env=_env(pg_url, tmp_path / "h"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ["psycopg"]
    assert not (tmp_path / "h" / "logs" / "hooks.log").exists()  # nothing failed open


def test_a_state_home_can_name_its_server_in_a_file(pg_url, tmp_path, monkeypatch):
    from continuation.store import SqliteStore
    from continuation.store.postgres import PostgresStore

    home = tmp_path / "state"
    home.mkdir()
    (home / "store-url").write_text(pg_url + "\n", encoding="utf-8")
    monkeypatch.delenv("CONTINUATION_STORE", raising=False)
    store = open_store(str(home))
    assert isinstance(store, PostgresStore)
    store.close()
    monkeypatch.setenv("CONTINUATION_STORE", "sqlite")  # the variable wins over the file
    store = open_store(str(home))
    assert isinstance(store, SqliteStore) and not isinstance(store, PostgresStore)
    store.close()


def test_both_schemas_make_the_same_tables_columns_and_indexes(pg_url, tmp_path):
    """Each backend creates its schema from its own migrations; what they make is the same."""
    import sqlite3

    from continuation.store import SqliteStore

    SqliteStore(tmp_path / "s.sqlite3").close()
    lite = sqlite3.connect(tmp_path / "s.sqlite3")
    tables = [r[0] for r in lite.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    lite_columns = {(t, r[1]) for t in tables for r in lite.execute(f'PRAGMA table_info("{t}")')}
    lite_indexes = {r[0] for r in lite.execute(
        "SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    store = open_store(str(tmp_path / "h"), url=pg_url)
    try:
        raw = store.conn.raw
        pg_columns = {tuple(r) for r in raw.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema=current_schema() AND table_name=ANY(%s)", (tables,))}
        pg_indexes = {r[0] for r in raw.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname=current_schema()"
            " AND indexname NOT LIKE '%%_pkey' AND indexname NOT LIKE '%%_key'")}
    finally:
        store.close()
    assert len(lite_columns) > 50 and pg_columns == lite_columns
    assert pg_indexes == lite_indexes
