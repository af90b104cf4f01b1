"""Session owners: the runtime process behind a hook, and whether it is still alive."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from continuation.host.liveness import marker as session_marker
from continuation.host import liveness

HAS_PROC = os.path.isdir("/proc/self")


def _fake_proc(root, pid, comm, ppid, argv, start="1000", state="S"):
    d = root / str(pid)
    d.mkdir(parents=True)
    rest = [state, str(ppid)] + ["0"] * 17 + [start, "0"]
    (d / "stat").write_bytes(f"{pid} ({comm}) {' '.join(rest)}".encode())
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")


@pytest.fixture
def fake_proc(tmp_path, monkeypatch):
    root = tmp_path / "proc"
    root.mkdir()
    monkeypatch.setattr(liveness, "PROC", str(root))
    return root


def test_walks_up_past_sh_c_and_env_to_the_runtime(fake_proc):
    _fake_proc(fake_proc, 500, "node", 1, ["node", "/usr/bin/claude"], start="777")
    _fake_proc(fake_proc, 600, "sh", 500, ["/bin/sh", "-c", "env X=1 continuation hook"])
    _fake_proc(fake_proc, 700, "env", 600, ["env", "X=1", "continuation", "hook"])
    assert liveness.runtime_pid(700) == 500
    assert liveness.proc_start(500) == "777"
    assert liveness.parent_pid(600) == 500


def test_bash_lc_is_a_wrapper_an_interactive_shell_is_an_owner(fake_proc):
    _fake_proc(fake_proc, 10, "codex", 1, ["codex"])
    _fake_proc(fake_proc, 11, "bash", 10, ["bash", "-lc", "continuation hook"])
    assert liveness.runtime_pid(11) == 10
    _fake_proc(fake_proc, 20, "sshd", 1, ["sshd"])
    _fake_proc(fake_proc, 21, "bash", 20, ["-bash"])  # a login shell someone types into
    assert liveness.runtime_pid(21) == 21


def test_walk_stops_at_init_and_after_a_bounded_number_of_steps(fake_proc):
    _fake_proc(fake_proc, 30, "sh", 1, ["sh", "-c", "x"])
    assert liveness.runtime_pid(30) == 30  # a wrapper whose parent is init: keep the wrapper
    for pid in range(100, 100 + liveness.MAX_WALK + 5):
        _fake_proc(fake_proc, pid, "sh", pid - 1 if pid > 100 else 1, ["sh", "-c", "x"])
    assert liveness.runtime_pid(100 + liveness.MAX_WALK + 4) >= 100


def test_zombie_counts_as_gone(fake_proc):
    me = os.getpid()
    _fake_proc(fake_proc, me, "python", 1, ["python"], state="Z")
    assert not liveness.pid_alive(me)


def test_without_proc_only_the_pid_is_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(liveness, "PROC", str(tmp_path / "absent"))
    assert liveness.runtime_pid() == os.getppid()
    assert liveness.proc_start(os.getpid()) is None
    marker = liveness.marker(os.getpid())
    assert marker["proc_start"] is None
    assert liveness.owner_status(marker) == liveness.ALIVE


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_owner_status():
    me = liveness.marker(os.getpid())
    assert liveness.owner_status(me) == liveness.ALIVE
    assert liveness.owner_status({**me, "pid": _dead_pid(), "proc_start": None}) == liveness.DEAD
    assert liveness.owner_status({**me, "host": "elsewhere"}) == liveness.UNKNOWN
    import time  # another host (a shared store): judged only once it has been silent too long

    recent, silent = time.time() - 60, time.time() - liveness.REMOTE_SILENCE_S - 60
    assert liveness.owner_status({**me, "host": "elsewhere", "heartbeat": recent}) == \
        liveness.UNKNOWN
    assert liveness.owner_status({**me, "host": "elsewhere", "heartbeat": silent}) == \
        liveness.DEAD
    assert liveness.owner_status({**me, "pid": 0}) == liveness.DEAD
    if HAS_PROC:  # same pid, another start time: the pid was reused by another process
        assert liveness.owner_status({**me, "proc_start": "1"}) == liveness.DEAD


def test_hostname_matches_the_engine_marker():
    assert session_marker(os.getpid())["host"] == liveness.hostname()


@pytest.mark.skipif(not HAS_PROC or shutil.which("sh") is None, reason="needs /proc and sh")
def test_real_chain_runtime_sh_c_hook(tmp_path):
    """A runtime process runs the hook through `sh -c`, as Claude Code and Codex do: the
    marker names the runtime, not the shell."""
    hook = (f"{shlex.quote(sys.executable)} -c 'import json; from continuation.host.liveness import "
            f"marker; print(json.dumps(marker()))'; true")
    runtime = ("import os, subprocess, sys, json; "
               f"out = subprocess.run(['sh', '-c', {hook!r}], capture_output=True, text=True).stdout; "
               "print(json.dumps({'runtime': os.getpid(), 'marker': json.loads(out)}))")
    r = subprocess.run([sys.executable, "-c", runtime], capture_output=True, text=True, timeout=60)
    data = json.loads(r.stdout)
    assert data["marker"]["pid"] == data["runtime"]
    assert data["marker"]["proc_start"] is not None
