"""The local relay between hooks and the PostgreSQL store (continuation/store/relay.py): a
relayed hook answers and records exactly what a direct one does and imports no driver; the
relay killed with SIGKILL in the middle of a request loses and doubles nothing; a server lost
mid-hook through it is spooled and drained once; a hook killed inside its relayed transaction
leaves nothing half-written; it serves no other user, starts on demand, leaves when idle and
shows in `continuation doctor`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")

from continuation.store import open_store, relay_client, relay_wire  # noqa: E402
from continuation.store.spool import pending  # noqa: E402
from statemachine import events as ev  # noqa: E402


def _env(url, home, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONTINUATION_FAULT", "CONTINUATION_RELAY")}
    return {**env, "CONTINUATION_STORE": url, "CONTINUATION_HOME": str(home), **extra}


def _hook(env, payload, runtime="codex"):
    r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", runtime],
                       input=json.dumps(payload), env=env, capture_output=True, text=True,
                       timeout=120)
    return r


def _status(url, env):
    """The relay's status as a hook with ``env`` would find it (the relay folder and libpq
    environment are the hook's)."""
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        return relay_client.status(url)
    finally:
        os.environ.clear()
        os.environ.update(old)


def _start_relay(url, env, **extra) -> subprocess.Popen:
    """A relay for ``url`` started as a hook would start it, ready when this returns."""
    proc = subprocess.Popen([sys.executable, "-P", "-m", "continuation.store.relay"],
                            env={**env, relay_client.URL_ENV: url, **extra},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = _status(url, env)
        if state is not None and state["pid"] == proc.pid:
            return proc
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("the relay never answered")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def _events(url, tmp_path, session="sess"):
    store = open_store(str(tmp_path / "reader"), url=url)
    try:
        key = store.thread(session)["thread_key"]
        events = store.events(key)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        return events
    finally:
        store.close()


def _texts(url, tmp_path):
    return [e["data"]["text"] for e in _events(url, tmp_path) if e["type"] == ev.INPUT_ADMITTED]


def _claims(url, tmp_path):
    return [e["data"]["text"] for e in _events(url, tmp_path) if e["type"] == ev.ASSISTANT_CLAIM]


SESSION = [  # (runtime, payload): prompts, calls, a failure, a steer, a stop, odd text
    ("claude", {"hook_event_name": "SessionStart", "source": "startup", "model": "m"}),
    ("claude", {"hook_event_name": "UserPromptSubmit", "prompt_id": "p1",
                "prompt": "rename the module \x00 with a NUL, a lone \udc80 surrogate, ünïcode"}),
    ("claude", {"hook_event_name": "PreToolUse", "prompt_id": "p1", "tool_name": "Bash",
                "tool_input": {"command": "ls"}, "tool_use_id": "c1"}),
    ("claude", {"hook_event_name": "PostToolUse", "prompt_id": "p1", "tool_name": "Bash",
                "tool_input": {"command": "ls"}, "tool_use_id": "c1",
                "tool_response": {"stdout": "x" * 300_000, "exit_code": 0}}),
    ("claude", {"hook_event_name": "PreToolUse", "prompt_id": "p1", "tool_name": "Bash",
                "tool_input": {"command": "false"}, "tool_use_id": "c2"}),
    ("claude", {"hook_event_name": "PostToolUseFailure", "prompt_id": "p1",
                "tool_name": "Bash", "tool_use_id": "c2", "error": "exit 1"}),
    ("claude", {"hook_event_name": "UserPromptSubmit", "prompt_id": "p1",
                "prompt": "and the tests too"}),
    ("claude", {"hook_event_name": "Stop", "prompt_id": "p1",
                "last_assistant_message": "renamed it; the tests pass"}),
    ("claude", {"hook_event_name": "UserPromptSubmit", "prompt_id": "p2", "prompt": "thanks"}),
    ("claude", {"hook_event_name": "PreToolUse", "prompt_id": "p2", "tool_name": "Read",
                "tool_input": {"file_path": "/etc/hostname"}, "tool_use_id": "c3"}),
    ("claude", {"hook_event_name": "SessionEnd", "reason": "exit"}),
]


def test_relayed_hooks_answer_and_record_what_direct_ones_do(pg_cluster, tmp_path):
    """One session's hooks, once each way into its own database: every answer is the same,
    and so is every recorded event (type, data, source), the derived calls and inputs."""
    results = {}
    for way in ("direct", "relayed"):
        url = pg_cluster.create_database(f"relay_same_{way}_{os.getpid()}")
        env = _env(url, tmp_path / way, **({"CONTINUATION_RELAY": "off"}
                                            if way == "direct" else {}))
        relay = _start_relay(url, env) if way == "relayed" else None
        try:
            answers = []
            for i, (runtime, payload) in enumerate(SESSION):
                payload = {"session_id": "sess", "cwd": str(tmp_path), **payload}
                r = _hook(env, payload, runtime)
                assert r.returncode == 0, r.stderr
                answers.append(json.loads(r.stdout))
                if relay is not None:  # every hook of this way went through the relay
                    assert _status(url, env)["connections"] == i + 1
            assert not (tmp_path / way / "logs" / "hooks.log").exists()
            store = open_store(str(tmp_path / "reader"), url=url)
            try:
                key = store.thread("sess")["thread_key"]
                results[way] = {
                    "answers": answers,
                    "events": [(e["type"], e["data"], e["source"]) for e in store.events(key)],
                    "calls": [(c.call_id, c.status) for c in store.tool_calls(key)],
                    "inputs": [(i.input_id, i.state) for i in store.inputs(key)]}
            finally:
                store.close()
        finally:
            if relay is not None:
                _stop(relay)
    direct, relayed = results["direct"], results["relayed"]
    for event in (*direct["events"], *relayed["events"]):  # the hooks' own moments differ
        for moment in ("started_at", "finished_at", "ts"):
            event[1].pop(moment, None)
    assert relayed == direct
    assert len(direct["events"]) >= len(SESSION)
    assert any("\udc80" in json.dumps(e[1], ensure_ascii=False, default=str)
               or "\\udc80" in json.dumps(e[1]) for e in relayed["events"])


def test_relayed_hot_path_imports_no_driver(pg_url, tmp_path):
    """Through the relay, the prompt and tool hooks (the very command `continuation install`
    writes) import none of the hot path's forbidden modules, the PostgreSQL driver included."""
    from test_hooks import HOT_PATH_NEVER

    from continuation.install import default_command

    home = tmp_path / "h"
    env = _env(pg_url, home)
    relay = _start_relay(pg_url, env)
    try:
        root = str(Path(relay_client.__file__).resolve().parents[2])
        command = default_command()
        command = [command[0], "-S", "-X", "importtime", *command[1:], "hook", "--runtime",
                   "codex"]
        base = {"session_id": "s", "turn_id": "t", "cwd": str(tmp_path)}
        for p in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "rename it"},
                  {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "tool_use_id": "c1"},
                  {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "tool_use_id": "c1",
                   "tool_response": "ok"}):
            r = subprocess.run(command, input=json.dumps(p).encode(), capture_output=True,
                               timeout=60, env={**env, "PYTHONPATH": root})
            assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
            imported = {line.split("|")[-1].strip() for line in r.stderr.decode().splitlines()
                        if line.startswith("import time:")}
            assert "continuation.store.relay_client" in imported  # the listing is real
            # nor hashlib (OpenSSL's library): the stamps and the relay's name hash without it
            # (a Codex prompt's input id is a hash, on every store: statemachine.ids)
            never = (*HOT_PATH_NEVER, *(("hashlib", "_hashlib")
                                        if p["hook_event_name"] != "UserPromptSubmit" else ()))
            heavy = sorted(m for m in imported
                           if m in never or m.split(".")[0] in HOT_PATH_NEVER)
            assert heavy == [], (p["hook_event_name"], heavy)
        assert _status(pg_url, env)["connections"] == 3
    finally:
        _stop(relay)
    assert not (home / "logs" / "hooks.log").exists()


def test_the_first_hook_starts_the_relay_and_the_next_ones_use_it(pg_url, tmp_path):
    env = _env(pg_url, tmp_path / "h")
    assert _status(pg_url, env) is None
    base = {"session_id": "sess", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"}
    r = _hook(env, {**base, "turn_id": "t0", "prompt": "first"})  # direct; starts the relay
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    deadline = time.monotonic() + 60
    while (state := _status(pg_url, env)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert state is not None and state["connections"] == 0
    r = _hook(env, {**base, "turn_id": "t1", "prompt": "second"})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    assert _status(pg_url, env)["connections"] == 1
    assert _texts(pg_url, tmp_path) == ["first", "second"]
    folder = os.environ["CONTINUATION_RELAY_DIR"]
    sock = relay_wire.socket_path(folder, pg_url)
    assert os.stat(folder).st_mode & 0o777 == 0o700
    assert os.stat(sock).st_mode & 0o777 == 0o600
    assert pg_url.split("@")[0] not in sock  # the socket's name shows no URL
    os.kill(state["pid"], signal.SIGTERM)


@pytest.mark.parametrize("point", ["relay.before_commit", "relay.after_commit"])
def test_relay_killed_mid_request_loses_and_doubles_nothing(pg_url, tmp_path, point):
    """The relay SIGKILLs itself on the Stop hook's COMMIT, before sending it to the server or
    after the server committed: the hook answers, spools the payload (counted as no lost
    write), and the next hook (direct: no relay now) drains it. The Stop's message, a fact no
    reducer rule refuses twice, is on the server once either way."""
    from continuation.host import lost_writes

    home = tmp_path / "h"
    env = _env(pg_url, home)
    base = {"session_id": "sess", "cwd": "/tmp"}
    off = {**env, "CONTINUATION_RELAY": "off"}
    assert _hook(off, {**base, "hook_event_name": "UserPromptSubmit", "turn_id": "t1",
                       "prompt": "first"}).returncode == 0
    relay = _start_relay(pg_url, env, CONTINUATION_FAULT=point)
    r = _hook(env, {**base, "hook_event_name": "Stop", "turn_id": "t1",
                    "last_assistant_message": "renamed the module"})
    assert relay.wait(timeout=60) == -signal.SIGKILL  # it did die mid-request
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    assert lost_writes.read(str(home))["lost"] == 0
    assert pending(str(home)) >= 1  # the payload's facts wait in the spool
    assert "relay went away" in (home / "logs" / "hooks.log").read_text()
    assert _status(pg_url, env) is None
    r = _hook(env, {**base, "hook_event_name": "UserPromptSubmit", "turn_id": "t2",
                    "prompt": "third"})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    assert pending(str(home)) == 0
    assert _texts(pg_url, tmp_path) == ["first", "third"]
    assert _claims(pg_url, tmp_path) == ["renamed the module"]
    events = _events(pg_url, tmp_path)
    assert [e["type"] for e in events].count(ev.TURN_COMPLETED) == 1


def test_hook_killed_inside_its_relayed_transaction(pg_url, tmp_path):
    """A hook SIGKILLed with its transaction open on the relay's connection: the relay rolls
    it back when the socket closes, so nothing is half-written, the thread's row lock is free
    for the next hook, and the relay goes on serving."""
    home = tmp_path / "h"
    env = _env(pg_url, home)
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    relay = _start_relay(pg_url, env)
    try:
        assert _hook(env, {**base, "turn_id": "t0", "prompt": "first"}).returncode == 0
        killed = _hook({**env, "CONTINUATION_FAULT": "event.before_commit"},
                       {**base, "turn_id": "t1", "prompt": "second"})
        assert killed.returncode == -signal.SIGKILL
        assert _texts(pg_url, tmp_path) == ["first"]
        again = _hook(env, {**base, "turn_id": "t1", "prompt": "second"})
        assert again.returncode == 0 and json.loads(again.stdout) == {}, again.stderr
        assert _texts(pg_url, tmp_path) == ["first", "second"]
        state = _status(pg_url, env)
        assert state["pid"] == relay.pid and state["connections"] == 3
        assert pending(str(home)) == 0
    finally:
        _stop(relay)


def test_server_lost_while_relayed_hooks_wait_in_their_transaction(pg_cluster, pg_url,
                                                                    tmp_path):
    """Five prompts' hooks, through the relay, wait on the thread's row lock when the server
    is killed: each spools its payload (none counted lost) and the next hook that reaches
    the restarted server (through the same relay) drains all five, once each."""
    import psycopg

    from continuation.host import lost_writes
    from continuation.store import thread_key_for

    home = tmp_path / "laptop"
    env = _env(pg_url, home)
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    relay = _start_relay(pg_url, env)
    try:
        assert _hook(env, {**base, "turn_id": "t0", "prompt": "before"}).returncode == 0
        holder = psycopg.connect(pg_url)
        holder.execute("SELECT 1 FROM threads WHERE thread_key=%s FOR UPDATE",
                       (thread_key_for("codex", "sess"),))
        procs = [subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime",
                                   "codex"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True)
                 for _ in range(5)]
        for i, p in enumerate(procs, 1):
            p.stdin.write(json.dumps({**base, "turn_id": f"t{i}", "prompt": f"waiting {i}"}))
            p.stdin.close()
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
            assert _status(pg_url, env)["active"] == 5  # all five through the relay
            pg_cluster.kill()
            answers = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
        finally:
            for p in procs:
                p.kill() if p.poll() is None else None
            try:
                holder.close()
            except Exception:
                pass
            pg_cluster.restart_after_kill()
        assert [a[0] for a in answers] == [0] * 5, [a[2][-500:] for a in answers]
        assert all(json.loads(out) == {} for _, out, _ in answers), answers
        assert lost_writes.read(str(home))["lost"] == 0
        assert pending(str(home)) >= 5
        assert relay.poll() is None  # the relay outlived its server
        r = _hook(env, {**base, "turn_id": "t6", "prompt": "after"})
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        assert pending(str(home)) == 0
        assert _status(pg_url, env)["pid"] == relay.pid
    finally:
        _stop(relay)
    texts = _texts(pg_url, tmp_path)
    assert texts[0] == "before" and texts[-1] == "after"
    assert sorted(texts[1:-1]) == [f"waiting {i}" for i in range(1, 6)]


def test_another_user_is_refused(pg_url, tmp_path):
    """A process of another user that reaches the socket (the test opens the folder and the
    socket to everyone, as root, to get past the file modes) is refused by its peer
    credentials: no hello answer, counted in the relay's status."""
    if os.geteuid() != 0:
        pytest.skip("switching to another uid needs root (see the stubbed-uid test)")
    env = _env(pg_url, tmp_path / "h")
    relay = _start_relay(pg_url, env)
    folder = os.environ["CONTINUATION_RELAY_DIR"]
    path = relay_wire.socket_path(folder, pg_url)
    try:
        os.chmod(folder, 0o711)
        os.chmod(path, 0o777)
        pid = os.fork()
        if pid == 0:  # the other user
            code = 3
            try:
                os.setgid(65534)
                os.setuid(65534)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(10)
                sock.connect(path)
                try:  # the relay may close before the hello is even sent
                    relay_wire.send(sock, ["hello", relay_wire.PROTOCOL])
                    relay_wire.receive(sock)
                    code = 1  # answered: the check failed
                except (relay_wire.WireError, OSError):
                    code = 0  # refused
            except BaseException as exc:  # noqa: BLE001 - said on stderr, the exit code tells
                sys.stderr.write(f"the other user's process: {exc!r}\n")
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        os.chmod(folder, 0o700)
        state = _status(pg_url, env)
        assert state["refused"] == 1 and state["connections"] == 0
    finally:
        os.chmod(folder, 0o700)
        _stop(relay)


def test_peer_credentials_are_checked_with_a_stubbed_uid(monkeypatch):
    """The relay's check itself, for a machine where the tests cannot switch users: a peer
    whose SO_PEERCRED uid is not ours gets no answer and no server connection."""
    from continuation.store import relay

    server = relay.Relay("postgresql://u@/db?host=/nowhere", "/nonexistent/relay-x.sock", 60)
    checkouts = []
    monkeypatch.setattr(server, "checkout", lambda: checkouts.append(1))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    assert relay.peer_uid(ours) == os.getuid()  # the real credential of a real socket
    monkeypatch.setattr(relay, "peer_uid", lambda conn: os.getuid() + 1)
    server.active = 1
    relay_wire.send(theirs, ["hello", relay_wire.PROTOCOL])
    server.serve(ours)
    with pytest.raises((relay_wire.WireError, ConnectionResetError)):  # closed, unanswered
        relay_wire.receive(theirs)
    assert server.refused == 1 and server.connections == 0 and checkouts == []
    theirs.close()


def test_a_relay_folder_others_can_reach_is_not_used(pg_url, tmp_path, monkeypatch):
    """A folder not private to this user (another user could reach or replace the socket):
    no relay is started or used there, the hook connects itself, doctor says why."""
    folder = tmp_path / "shared-relays"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    env = _env(pg_url, tmp_path / "h", CONTINUATION_RELAY_DIR=str(folder))
    r = _hook(env, {"session_id": "sess", "cwd": "/tmp", "turn_id": "t",
                    "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    time.sleep(1)
    assert os.listdir(folder) == []
    assert _texts(pg_url, tmp_path) == ["hi"]
    doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert f"[!!] store.relay: the relay folder {folder} is not private" in doctor.stdout


def test_only_one_relay_runs(pg_url, tmp_path):
    env = _env(pg_url, tmp_path / "h")
    first = _start_relay(pg_url, env)
    try:
        second = subprocess.Popen([sys.executable, "-P", "-m", "continuation.store.relay"],
                                  env={**env, relay_client.URL_ENV: pg_url})
        assert second.wait(timeout=60) == 0  # the lock is taken: it leaves at once
        assert _status(pg_url, env)["pid"] == first.pid
    finally:
        _stop(first)


def test_the_relay_leaves_when_idle(pg_url, tmp_path):
    env = _env(pg_url, tmp_path / "h", CONTINUATION_RELAY_IDLE_S="3")
    relay = _start_relay(pg_url, env)
    r = _hook(env, {"session_id": "sess", "cwd": "/tmp", "turn_id": "t",
                    "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert r.returncode == 0, r.stderr
    assert relay.wait(timeout=60) == 0  # idle for 3 s: it left
    path = relay_wire.socket_path(os.environ["CONTINUATION_RELAY_DIR"], pg_url)
    assert not os.path.exists(path)
    assert _status(pg_url, env) is None
    assert _texts(pg_url, tmp_path) == ["hi"]


def _wait_for_relay(url, env) -> dict:
    deadline = time.monotonic() + 60
    while (state := _status(url, env)) is None:
        assert time.monotonic() < deadline, "no relay started"
        time.sleep(0.1)
    return state


def test_doctor_shows_the_relay(pg_url, tmp_path):
    env = _env(pg_url, tmp_path / "h")

    def relay_finding():
        doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor", "--json"],
                                env=env, capture_output=True, text=True, timeout=120)
        [item] = [f for f in json.loads(doctor.stdout)["findings"]
                  if f["check"] == "store.relay"]
        return item

    item = relay_finding()
    assert item["data"]["running"] is False and "not running" in item["message"]
    pid = _wait_for_relay(pg_url, env)["pid"]  # a command starts it too
    try:
        assert _hook(env, {"session_id": "sess", "cwd": "/tmp", "turn_id": "t",
                           "hook_event_name": "UserPromptSubmit", "prompt": "hi"}).returncode == 0
        before = _status(pg_url, env)
        item = relay_finding()
        assert item["status"] == "ok" and item["data"]["pid"] == pid
        assert item["data"]["connections"] == before["connections"] >= 1
        assert item["data"]["statements"] == before["statements"] > 0
        assert f"running, pid {pid}, since " in item["message"]
        assert f"{before['connections']} connection(s)" in item["message"]
    finally:
        os.kill(pid, signal.SIGTERM)
    off = {**env, "CONTINUATION_RELAY": "off"}
    doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=off,
                            capture_output=True, text=True, timeout=120)
    assert "store.relay: off (CONTINUATION_RELAY=off)" in doctor.stdout


def test_values_come_back_as_the_driver_gives_them(pg_url, tmp_path, monkeypatch):
    """Each column type the store reads, and the ones it might: through the relay the same
    Python values (and types) as psycopg gives in this process, plain rows and tagged ones."""
    import psycopg

    env = _env(pg_url, tmp_path / "h")
    relay = _start_relay(pg_url, env)
    try:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        conn = relay_client.connect(pg_url)
        queries = [
            ("SELECT %s::bigint, %s::double precision, %s::text, %s::boolean, NULL::text",
             (2 ** 62, 1.5, "t\udc80".encode("utf-8", "surrogateescape").decode(
                 "utf-8", "replace"), True)),
            ("SELECT %s::bigint[], %s::text[]", ([1, 2, 3], ["a", "b"])),
            ("SELECT %s::bytea, sum(x)::numeric, count(*) FROM generate_series(1, %s) x",
             (b"\x00\xffcapsule", 10)),
            ("SELECT '{\"a\": [1, {\"b\": 2}]}'::jsonb, '2026-01-02'::date", ()),
        ]
        with psycopg.connect(pg_url, autocommit=True) as direct:
            for sql, args in queries:
                want = direct.execute(sql, list(args)).fetchall()
                got = conn.execute(sql, args).fetchall()
                assert got == want and [type(v) for v in got[0]] == [type(v) for v in want[0]]
        conn.close()
    finally:
        _stop(relay)


def test_a_relay_that_does_not_answer_is_ended_and_the_hook_connects_itself(pg_url, tmp_path):
    """A relay stopped (SIGSTOP: it holds its socket, so the kernel still accepts, but answers
    nothing) does not hold a hook: past the hello's time-out (the URL's connect_timeout and a
    margin) the hook ends it and records directly; the next hook starts a fresh relay, and
    `doctor` answers too. Every acknowledged prompt is on the server once."""
    url = pg_url + "&connect_timeout=1"
    assert relay_client.hello_timeout(url) == 1 + relay_client.HELLO_MARGIN_S
    env = _env(url, tmp_path / "h")
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    relay = _start_relay(url, env)
    try:
        os.kill(relay.pid, signal.SIGSTOP)
        r = _hook(env, {**base, "turn_id": "t1", "prompt": "while it is stopped"})
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        assert relay.wait(timeout=30) == -signal.SIGKILL
        fresh = _wait_for_relay(url, env)
        assert fresh["pid"] != relay.pid
        os.kill(fresh["pid"], signal.SIGSTOP)
        doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=env,
                                capture_output=True, text=True, timeout=60)
        assert "[ok] store:" in doctor.stdout, doctor.stdout + doctor.stderr
        r = _hook(env, {**base, "turn_id": "t2", "prompt": "after"})
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    finally:
        _stop(relay)
    assert _texts(url, tmp_path) == ["while it is stopped", "after"]
    assert pending(str(tmp_path / "h")) == 0
    log = Path(relay_wire.socket_path(os.environ["CONTINUATION_RELAY_DIR"], url)[:-5] + ".log")
    assert f"ended relay pid={relay.pid}: no answer to its hello" in log.read_text()


def test_a_relay_silent_inside_a_transaction_is_a_lost_server(pg_url, tmp_path):
    """The relay hangs on a hook's COMMIT (holding the thread's row lock): past
    CONTINUATION_RELAY_WAIT_S the hook ends it and spools its payload (no lost write); the
    next hook drains it: the Stop's claim is on the server once."""
    from continuation.host import lost_writes

    home = tmp_path / "h"
    env = _env(pg_url, home, CONTINUATION_RELAY_WAIT_S="3")
    base = {"session_id": "sess", "cwd": "/tmp"}
    off = {**env, "CONTINUATION_RELAY": "off"}
    assert _hook(off, {**base, "hook_event_name": "UserPromptSubmit", "turn_id": "t1",
                       "prompt": "first"}).returncode == 0
    relay = _start_relay(pg_url, env, CONTINUATION_FAULT="relay.before_commit:hang")
    try:
        r = _hook(env, {**base, "hook_event_name": "Stop", "turn_id": "t1",
                        "last_assistant_message": "renamed the module"})
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        assert relay.wait(timeout=30) == -signal.SIGKILL
    finally:
        _stop(relay)
    assert lost_writes.read(str(home))["lost"] == 0
    assert pending(str(home)) >= 1
    assert "the relay did not answer within 3s" in (home / "logs" / "hooks.log").read_text()
    r = _hook(env, {**base, "hook_event_name": "UserPromptSubmit", "turn_id": "t2",
                    "prompt": "second"})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    assert pending(str(home)) == 0
    assert _texts(pg_url, tmp_path) == ["first", "second"]
    assert _claims(pg_url, tmp_path) == ["renamed the module"]


@pytest.mark.parametrize("way", ["relayed", "direct"])
def test_a_server_that_takes_no_writes_or_refuses_one_loses_nothing_silently(pg_cluster,
                                                                             tmp_path, way):
    """A server turned read-only (a standby, a failover; SQLSTATE 25006) is a lost server to
    a hook: its facts wait in the spool (no lost write) and drain once writes are taken
    again. A write the server refuses for its own reasons (here a trigger) cannot be kept:
    the hook counts it as a lost write and tells the user, as a full disk does."""
    import psycopg

    from continuation.host import lost_writes

    db = f"readonly_{way}_{os.getpid()}"
    url = pg_cluster.create_database(db)
    home = tmp_path / "h"
    env = _env(url, home, **({"CONTINUATION_RELAY": "off"} if way == "direct" else {}))
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    relay = _start_relay(url, env) if way == "relayed" else None

    def admin(sql):  # as a failover does: the sessions of the database are ended
        with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
            conn.execute(sql)
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                         " WHERE datname=%s", (db,))

    try:
        assert _hook(env, {**base, "turn_id": "t0", "prompt": "before"}).returncode == 0
        admin(f'ALTER DATABASE "{db}" SET default_transaction_read_only = on')
        for n in (1, 2):
            r = _hook(env, {**base, "turn_id": f"t{n}", "prompt": f"read-only {n}"})
            assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        assert pending(str(home)) >= 2 and lost_writes.read(str(home))["lost"] == 0
        admin(f'ALTER DATABASE "{db}" RESET default_transaction_read_only')
        assert _hook(env, {**base, "turn_id": "t3", "prompt": "writable"}).returncode == 0
        assert pending(str(home)) == 0
        assert _texts(url, tmp_path) == ["before", "read-only 1", "read-only 2", "writable"]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
                         " $$BEGIN RAISE EXCEPTION 'refused by policy'; END$$")
            conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON events"
                         " FOR EACH ROW EXECUTE FUNCTION refuse()")
        r = _hook(env, {**base, "turn_id": "t4", "prompt": "refused"})
        assert r.returncode == 0, r.stderr
        assert "could not" in json.loads(r.stdout).get("systemMessage", ""), r.stdout
        assert lost_writes.read(str(home))["lost"] == 1
    finally:
        if relay is not None:
            _stop(relay)
    assert _texts(url, tmp_path) == ["before", "read-only 1", "read-only 2", "writable"]


def test_a_relay_serves_only_the_connection_its_home_names(pg_cluster, tmp_path):
    """One URL naming a service (`?service=team`), two HOMEs whose ~/.pg_service.conf send it
    to two databases: libpq would connect each hook to its own, so each HOME gets its own
    relay; no fact lands in the other's database."""
    import psycopg

    dbs = {who: f"service_{who}_{os.getpid()}" for who in ("x", "y")}
    for who, db in dbs.items():
        pg_cluster.create_database(db)
        (tmp_path / who).mkdir()
        (tmp_path / who / ".pg_service.conf").write_text(
            f"[team]\nhost={pg_cluster.socket}\ndbname={db}\nuser=postgres\n")
    url = "postgresql:///?service=team"
    envs = {who: _env(url, tmp_path / f"state-{who}", HOME=str(tmp_path / who))
            for who in dbs}
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    pids = []
    try:
        for n, who in enumerate("xyxy"):
            r = _hook(envs[who], {**base, "turn_id": f"t{n}", "prompt": f"from {who} {n}"})
            assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
            pids.append(_wait_for_relay(url, envs[who])["pid"])
        assert pids[0] == pids[2] and pids[1] == pids[3] and pids[0] != pids[1]
    finally:
        for pid in set(pids):
            os.kill(pid, signal.SIGTERM)
    for who, db in dbs.items():
        with psycopg.connect(pg_cluster.url(db)) as conn:
            texts = [json.loads(d)["text"] for (d,) in conn.execute(
                "SELECT data FROM events WHERE type=%s ORDER BY seq", (ev.INPUT_ADMITTED,))]
        assert texts == [f"from {who} {n}" for n, w in enumerate("xyxy") if w == who]


def test_a_relay_whose_socket_was_removed_leaves_the_new_ones_alone(pg_url, tmp_path):
    """The relay folder removed under a running relay (a cleaner of /tmp): the next hook
    starts a new relay; the old one, unreachable, leaves once its last connection closes and
    does not take the new relay's socket with it."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="crelay-")) / "relays"  # a short socket path
    env = _env(pg_url, tmp_path / "h", CONTINUATION_RELAY_DIR=str(folder))
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    old = _start_relay(pg_url, env)
    path = relay_wire.socket_path(str(folder), pg_url)
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held.connect(path)  # a hook still connected: the old relay stays until it closes
    new = None
    try:
        time.sleep(0.5)
        shutil.rmtree(folder)
        assert _hook(env, {**base, "turn_id": "t1", "prompt": "first"}).returncode == 0
        new = _wait_for_relay(pg_url, env)["pid"]
        assert new != old.pid and old.poll() is None
        held.close()
        assert old.wait(timeout=30) == 0  # unreachable and unused: it left
        assert os.path.exists(path) and _status(pg_url, env)["pid"] == new
        assert _hook(env, {**base, "turn_id": "t2", "prompt": "second"}).returncode == 0
        assert _status(pg_url, env)["connections"] == 1  # the new relay served it
    finally:
        held.close()
        _stop(old)
        if new is not None:
            os.kill(new, signal.SIGTERM)
        shutil.rmtree(folder.parent, ignore_errors=True)
    assert _texts(pg_url, tmp_path) == ["first", "second"]


def test_a_runtime_folder_too_long_for_a_socket_falls_back_or_is_said(pg_url, tmp_path):
    """A socket's name holds ~100 bytes: with $XDG_RUNTIME_DIR and $TMPDIR too deep for one,
    the relay lives under /tmp (it ran nowhere before: every hook connected itself and spawned
    a relay that could not listen). A CONTINUATION_RELAY_DIR too deep is said by doctor, and
    no hook spawns a relay for it."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    env = {k: v for k, v in _env(pg_url, tmp_path / "h").items()
           if k != relay_wire.DIR_ENV}
    env.update(XDG_RUNTIME_DIR=str(deep), TMPDIR=str(deep))
    base = {"session_id": "sess", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}
    assert _hook(env, {**base, "turn_id": "t1", "prompt": "first"}).returncode == 0
    pid = _wait_for_relay(pg_url, env)["pid"]
    try:
        assert _hook(env, {**base, "turn_id": "t2", "prompt": "second"}).returncode == 0
        assert _status(pg_url, env)["connections"] == 1
        assert os.path.exists(f"/tmp/continuation-relay-{os.getuid()}")
    finally:
        os.kill(pid, signal.SIGTERM)
    named = {**env, relay_wire.DIR_ENV: str(deep / "relays")}
    assert _hook(named, {**base, "turn_id": "t3", "prompt": "third"}).returncode == 0
    assert not (deep / "relays").exists()  # no relay was spawned for it
    doctor = subprocess.run([sys.executable, "-m", "continuation", "doctor"], env=named,
                            capture_output=True, text=True, timeout=120)
    assert "[!!] store.relay: the relay folder" in doctor.stdout
    assert "too long a path for a socket's name" in doctor.stdout.replace("\n  ", " ")
    assert _texts(pg_url, tmp_path) == ["first", "second", "third"]
