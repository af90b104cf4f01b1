"""A boundary's work on the log before it gathers (``commit_checkpoint(before_gathering=...)``:
a compaction settling calls from its transcript) runs once, while git scans the work tree, and
the capsule holds its effect; a failure before the capsule is committed gives the snapshot's
claimed generation back."""
from __future__ import annotations

import pytest

from continuation.boundary import crossing as boundary, checkpoints
from continuation.host import phase_marks
from continuation.session.engine import Engine
from workspace_repos import git, git_home, make_repo  # noqa: F401 (git_home is a fixture)


@pytest.fixture
def thread_on_repo(git_home, tmp_path, monkeypatch):
    monkeypatch.setenv("CONTINUATION_CAPSULE_WORKER", "0")  # in process: one interpreter to watch
    repo = make_repo(tmp_path / "repo", {"a.py": "one\n"})
    engine = Engine(git_home)
    thread = engine.thread("codex", "s", workspace_root=str(repo))
    thread.admit("run the checks", turn_id="t1", source="test")
    thread.tool_started("c1", "Bash", {"command": "make check"}, turn_id="t1", source="test")
    yield thread, repo, tmp_path
    engine.close()


def test_it_runs_once_while_git_scans_and_the_capsule_holds_its_effect(thread_on_repo, monkeypatch):
    thread, repo, tmp_path = thread_on_repo
    marks = tmp_path / "marks"
    monkeypatch.setenv(phase_marks.VARIABLE, str(marks))
    # the wait for git's scan is bounded; a loaded machine must not make this test race it
    monkeypatch.setattr(boundary, "SCAN_START_WAIT_S", 120.0)
    seen = []

    def settle():
        seen.append([label for *_, label in phase_marks.read(marks)])
        thread.tool_finished("c1", "error", exit_code=2, turn_id="t1", source="test")

    cp = boundary.commit_checkpoint(thread, reason="auto", before_gathering=settle)
    [labels] = seen  # once
    assert "snapshot: git scan starting" in labels and "boundary: source gathered" not in labels
    capsule = checkpoints.load(thread, cp.generation).capsule
    assert not capsule.tool_calls  # settled: no call left without an outcome
    assert [(w.status, w.exit_code) for w in capsule.work_done] == [("error", 2)]
    assert cp.workspace and cp.workspace.get("snapshot_commit")


def test_a_failure_before_the_commit_gives_the_claimed_generation_back(thread_on_repo):
    thread, repo, _ = thread_on_repo

    def broken():
        raise RuntimeError("the transcript could not be read")

    with pytest.raises(RuntimeError, match="could not be read"):
        boundary.commit_checkpoint(thread, reason="auto", before_gathering=broken)
    assert checkpoints.newest_checkpoint(thread) is None
    assert git(repo, "for-each-ref", "refs/continuation/") == ""  # no snapshot ref left behind
    cp = boundary.commit_checkpoint(thread, reason="auto")  # the next one takes generation 1
    assert cp.generation == 1 and cp.workspace.get("snapshot_commit")
