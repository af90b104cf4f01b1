"""Phase marks (continuation.host.phase_marks): with CONTINUATION_PHASE_MARKS set, a PreCompact hook
and its capsule worker write the boundary's phases in the order they happen, each line naming
its process and its boundary's; unset, or on the hot path, nothing is written; a mark that
cannot be written never fails the boundary."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuation.host import phase_marks
from continuation.session.engine import Engine
from continuation.install import default_command
from workspace_repos import git_home, make_repo  # noqa: F401 (git_home is a fixture)
from conftest import usable_cpus

ROOT = Path(__file__).resolve().parents[1]


def test_a_mark_is_written_only_when_asked_for(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    monkeypatch.delenv(phase_marks.VARIABLE, raising=False)
    phase_marks.mark("not asked")
    assert not marks.exists()
    monkeypatch.setenv(phase_marks.VARIABLE, str(marks))
    phase_marks.mark("first phase")
    phase_marks.mark("second phase")
    got = phase_marks.read(marks)
    assert [label for *_, label in got] == ["first phase", "second phase"]
    assert all(pid == os.getpid() == boundary for _, pid, boundary, _ in got)
    assert got[0][0] <= got[1][0]


def test_a_worker_marks_under_its_boundarys_process(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    monkeypatch.setenv(phase_marks.VARIABLE, str(marks))
    monkeypatch.setattr(phase_marks, "boundary_pid", 4242)
    phase_marks.mark("worker: started")
    [(_, pid, boundary, label)] = phase_marks.read(marks)
    assert (pid, boundary, label) == (os.getpid(), 4242, "worker: started")


def test_a_mark_that_cannot_be_written_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv(phase_marks.VARIABLE, str(tmp_path))  # a folder: open() fails
    phase_marks.mark("nowhere")  # no exception
    monkeypatch.setenv(phase_marks.VARIABLE, str(tmp_path / "missing" / "marks"))
    phase_marks.mark("nowhere either")
    assert not (tmp_path / "missing").exists()


@pytest.fixture
def hook_env(git_home, tmp_path):
    home, repo = git_home, make_repo(tmp_path / "repo", {"a.py": "one\n"})
    with Engine(home) as e:
        t = e.thread("claude", "s", workspace_root=str(repo))
        for i in range(20):
            t.admit(f"request {i}: tidy module {i}", turn_id=f"t{i}", source="test")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONTINUATION_STORE", "CONTINUATION_CAPSULE_WORKER", phase_marks.VARIABLE)}
    env.update(CONTINUATION_HOME=str(home), PYTHONPATH=str(ROOT),
               CONTINUATION_PHASE_MARKS=str(tmp_path / "marks"))
    return env, repo, tmp_path / "marks"


def _hook(env, payload: dict) -> subprocess.CompletedProcess:
    return subprocess.run([*default_command(), "hook", "--runtime", "claude"],
                          input=json.dumps(payload).encode(), capture_output=True, env=env,
                          timeout=120)


@pytest.mark.skipif(sys.platform != "linux" or usable_cpus() < 2,
                    reason="the forked capsule worker needs Linux and 2 CPUs")
def test_a_precompact_hook_marks_its_phases_in_the_order_they_happen(hook_env):
    env, repo, marks = hook_env
    r = _hook(env, {"session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto",
                    "cwd": str(repo), "transcript_path": ""})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
    lines = phase_marks.read(marks)
    hook_pid = lines[0][1]
    hook = [label for _, pid, _, label in lines if pid == hook_pid]
    worker = [(pid, boundary, label) for _, pid, boundary, label in lines if pid != hook_pid]
    assert all(boundary == hook_pid for _, _, boundary, _ in lines)  # one boundary's lines
    assert {pid for pid, _, _ in worker} and len({pid for pid, _, _ in worker}) == 1
    assert [label for *_, label in worker] == [
        "worker: started", "worker: models ready", "worker: tokenizer ready",
        "worker: request received", "worker: capsule built"] or [
        label for *_, label in worker] == [  # a thread whose capsules fit by the bytes bound
        "worker: started", "worker: models ready", "worker: request received",
        "worker: capsule built"]
    # the boundary's thread and the snapshot's run side by side: each in its own order, and
    # where one waits for the other
    boundary_thread = ["hook: payload read", "boundary: started",
                       "boundary: snapshot's git scan started", "boundary: source gathered",
                       "boundary: snapshot done", "boundary: capsule received",
                       "boundary: committed", "hook: answered"]
    snapshot_thread = ["snapshot: thread started", "snapshot: git scan starting",
                       "snapshot: tree written", "snapshot: committed"]
    assert sorted(hook) == sorted(boundary_thread + snapshot_thread)  # each once
    for sequence in (boundary_thread, snapshot_thread):
        assert [h for h in hook if h in sequence] == sequence
    at = {label: ns for ns, _, _, label in lines}
    assert at["boundary: started"] <= at["snapshot: thread started"]
    assert at["snapshot: git scan starting"] <= at["boundary: snapshot's git scan started"]
    assert at["snapshot: committed"] <= at["boundary: snapshot done"]
    # and across the two processes: the worker started after the payload was read, the
    # request after the snapshot, the capsule received after the worker built it
    assert at["hook: payload read"] <= at["worker: started"]
    assert at["boundary: snapshot done"] <= at["worker: request received"]
    assert at["worker: capsule built"] <= at["boundary: capsule received"]


def test_the_hot_path_marks_nothing(hook_env):
    env, repo, marks = hook_env
    r = _hook(env, {"session_id": "s", "hook_event_name": "PreToolUse", "cwd": str(repo),
                    "tool_name": "Bash", "tool_use_id": "c1", "tool_input": {"command": "ls"}})
    assert r.returncode == 0, r.stderr[-2000:]
    assert not marks.exists()


def test_an_unwritable_marks_file_leaves_the_boundary_whole(hook_env, tmp_path):
    env, repo, _ = hook_env
    env = {**env, "CONTINUATION_PHASE_MARKS": str(tmp_path)}  # a folder
    r = _hook(env, {"session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto",
                    "cwd": str(repo), "transcript_path": ""})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
    with Engine(Path(env["CONTINUATION_HOME"])) as e:
        from continuation.boundary import checkpoints

        cp = checkpoints.newest_checkpoint(e.find_thread("claude", "s"))
        assert cp is not None and checkpoints.verify(cp) is None
        assert cp.workspace and cp.workspace.get("snapshot_commit")
    assert not (Path(env["CONTINUATION_HOME"]) / "logs" / "hooks.log").exists()


def _trace(*options: str) -> tuple[str, list[str]]:
    """The trace script's output on a small setup, and the phases its timeline lists."""
    import re

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "trace_precompact.py"), *options,
                        "--files", "60", "--size", "256", "--events", "60", "--rounds", "2",
                        "--warm-rounds", "0"], capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != phase_marks.VARIABLE})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, [m.group(1) for line in r.stdout.splitlines() if (m := re.match(
        r"\s*[\d.]+\s+[\d.]+-\s*[\d.]+\s+(?:hook|worker)\s+(.+)$", line))]


def test_the_trace_script_prints_the_timeline():
    out, phases = _trace()
    assert "`git stash create`" in out
    order = ["hook: payload read", "boundary: committed", "hook: answered"]
    assert [p for p in phases if p in order] == order


def test_the_trace_script_traces_a_files_rewind():
    """``--rewind``: the rewind's own phases, its worker's and its checkpoint's, a phase
    reached twice (the safety snapshot's commit, then the checkpoint's) told apart."""
    out, phases = _trace("--rewind")
    assert "`git restore`" in out
    order = ["rewind: planning", "rewind: files planned", "rewind: files restored",
             "rewind: recorded", "boundary: committed", "rewind: done"]
    assert [p for p in phases if p in order] == order
    assert "snapshot: committed" in phases and "snapshot: committed #2" in phases


def _modules_once_the_worker_ended(marks: Path) -> dict[str, set[str]]:
    """The module lists of a boundary; the worker writes its own as it ends, after the hook's
    process (which closes its request pipe)."""
    import time

    deadline = time.monotonic() + 60
    while True:
        found = phase_marks.modules_marked(marks)
        if "the worker" in found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform != "linux" or usable_cpus() < 2,
                    reason="the forked capsule worker needs Linux and 2 CPUs")
def test_what_a_precompact_hook_and_its_worker_both_import_is_imported_before_the_fork(hook_env):
    """A module both processes import after the fork is imported twice, on the two cores a
    boundary shares with git (``capsule_worker.SHARED_MODULES``)."""
    from continuation.boundary.capsule_worker import SHARED_MODULES

    env, repo, marks = hook_env
    r = _hook(env, {"session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto",
                    "cwd": str(repo), "transcript_path": ""})
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
    found = _modules_once_the_worker_ended(marks)
    at_fork, hook, worker = (found["the boundary at its worker's fork"], found["the boundary"],
                             found["the worker"])
    assert {name for name in SHARED_MODULES if name in hook} <= at_fork
    # each process imported what only it needs after the fork (the lists are whole)
    assert "pydantic" in worker - hook and "sqlite3" in hook - worker
    assert at_fork <= hook and at_fork <= worker
    both = sorted((hook & worker) - at_fork)
    assert both == [], " ".join(both)
