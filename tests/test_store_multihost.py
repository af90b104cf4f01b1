"""Several machines on one PostgreSQL store: concurrent hosts lose and duplicate nothing; a
server stopped mid-session loses no acknowledged fact (the local spool holds it and the next
hook that reaches the server drains it, in order, exactly once); a hook killed with SIGKILL in
the middle of its transaction leaves nothing half-written."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")

from continuation.store import open_store  # noqa: E402
from continuation.store.spool import SPOOL_FILE, drain, pending  # noqa: E402
from statemachine import events as ev  # noqa: E402

HOST_WRITER = r"""
import sys
from continuation.session.engine import Engine
home, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Engine(home) as engine:
    shared = engine.thread("codex", "team-session")
    own = engine.thread("codex", f"own-{who}")
    for i in range(n):
        (shared if i % 2 else own).admit(f"{who} {i}", input_id=f"{who}-{i}")
"""


def _env(url, home, **extra):
    env = {k: v for k, v in os.environ.items() if k != "CONTINUATION_FAULT"}
    return {**env, "CONTINUATION_STORE": url, "CONTINUATION_HOME": str(home), **extra}


def test_three_hosts_three_processes_a_thousand_events_each(pg_url, tmp_path):
    hosts, procs_per_host, n = 3, 3, 1000
    procs = []
    for h in range(hosts):
        home = tmp_path / f"host-{h}"
        for p in range(procs_per_host):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", HOST_WRITER, str(home), f"h{h}p{p}", str(n)],
                env=_env(pg_url, home), stderr=subprocess.PIPE))
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err.decode()[-2000:]
    store = open_store(str(tmp_path / "reader"), url=pg_url)
    try:
        seen: list[str] = []
        for row in store.threads():
            events = store.events(row["thread_key"])
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
            assert row["last_seq"] == len(events)
            seen += [e["data"]["input_id"] for e in events if e["type"] == ev.INPUT_ADMITTED]
        writers = hosts * procs_per_host
        assert len(seen) == writers * n, "lost events"
        assert len(set(seen)) == len(seen), "duplicated events"
        shared = store.events(store.thread("team-session")["thread_key"])
        for w in {e["data"]["input_id"].split("-")[0] for e in shared}:
            mine = [int(e["data"]["input_id"].split("-")[1]) for e in shared
                    if e["data"]["input_id"].startswith(w + "-")]
            assert mine == sorted(mine)  # each writer's own order is kept
    finally:
        store.close()


def _hook(env, turn, prompt):
    payload = {"session_id": "sess", "turn_id": turn, "cwd": "/tmp",
               "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    return subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                          input=json.dumps(payload), env=env, capture_output=True, text=True,
                          timeout=120)


def _texts(url, tmp_path):
    store = open_store(str(tmp_path / "reader"), url=url)
    try:
        key = store.thread("sess")["thread_key"]
        events = store.events(key)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        return [e["data"]["text"] for e in events if e["type"] == ev.INPUT_ADMITTED]
    finally:
        store.close()


def test_server_stopped_mid_session_then_restarted(pg_cluster, pg_url, tmp_path):
    home = tmp_path / "laptop"
    env = _env(pg_url, home)
    acknowledged = []
    for i in range(3):
        r = _hook(env, f"t{i}", f"prompt {i}")
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        acknowledged.append(f"prompt {i}")
    pg_cluster.stop()
    try:
        for i in range(3, 7):  # the server is gone: the hooks still answer, nothing is lost
            r = _hook(env, f"t{i}", f"prompt {i}")
            assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
            acknowledged.append(f"prompt {i}")
        assert pending(str(home)) >= 4
        status = subprocess.run([sys.executable, "-m", "continuation", "status"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert status.returncode == 0, status.stderr
        assert status.stdout.startswith("stale local view: the store server")
        assert "prompt 6" in status.stdout
        doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert "wait in the local spool" in doctor.stdout
        assert "[XX] store: the server" in doctor.stdout
    finally:
        pg_cluster.start()
    spool_copy = tmp_path / "spool-before-drain.sqlite3"
    shutil.copy(home / SPOOL_FILE, spool_copy)
    r = _hook(env, "t7", "prompt 7")  # reaches the server: drains the spool first
    assert r.returncode == 0, r.stderr
    acknowledged.append("prompt 7")
    assert not (home / SPOOL_FILE).exists() and pending(str(home)) == 0
    assert _texts(pg_url, tmp_path) == acknowledged  # all of them, in order, once
    # a drain that died after the server committed but before the spool was emptied: the
    # same spool drained again adds nothing
    shutil.copy(spool_copy, home / SPOOL_FILE)
    server = open_store(str(tmp_path / "other"), url=pg_url)
    try:
        appended, dropped = drain(str(home), server)
    finally:
        server.close()
    assert appended == 0 and dropped >= 4
    assert _texts(pg_url, tmp_path) == acknowledged
    doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert "[ok] store.spool: no spooled facts" in doctor.stdout


def test_hook_killed_mid_transaction_leaves_nothing_half_written(pg_url, tmp_path):
    home = tmp_path / "h"
    assert _hook(_env(pg_url, home), "t0", "first").returncode == 0
    killed = _hook(_env(pg_url, home, CONTINUATION_FAULT="event.before_commit"), "t1", "second")
    assert killed.returncode == -signal.SIGKILL
    assert _texts(pg_url, tmp_path) == ["first"]  # the open transaction was rolled back
    again = _hook(_env(pg_url, home), "t1", "second")  # the thread row lock was released
    assert again.returncode == 0 and json.loads(again.stdout) == {}, again.stderr
    assert _texts(pg_url, tmp_path) == ["first", "second"]
    assert not (home / SPOOL_FILE).exists()
