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


def _hook_process(env, turn, prompt):
    payload = {"session_id": "sess", "turn_id": turn, "cwd": "/tmp",
               "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    proc = subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)
    proc.stdin.write(json.dumps(payload))
    proc.stdin.close()
    return proc


def test_server_killed_while_hooks_wait_inside_their_transaction(pg_cluster, pg_url, tmp_path):
    """Five prompts' hooks wait on the thread's row lock when the server is killed: each
    still holds its payload, so each goes to the spool (none is counted lost, none blames
    the state home), and the next hook that reaches the restarted server drains all five,
    once each."""
    import time

    import psycopg

    from continuation.host import lost_writes
    from continuation.store import thread_key_for

    home = tmp_path / "laptop"
    env = _env(pg_url, home)
    assert _hook(env, "t0", "before").returncode == 0
    holder = psycopg.connect(pg_url)
    holder.execute("SELECT 1 FROM threads WHERE thread_key=%s FOR UPDATE",
                   (thread_key_for("codex", "sess"),))
    procs = [_hook_process(env, f"t{i}", f"waiting {i}") for i in range(1, 6)]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with psycopg.connect(pg_url, autocommit=True) as probe:
                waiting = probe.execute("SELECT count(*) FROM pg_stat_activity"
                                        " WHERE wait_event_type='Lock'").fetchone()[0]
            if waiting == 5:
                break
            time.sleep(0.2)
        assert waiting == 5, "the hooks never waited on the row lock"
        pg_cluster.kill()
        answers = []
        for p in procs:
            p.wait(timeout=120)
            answers.append((p.stdout.read(), p.stderr.read()))
    finally:
        for p in procs:
            p.kill() if p.poll() is None else None
        try:
            holder.close()
        except Exception:
            pass
        pg_cluster.restart_after_kill()
    assert [p.returncode for p in procs] == [0] * 5, [err[-500:] for _, err in answers]
    assert all(json.loads(out) == {} for out, _ in answers), answers  # nothing lost to say
    assert lost_writes.read(str(home))["lost"] == 0
    assert pending(str(home)) >= 5  # each prompt (and the turns it cut, in the spool's view)
    assert _hook(env, "t6", "after").returncode == 0  # reaches the server: drains first
    assert pending(str(home)) == 0
    texts = _texts(pg_url, tmp_path)
    assert texts[0] == "before" and texts[-1] == "after"
    assert sorted(texts[1:-1]) == [f"waiting {i}" for i in range(1, 6)]


def _claims(url, tmp_path):
    store = open_store(str(tmp_path / "reader"), url=url)
    try:
        return [c["text"] for c in store.claims(store.thread("sess")["thread_key"])]
    finally:
        store.close()


def test_a_commit_lost_with_its_answer_is_drained_once(pg_url, tmp_path, monkeypatch):
    """The server commits, then the connection dies before the hook hears it: the hook
    records the payload into the spool as well, and the drain, finding the run's stamps on
    the server, adds nothing: the prompt and the Stop's message (a fact no reducer rule
    would refuse twice) are there once."""
    from continuation import hooks
    from continuation.store import factory, log_store, postgres

    home = tmp_path / "h"
    monkeypatch.setenv("CONTINUATION_STORE", pg_url)
    monkeypatch.setenv("CONTINUATION_HOME", str(home))
    monkeypatch.setattr(factory, "_server_lost", None)
    real_exit = postgres._Transaction.__exit__
    lost = []

    def commit_then_lose(self, exc_type, exc, tb):
        done = real_exit(self, exc_type, exc, tb)
        if exc_type is None and not lost:  # the hook's first commit
            lost.append(1)
            raise log_store.ServerUnreachable("lost the store server: injected after COMMIT")
        return done

    def hook(event, turn, **fields):
        payload = {"session_id": "sess", "turn_id": turn, "cwd": "/tmp",
                   "hook_event_name": event, **fields}
        return hooks.run("codex", json.dumps(payload).encode())

    assert hook("UserPromptSubmit", "t0", prompt="first") == ("{}", 0)
    for event, fields in (("UserPromptSubmit", {"prompt": "second"}),
                          ("Stop", {"last_assistant_message": "renamed the module"})):
        lost.clear()
        monkeypatch.setattr(postgres._Transaction, "__exit__", commit_then_lose)
        out, code = hook(event, "t1", **fields)
        monkeypatch.setattr(postgres._Transaction, "__exit__", real_exit)
        assert code == 0 and json.loads(out) == {} and lost == [1]
        assert pending(str(home)) >= 1  # the retry spooled the payload's facts
        monkeypatch.setattr(factory, "_server_lost", None)  # a later process
        factory.open_store(str(home)).close()  # reaches the server: drains the spool
        assert pending(str(home)) == 0
    assert hook("UserPromptSubmit", "t2", prompt="third")[1] == 0
    assert _texts(pg_url, tmp_path) == ["first", "second", "third"]
    assert _claims(pg_url, tmp_path) == ["renamed the module"]


def test_without_the_stamps_the_lost_commit_would_be_doubled(pg_url, tmp_path, monkeypatch):
    """The stamps are what prevent the double: the same run with marks that never match
    records the Stop's message twice (so the test above fails without them)."""
    from continuation.store import log_store

    class NoStamps(log_store.WriteStamps):
        def mark(self, etype, data):
            self.run_id = os.urandom(8).hex()  # every mark new: the drain can match nothing
            return super().mark(etype, data)

    monkeypatch.setattr(log_store, "WriteStamps", NoStamps)
    with pytest.raises(AssertionError, match="renamed the module"):
        test_a_commit_lost_with_its_answer_is_drained_once(pg_url, tmp_path, monkeypatch)


def test_the_spool_and_its_lock_are_private(tmp_path):
    from continuation.store.spool import SpoolStore, spool_path

    home = tmp_path / "h"
    old = os.umask(0o022)
    try:
        SpoolStore(str(home), "postgresql://u@/db", "test").close()
    finally:
        os.umask(old)
    for path in (spool_path(str(home)), spool_path(str(home)) + ".lock"):
        assert os.stat(path).st_mode & 0o077 == 0, oct(os.stat(path).st_mode)
