"""A snapshot killed with SIGKILL at any point leaves the user's git untouched; the next one works."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from continuation.workspace import take_snapshot
from continuation.workspace.layout import StateLayout
from workspace_repos import UserGitState, assert_untouched, git, git_home, make_repo, write  # noqa: F401

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

SCRIPT = """
import sys, time
from pathlib import Path
from continuation.workspace import take_snapshot, treebuild
root, home, stage, marker = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
def pause(name):
    if name == stage:
        marker.write_text(name, encoding="utf-8")
        time.sleep(120)
treebuild._stage_hook = pause
take_snapshot(root, "t1-abc", 1, state_home=home)
"""


def _dirty_repo(tmp_path: Path, files: int = 300) -> Path:
    repo = make_repo(tmp_path / "repo", {f"d{i % 10}/f{i}.txt": f"{i}\n" * 20 for i in range(files)})
    write(repo, {"d1/f1.txt": "staged\n"})
    git(repo, "add", "d1/f1.txt")
    write(repo, {"d1/f1.txt": "staged then edited\n", "d2/f2.txt": "edited\n", "new/a.txt": "new\n"})
    return repo


def _check_recovery(repo: Path, home: Path, before: UserGitState) -> None:
    assert_untouched(before, repo)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=home, lock_timeout=10)
    assert_untouched(before, repo)
    assert git(repo, "show", f"{ref.snapshot_commit}:d1/f1.txt") == "staged then edited\n"
    assert git(repo, "show", f"{ref.snapshot_commit}:new/a.txt") == "new\n"
    assert git(repo, "rev-parse", "refs/continuation/t1-abc/1").strip() == ref.snapshot_commit
    layout = StateLayout.for_root(home, repo.resolve())
    assert list(layout.tmp_dir.iterdir()) == []
    assert not list(layout.threads_dir.glob("*.lock"))


@pytest.mark.parametrize("stage", ["seeded", "status", "update-index", "write-tree", "commit-tree", "update-ref"])
def test_killed_at_each_stage(git_home, tmp_path, stage):
    repo = _dirty_repo(tmp_path)
    before = UserGitState.capture(repo)
    marker = tmp_path / "reached"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(repo), str(git_home), stage, str(marker)])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "snapshot process ended before reaching the stage"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    _check_recovery(repo, git_home, before)


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3])
def test_killed_while_git_runs(git_home, tmp_path, delay):
    repo = _dirty_repo(tmp_path, files=2000)
    before = UserGitState.capture(repo)
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(repo), str(git_home), "never", str(tmp_path / "m")])
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    _check_recovery(repo, git_home, before)


def test_stale_lock_files_from_a_killed_snapshot_are_cleared(git_home, tmp_path):
    repo = _dirty_repo(tmp_path, files=20)
    take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    layout = StateLayout.for_root(git_home, repo.resolve())
    (repo / ".git" / "refs" / "continuation" / "t1-abc" / "1.lock").write_text("stale", encoding="utf-8")
    (layout.threads_dir / "t1-abc.index.lock").write_text("stale", encoding="utf-8")
    (layout.tmp_dir / "t1-abc.123.456.index.lock").write_text("stale", encoding="utf-8")
    before = UserGitState.capture(repo)
    _check_recovery(repo, git_home, before)
    assert not (repo / ".git" / "refs" / "continuation" / "t1-abc" / "1.lock").exists()


KILL_DURING_GIT = """
import os, signal, sys, threading, time
from continuation.workspace import take_snapshot, treebuild
root, home, stage = sys.argv[1], sys.argv[2], sys.argv[3]
def arm(name):
    if name == stage:  # the next git command starts now: die while it runs
        threading.Thread(target=lambda: (time.sleep(0.004), os.kill(os.getpid(), signal.SIGKILL)), daemon=True).start()
treebuild._stage_hook = arm
take_snapshot(root, "t1-abc", 1, state_home=home)
time.sleep(60)  # the kill is due 4 ms after the stage: a fast machine may finish first, never exit
"""


@pytest.mark.parametrize("stage", ["seeded", "status", "update-index", "write-tree", "commit-tree"])
def test_killed_while_its_git_child_runs(git_home, tmp_path, stage):
    """The hook process dies mid-command; its git child is orphaned and may still finish."""
    repo = _dirty_repo(tmp_path, files=1500)
    before = UserGitState.capture(repo)
    proc = subprocess.run([sys.executable, "-c", KILL_DURING_GIT, str(repo), str(git_home), stage], timeout=120)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.5)  # let an orphaned git child finish whatever it was doing
    _check_recovery(repo, git_home, before)
