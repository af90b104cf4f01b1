"""Which threads are interrupted: open work, every owner dead, no clean end."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from continuation.boundary import crossing as boundary
from continuation.commands import run as cli
from continuation.recovery import interrupted
from continuation.host import liveness


def dead() -> dict:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return {"pid": p.pid, "proc_start": "12345", "host": liveness.hostname()}


def alive() -> dict:
    return liveness.marker(os.getpid())


def started(engine, sid, marker, *, finish=False, root=None):
    t = engine.thread("claude", sid, workspace_root=root)
    t.admit("build it", input_id=f"{sid}-p1", turn_id=f"{sid}-p1", session=marker)
    t.tool_started(f"{sid}-c1", "Bash", {"command": "make"}, turn_id=f"{sid}-p1", session=marker)
    if finish:
        t.tool_finished(f"{sid}-c1", "ok", session=marker)
        t.turn_completed(f"{sid}-p1", session=marker)
    return t


def keys(engine):
    return [i.thread_key for i in interrupted.detect(engine)]


def test_open_work_and_a_dead_owner_is_interrupted(engine):
    t = started(engine, "dead", dead())
    [item] = interrupted.detect(engine)
    assert item.thread_key == t.key and item.status == interrupted.NEEDS_CRASH
    assert "is gone without a clean end" in item.reason
    assert item.owners[0]["owner"] == liveness.DEAD
    assert interrupted.record_crash(t, item)
    assert not interrupted.record_crash(t, interrupted.examine(t))  # once only
    assert [r.state for r in t.inputs()] == ["reconciling"]
    assert [c.status for c in t.tool_calls()] == ["unknown"]
    again = interrupted.examine(t)
    assert again.status == interrupted.CRASHED
    assert [c["call_id"] for c in again.unknown_calls] == ["dead-c1"]
    # the dead owner's marker is closed: the log says the crash happened, nothing more to judge
    assert all(s["ended_at"] for s in engine.store.sessions(t.key))


def test_not_interrupted(engine):
    started(engine, "live", alive())                       # the owner still runs
    started(engine, "done", dead(), finish=True)           # a clean end: the turn completed
    started(engine, "remote", {"pid": 1, "proc_start": None, "host": "another-host"})
    t = engine.thread("claude", "api")                     # no marker at all: never judged
    t.admit("x", input_id="api-p1", turn_id="api-p1")
    ended = started(engine, "ended", dead())               # SessionEnd closed its marker
    engine.store.end_sessions(ended.key)
    assert keys(engine) == []


def test_a_reused_pid_is_not_the_owner(engine):
    if not os.path.isdir("/proc/self"):
        pytest.skip("start times come from /proc")
    marker = {**alive(), "proc_start": "1"}  # our pid, but another process start
    t = started(engine, "reused", marker)
    assert keys(engine) == [t.key]


def test_one_live_owner_among_dead_ones_keeps_the_thread(engine):
    t = started(engine, "mixed", dead())
    t.claim("working", session=alive())
    assert keys(engine) == []


def test_dismissed_and_resumed_threads_leave_the_list(engine):
    t = started(engine, "a", dead())
    interrupted.record_crash(t, interrupted.examine(t))
    assert keys(engine) == [t.key]
    interrupted.dismiss(t, "handled by hand")
    assert keys(engine) == []
    t2 = started(engine, "b", dead())
    interrupted.record_crash(t2, interrupted.examine(t2))
    t2.record("session_started", {"source": "resume"}, session=alive())  # a resume took it over
    assert keys(engine) == []


def test_settled_after_the_crash_is_not_listed(engine):
    t = engine.thread("claude", "settled")
    m = dead()
    t.admit("look", input_id="p1", turn_id="p1", session=m)
    t.tool_started("c1", "Read", {"file_path": "a"}, turn_id="p1", session=m)
    t.turn_completed("p1", session=m)  # completed with the call open: reconciling
    t.tool_started("c2", "Bash", {"command": "make"}, session=m)  # a call outside any turn
    item = interrupted.examine(t)
    interrupted.record_crash(t, item)
    assert {c["call_id"] for c in interrupted.examine(t).unknown_calls} == {"c1", "c2"}
    t.reconcile("c1", "applied")
    t.reconcile("c2", "not_applied")
    assert [r.state for r in t.inputs()] == ["handled"]
    assert interrupted.examine(t) is None


def test_workspace_filter(engine, tmp_path):
    a = started(engine, "wa", dead(), root=str(tmp_path / "a"))
    started(engine, "wb", dead(), root=str(tmp_path / "b"))
    found = interrupted.detect(engine, workspace_root=str(tmp_path / "a"))
    assert [i.thread_key for i in found] == [a.key]


def test_recover_reports_drift_since_the_checkpoint(home, engine, tmp_path, capsys):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "root"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    (repo / "app.py").write_text("v1\n", encoding="utf-8")
    t = started(engine, "drift", dead(), root=str(repo))
    boundary.commit_checkpoint(t, reason="auto")  # with a workspace snapshot
    (repo / "app.py").write_text("v2\n", encoding="utf-8")  # changed after the checkpoint
    (repo / "new.txt").write_text("n\n", encoding="utf-8")
    capsys.readouterr()
    assert cli(["recover", "--json"]) == 0
    [item] = json.loads(capsys.readouterr().out)["interrupted"]
    assert item["drift"]["modified"] == ["app.py"] and item["drift"]["added"] == ["new.txt"]
    assert item["drift"]["outside_session"] == ["app.py", "new.txt"]
    assert item["resume_command"] == "claude --resume drift"
    assert cli(["recover"]) == 0
    out = capsys.readouterr().out
    assert "drift since the checkpoint: 2 file(s) changed" in out
    assert cli(["recover", "--no-drift", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["interrupted"][0]["drift"] is None


def test_recover_with_nothing_to_do(home, capsys):
    assert cli(["recover"]) == 0
    assert capsys.readouterr().out.strip() == "no interrupted threads"
    assert cli(["recover", "--resume", "nope"]) == 1
    assert "no thread matches" in capsys.readouterr().err


def test_session_start_notice_is_short_and_names_no_user_text(engine, tmp_path):
    from continuation.recovery.notices import PREFIX_LIMIT
    from continuation.recovery.session_start import at_session_start

    root = str(tmp_path)
    for n in range(12):
        started(engine, f"old{n}", dead(), root=root)
    me = alive()
    new = engine.thread("claude", "fresh", workspace_root=root)
    new.record("session_started", {"source": "startup"}, session=me)
    text = at_session_start(new, marker=me)
    assert 0 < len(text) <= PREFIX_LIMIT
    assert "interrupted" in text and "build it" not in text
    assert text.endswith("(see `continuation recover`)]")
    assert keys(engine) and all(k != new.key for k in keys(engine))
    # the other threads were only reported: their crash is recorded by `continuation recover`
    assert all(ev["type"] != "crash_detected" for k in keys(engine)
               for ev in engine.get_thread(k).events())


def test_a_damaged_workspace_reference_does_not_break_recover(home, engine, capsys):
    t = started(engine, "badref", dead())
    boundary.commit_checkpoint(t, reason="auto", snapshot=False)
    engine.store.conn.execute("UPDATE checkpoints SET workspace='{not json' WHERE thread_key=?", (t.key,))
    capsys.readouterr()
    assert cli(["recover", "--record", "--json"]) == 0
    [item] = json.loads(capsys.readouterr().out)["interrupted"]
    assert item["last_checkpoint"]["workspace"] is None and item["drift"] is None
    from continuation.recovery import reconcile

    assert [i.call_id for i in reconcile.pending(t)] == ["badref-c1"]
