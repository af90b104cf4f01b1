"""A compaction's transcript pointer hashed by a child forked as the hook parses its payload
(continuation.boundary.transcript_hash): the same pointer the boundary computed itself, from the child
when it hashed the same path, computed in process otherwise; no child outlives its payload."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuation.boundary import transcript_hash
from continuation.session.engine import Engine
from continuation.install import default_command
from workspace_repos import git_home, make_repo  # noqa: F401 (git_home is a fixture)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def forking():
    """This process may fork the child now (Linux, one thread: an earlier test's daemon thread
    still running would make ``start_early`` hash nothing, as it should)."""
    from continuation.boundary.capsule_worker import can_fork

    if not can_fork():
        pytest.skip("the child is forked on Linux, from a process running one thread")


needs_fork = pytest.mark.usefixtures("forking")


def _transcript(tmp_path: Path, size: int = 3 << 20) -> Path:
    path = tmp_path / "session.jsonl"
    line = json.dumps({"type": "user", "message": {"content": "x" * 500}}).encode() + b"\n"
    path.write_bytes(line * (size // len(line)))
    return path


def _expected(path: Path) -> dict:
    data = path.read_bytes()
    return {"transcript_path": str(path), "transcript_offset": len(data),
            "transcript_prefix_sha256": hashlib.sha256(data).hexdigest()}


@needs_fork
def test_the_early_childs_pointer_is_the_one_computed_in_process(tmp_path, monkeypatch):
    path = _transcript(tmp_path)
    computed = []
    real_compute = transcript_hash.compute
    transcript_hash.start_early(str(path))
    assert transcript_hash._early is not None
    # the child hashed it: this process computes nothing
    monkeypatch.setattr(transcript_hash, "compute", lambda p: computed.append(p) or real_compute(p))
    assert transcript_hash.pointer(str(path)) == _expected(path)
    assert computed == [] and transcript_hash._early is None


@needs_fork
def test_another_path_or_no_child_is_hashed_in_process(tmp_path):
    path, other = _transcript(tmp_path), tmp_path / "other.jsonl"
    other.write_bytes(b'{"type": "user"}\n')
    transcript_hash.start_early(str(path))
    assert transcript_hash.pointer(str(other)) == _expected(other)  # the child is reaped too
    assert transcript_hash._early is None
    assert transcript_hash.pointer(str(path)) == _expected(path)  # no child: in process
    assert transcript_hash.pointer(None) is None and transcript_hash.pointer("") is None


@needs_fork
def test_a_transcript_that_cannot_be_read_gives_its_path_alone(tmp_path):
    for missing in (tmp_path / "gone.jsonl", tmp_path):  # absent; a folder
        transcript_hash.start_early(str(missing))
        assert transcript_hash.pointer(str(missing)) == {"transcript_path": str(missing)}
        assert transcript_hash.compute(str(missing)) == {"transcript_path": str(missing)}


@pytest.mark.parametrize("answer", [b"", b"12", b"12 abc", b"x " + b"0" * 64, b"5 " + b"G" * 64])
def test_an_answer_that_is_not_a_pointer_is_not_used(tmp_path, answer):
    """A child that died, or wrote something else, leaves the hashing to this process."""
    path = _transcript(tmp_path, 4096)
    read_end, write_end = os.pipe()
    os.write(write_end, answer)
    os.close(write_end)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # (reaped already: _answer's own wait finds no child, and says nothing)
    assert transcript_hash._answer(str(path), child.pid, read_end) is None
    transcript_hash._early = (str(path), child.pid, os.open(os.devnull, os.O_RDONLY))
    assert transcript_hash.pointer(str(path)) == _expected(path)  # hashed here instead


@needs_fork
def test_a_child_nobody_took_is_reaped_by_discard(tmp_path):
    path = _transcript(tmp_path)
    transcript_hash.start_early(str(path))
    _, pid, _ = transcript_hash._early
    transcript_hash.discard_early()
    assert transcript_hash._early is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


@needs_fork
def test_in_process_hooks_leave_no_child_for_a_later_payload(tmp_path, monkeypatch):
    """``hooks.run`` that does not end the process: a compaction whose boundary never took the
    child's answer (here: no thread to checkpoint) does not hand it to a later boundary."""
    from continuation import hooks

    monkeypatch.setenv("CONTINUATION_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("CONTINUATION_CAPSULE_WORKER", "0")
    path = _transcript(tmp_path)
    started = []
    real_start = transcript_hash.start_early
    def start_and_note(p):
        real_start(p)
        started.append((p, transcript_hash._early is not None))  # a child was forked

    monkeypatch.setattr(transcript_hash, "start_early", start_and_note)
    monkeypatch.setattr("continuation.hooks.handlers.handle", lambda *a, **k: None)
    out, code = hooks.run("claude", json.dumps({
        "session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto", "cwd": str(tmp_path),
        "transcript_path": str(path)}).encode())
    assert code == 0 and started == [(str(path), True)]
    assert transcript_hash._early is None


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                    reason="the forked child and worker need Linux and 2 CPUs")
def test_a_precompact_hooks_checkpoint_points_at_the_transcript_prefix(git_home, tmp_path):
    home, repo = git_home, make_repo(tmp_path / "repo", {"a.py": "one\n"})
    with Engine(home) as e:
        t = e.thread("claude", "s", workspace_root=str(repo))
        t.admit("tidy the module", turn_id="t1", source="test")
    path = _transcript(tmp_path)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CONTINUATION_STORE", "CONTINUATION_CAPSULE_WORKER")}
    env.update(CONTINUATION_HOME=str(home), PYTHONPATH=str(ROOT))
    r = subprocess.run([*default_command(), "hook", "--runtime", "claude"], input=json.dumps({
        "session_id": "s", "hook_event_name": "PreCompact", "trigger": "auto", "cwd": str(repo),
        "transcript_path": str(path)}).encode(), capture_output=True, env=env, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
    with Engine(home) as e:
        from continuation.boundary import checkpoints

        cp = checkpoints.newest_checkpoint(e.find_thread("claude", "s"))
        source = json.loads(bytes(cp.capsule_bytes))["source"]
    expected = _expected(path)
    assert {k: source[k] for k in expected} == expected


@needs_fork
def test_a_fork_that_fails_leaves_no_descriptor_and_the_boundary_hashes(tmp_path, monkeypatch):
    path = _transcript(tmp_path, 4096)
    before = set(os.listdir("/proc/self/fd"))

    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    transcript_hash.start_early(str(path))
    assert transcript_hash._early is None
    assert set(os.listdir("/proc/self/fd")) == before
    assert transcript_hash.pointer(str(path)) == _expected(path)


@needs_fork
def test_the_child_holds_none_of_the_hooks_standard_descriptors(tmp_path):
    """The runtime reads the hook's stdout and stderr to EOF: the child, still hashing, holds
    /dev/null there, not the hook's pipes."""
    path = tmp_path / "big.jsonl"
    with open(path, "wb") as fh:
        fh.truncate(256 << 20)  # sparse: hashing it takes a while, writing it does not
    transcript_hash.start_early(str(path))
    _, pid, _ = transcript_hash._early
    import time

    try:
        deadline, seen = time.monotonic() + 5, {}
        while time.monotonic() < deadline:  # the child redirects them first thing after fork
            try:
                seen = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)}
            except OSError:
                break  # ended: it never showed /dev/null while alive
            if set(seen.values()) == {"/dev/null"}:
                break
            time.sleep(0.0005)
        assert set(seen.values()) == {"/dev/null"}, seen  # seen while it still hashed
    finally:
        found = transcript_hash.pointer(str(path))
    assert found["transcript_offset"] == 256 << 20


@pytest.mark.parametrize("bad", [5, ["x"], {"p": 1}, "a\x00b", True])
def test_a_transcript_path_that_names_no_file_still_gets_its_checkpoint(tmp_path, monkeypatch,
                                                                         bad):
    """A payload's ``transcript_path`` that is no string, or a string no file can have, is no
    transcript: the compaction's checkpoint is committed and the Stop completes its turn all the
    same (both hooks failed on it before)."""
    from continuation.boundary import checkpoints
    from continuation import hooks

    monkeypatch.setenv("CONTINUATION_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("CONTINUATION_CAPSULE_WORKER", "0")
    base = {"session_id": "odd", "turn_id": "t1", "cwd": str(tmp_path), "transcript_path": bad}
    for payload in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "go on"},
                    {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                     "tool_input": {"command": "ls"}, "tool_use_id": "c1"},
                    {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                     "tool_input": {"command": "ls"}, "tool_use_id": "c1", "tool_response": "x"},
                    {**base, "hook_event_name": "PreCompact", "trigger": "auto"},
                    {**base, "hook_event_name": "Stop", "last_assistant_message": "done"}):
        out, code = hooks.run("codex", json.dumps(payload).encode())
        assert (out, code) == ("{}", 0)
    with Engine(tmp_path / "state") as e:
        thread = e.find_thread("codex", "odd")
        cp = checkpoints.newest_checkpoint(thread)
        source = json.loads(bytes(cp.capsule_bytes))["source"]
        assert [r.state for r in thread.inputs()] == ["handled"]  # the Stop completed the turn
    assert cp is not None
    assert source.get("transcript_offset") is None  # no file was read
    assert not (tmp_path / "state" / "logs" / "hooks.log").exists()
