"""A full disk, a read-only state home and a truncated store leave a
trace, are reported by ``doctor`` and told to the user once; nothing is lost silently."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from safety_harness import stored_calls

from continuation import hooks
from continuation.host import lost_writes
from continuation.commands.health import run_checks

SESSION = "disk-session"


def _pre_tool(i: int) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "session_id": SESSION, "cwd": "/",
                       "prompt_id": "p1", "tool_use_id": f"call-{i}", "tool_name": "Bash",
                       "tool_input": {"command": f"echo {i} " + "x" * 400}}).encode()


def _prompt() -> bytes:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "cwd": "/",
                       "prompt_id": "p1", "prompt": "go"}).encode()


def _finding(home: Path, check: str):
    found = [f for f in run_checks(home, project_dir=home, hooks=False) if f.check == check]
    return found[0] if found else None


def _answers(n: int) -> list[dict]:
    assert hooks.run("claude", _prompt())[1] == 0
    out = []
    for i in range(n):
        text, code = hooks.run("claude", _pre_tool(i))
        assert code == 0
        out.append(json.loads(text))
    return out


def _check_accounting(home: Path, answers: list[dict]) -> None:
    """Every hook answered; what is not stored is counted; the user was told exactly once."""
    told = [a for a in answers if a]
    assert all(set(a) == {"systemMessage"} for a in told)
    assert len(told) == 1 and "could not record" in told[0]["systemMessage"]
    record = lost_writes.read(home)
    stored = stored_calls(home)
    assert record["lost"] > 0
    assert stored + record["lost"] == len(answers)
    finding = _finding(home, "lost_writes")
    assert finding.status == "problem" and f"{record['lost']} hook event(s)" in finding.message


def mount_tmpfs(mount: Path, size: str) -> None:
    """A real small file system at ``mount``; the test is skipped where none can be mounted."""
    mount.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


@pytest.fixture
def tiny_tmpfs(tmp_path, monkeypatch):
    """A real 2 MiB file system as the state home."""
    mount = tmp_path / "tiny"
    mount_tmpfs(mount, "2m")
    monkeypatch.setenv("CONTINUATION_HOME", str(mount))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_really_full_disk_counts_every_lost_event_and_tells_once(tiny_tmpfs):
    answers = _answers(2000)
    _check_accounting(tiny_tmpfs, answers)
    home = _finding(tiny_tmpfs, "home")
    assert home.status == "problem" and "full" in home.message


def test_injected_full_disk_counts_lost_events(home, monkeypatch):
    assert hooks.run("claude", _prompt())[1] == 0
    answers = [json.loads(hooks.run("claude", _pre_tool(i))[0]) for i in range(5)]
    monkeypatch.setenv("CONTINUATION_FAULT", "event.before_commit:full")
    answers += [json.loads(hooks.run("claude", _pre_tool(i))[0]) for i in range(5, 12)]
    monkeypatch.delenv("CONTINUATION_FAULT")
    _check_accounting(home, answers)
    assert lost_writes.read(home)["lost"] == 7 and stored_calls(home) == 5
    # doctor --fix clears the report once seen; the next loss is told again
    fixed = [f for f in run_checks(home, project_dir=home, hooks=False, fix=True)
             if f.check == "lost_writes"]
    assert fixed[0].status == "ok" and lost_writes.read(home)["lost"] == 0


def test_the_trace_survives_when_nothing_else_can_be_written(home, monkeypatch):
    """The record is allocated with the store and overwritten in place: no new space needed."""
    assert hooks.run("claude", _prompt())[1] == 0
    trace = Path(lost_writes.trace_path(home))
    assert trace.stat().st_size == lost_writes.RECORD_BYTES
    monkeypatch.setenv("CONTINUATION_FAULT", "event.before_commit:full")
    for i in range(50):
        hooks.run("claude", _pre_tool(i))
    assert trace.stat().st_size == lost_writes.RECORD_BYTES
    assert lost_writes.read(home)["lost"] == 50


def test_malformed_payloads_are_not_lost_writes(home):
    out, code = hooks.run("claude", b"{nope")
    assert (out, code) == ("{}", 0)
    assert lost_writes.read(home)["lost"] == 0


def test_a_store_truncated_to_zero_bytes_is_said_not_silently_recreated(home):
    assert hooks.run("claude", _prompt())[1] == 0
    store = home / "store.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(f"{store}{extra}").unlink(missing_ok=True)
    store.write_bytes(b"")
    lost_writes.NOTICES.clear()
    try:
        first = json.loads(hooks.run("claude", _pre_tool(1))[0])
        assert "truncated to 0 bytes" in first.get("systemMessage", "")
    finally:
        lost_writes.NOTICES.clear()
    assert json.loads(hooks.run("claude", _pre_tool(2))[0]) == {}  # told once
    finding = _finding(home, "store.reset")
    assert finding.status == "problem" and "truncated to 0 bytes" in finding.message


def test_a_new_store_is_never_seen_empty(home):
    """Creation links a finished store in place: the first open is not a truncation."""
    assert hooks.run("claude", _prompt())[1] == 0
    assert lost_writes.read(home)["store_reset"] is None
    assert not [p for p in home.iterdir() if p.name.endswith(".new")]


def test_truncated_store_is_said_by_commands_too(home):
    hooks.run("claude", _prompt())
    (home / "store.sqlite3").write_bytes(b"")
    for extra in ("-wal", "-shm"):
        Path(f"{home / 'store.sqlite3'}{extra}").unlink(missing_ok=True)
    r = subprocess.run([sys.executable, "-m", "continuation", "status"], capture_output=True,
                       text=True, env={**os.environ, "CONTINUATION_HOME": str(home)})
    assert "truncated to 0 bytes" in r.stderr


@pytest.fixture
def read_only_home(tmp_path, monkeypatch):
    """A state home on a read-only file system (a tmpfs remounted read-only)."""
    mount = tmp_path / "ro"
    mount_tmpfs(mount, "4m")
    monkeypatch.setenv("CONTINUATION_HOME", str(mount))
    try:
        assert hooks.run("claude", _prompt())[1] == 0
        (mount / "workspaces" / "w1").mkdir(parents=True)
        (mount / "workspaces" / "w1" / "lock").write_bytes(b"")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_doctor_on_a_read_only_home_says_so_in_one_line(read_only_home):
    r = subprocess.run([sys.executable, "-m", "continuation", "doctor"], capture_output=True,
                       text=True, env={**os.environ, "CONTINUATION_HOME": str(read_only_home)})
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "cannot be written" in ln]
    assert len(lines) == 1 and "Read-only file system" in lines[0]
    assert "[ok] store.integrity" in r.stdout


def test_hooks_on_a_read_only_home_answer_and_tell_at_prompts(read_only_home):
    """Nothing can be remembered there: told at each prompt, not at every tool call."""
    text, code = hooks.run("claude", _pre_tool(1))
    assert (text, code) == ("{}", 0)
    text, code = hooks.run("claude", _prompt())
    assert code == 0 and "could not record" in json.loads(text)["systemMessage"]
