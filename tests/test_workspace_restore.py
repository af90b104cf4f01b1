"""Restore: preview first, safety snapshot, contents and modes back, only session files deleted."""

from __future__ import annotations

import os
import sys

import pytest

from continuation.workspace import (
    RestoreUnavailable,
    WorkspacePolicy,
    apply_restore,
    delete_thread_refs,
    drift,
    list_snapshot_refs,
    plan_restore,
    plan_undo,
    prune_thread_refs,
    take_snapshot,
)
from workspace_repos import UserGitState, assert_untouched, git, git_home, make_repo, worktree_files, write  # noqa: F401


@pytest.fixture
def repo(git_home, tmp_path):
    root = make_repo(
        tmp_path / "repo",
        {"src/app.py": "print('v1')\n", "README.md": "readme\n", "run.sh": "#!/bin/sh\n", ".gitignore": "*.log\nbuild/\n"},
    )
    write(root, {"notes.txt": "untracked at checkpoint\n", "old.log": "ignored at checkpoint\n"})
    return root


def test_the_plan_calls_while_scanning_as_the_work_tree_scan_starts(repo, git_home, monkeypatch):
    """A rewind starts its warm-up thread from ``while_scanning``: after the plan's own work
    before git's scan of the work tree, right before that scan, once."""
    from continuation.workspace import compare, restore

    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('v2')\n"})
    order = []
    scan = compare.status_against_snapshot

    def status(*args, **kwargs):
        order.append("scan")
        return scan(*args, **kwargs)

    monkeypatch.setattr(restore, "status_against_snapshot", status)
    plan = plan_restore(ref, state_home=git_home, while_scanning=lambda: order.append("called"))
    assert order == ["called", "scan"] and plan.modified == ["src/app.py"]


def test_dry_run_changes_nothing(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('v2')\n", "agent.py": "x\n"})
    (repo / "README.md").unlink()
    state, files = UserGitState.capture(repo), worktree_files(repo)
    index_mtime = (repo / ".git" / "index").stat().st_mtime_ns

    plan = plan_restore(ref, state_home=git_home, session_created=["agent.py"])

    assert (plan.modified, plan.recreated, plan.deleted) == (["src/app.py"], ["README.md"], ["agent.py"])
    assert "modify    src/app.py" in plan.describe() and "delete    agent.py" in plan.describe()
    assert_untouched(state, repo)
    assert worktree_files(repo) == files
    assert (repo / ".git" / "index").stat().st_mtime_ns == index_mtime
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/continuation/").split() == ["refs/continuation/t1-abc/1"]


def test_restore_deletes_only_files_the_session_created(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    at_checkpoint = UserGitState.capture(repo)
    write(repo, {
        "named-by-engine.py": "tool wrote me\n",      # in session_created
        "seen-in-later-snapshot.py": "later\n",       # in generation 2 of this thread: no evidence
        "notes.txt": "untracked, edited\n",           # existed at checkpoint: restored, not deleted
        "fresh.log": "ignored, created later\n",      # ignored: never touched even if named
        "build/out.o": "ignored folder\n",
        "newdir/deep/agent.txt": "agent\n",           # folder created by the session
    })
    take_snapshot(repo, "t1-abc", 2, state_home=git_home)
    take_snapshot(repo, "t9-other", 1, state_home=git_home)  # another thread's snapshot is no evidence
    write(repo, {"other-thread-only.txt": "x\n", "user-made.txt": "user's own\n"})  # no evidence: kept
    take_snapshot(repo, "t9-other", 2, state_home=git_home)

    plan = plan_restore(
        ref, state_home=git_home,
        session_created=[repo / "named-by-engine.py", "fresh.log", "build/out.o", "newdir/deep/agent.txt"],
    )
    assert plan.deleted == ["named-by-engine.py", "newdir/deep/agent.txt"]
    # a later snapshot records the user's own new files too: it is no evidence of the agent
    assert plan.kept == ["other-thread-only.txt", "seen-in-later-snapshot.py", "user-made.txt"]
    assert plan.modified == ["notes.txt"]

    result = apply_restore(plan, state_home=git_home)

    assert result.ok and sorted(result.deleted) == plan.deleted
    assert not (repo / "named-by-engine.py").exists()
    assert (repo / "seen-in-later-snapshot.py").read_text() == "later\n"
    assert not (repo / "newdir").exists()  # emptied folder that did not exist at the checkpoint
    assert (repo / "user-made.txt").read_text() == "user's own\n"
    assert (repo / "other-thread-only.txt").exists()
    assert (repo / "notes.txt").read_text() == "untracked at checkpoint\n"
    assert (repo / "fresh.log").read_text() == "ignored, created later\n"
    assert (repo / "old.log").read_text() == "ignored at checkpoint\n"
    assert (repo / "build" / "out.o").exists()
    (repo / "user-made.txt").unlink()
    (repo / "other-thread-only.txt").unlink()
    (repo / "seen-in-later-snapshot.py").unlink()
    assert_untouched(at_checkpoint, repo)


def test_safety_snapshot_undoes_a_restore(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('agent')\n", "agent.py": "a\n", "user.txt": "u\n"})
    (repo / "README.md").unlink()
    before_restore_files, before_restore_state = worktree_files(repo), UserGitState.capture(repo)

    result = apply_restore(plan_restore(ref, state_home=git_home, session_created=["agent.py"]), state_home=git_home)
    assert result.safety.snapshot_ref.startswith("refs/continuation/t1-abc/safety/")
    assert sorted(result.recreated) == ["README.md"] and result.restored == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('v1')\n"

    undo = plan_undo(result, state_home=git_home)
    assert undo.deleted == ["README.md"] and undo.recreated == ["agent.py"] and undo.modified == ["src/app.py"]
    undone = apply_restore(undo, state_home=git_home)
    assert undone.ok
    assert worktree_files(repo) == before_restore_files
    assert_untouched(before_restore_state, repo)


@pytest.mark.skipif(sys.platform == "win32", reason="no executable bit on Windows")
def test_modes_are_restored_and_mode_only_changes_listed(repo, git_home):
    os.chmod(repo / "run.sh", 0o755)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    os.chmod(repo / "run.sh", 0o644)
    os.chmod(repo / "README.md", 0o755)
    write(repo, {"README.md": "changed too\n"})
    plan = plan_restore(ref, state_home=git_home)
    assert {(m.path, m.current_mode, m.checkpoint_mode) for m in plan.mode_changes} == {
        ("run.sh", "100644", "100755"), ("README.md", "100755", "100644")}
    assert plan.modified == ["README.md"]  # run.sh: same content, mode only
    apply_restore(plan, state_home=git_home)
    assert os.stat(repo / "run.sh").st_mode & 0o111 and not os.stat(repo / "README.md").st_mode & 0o111
    assert (repo / "README.md").read_text() == "readme\n"


def test_files_changed_after_the_plan_are_left_alone(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('agent')\n", "agent.py": "a\n"})
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.py"])
    write(repo, {"README.md": "user edited after the preview\n", "agent.py": "x\n"})
    (repo / "agent.py").unlink()
    result = apply_restore(plan, state_home=git_home)
    assert result.restored == ["src/app.py"]
    assert (repo / "README.md").read_text() == "user edited after the preview\n"
    assert {s.path for s in result.skipped} == {"README.md", "agent.py"}


def test_restore_of_collected_snapshot_is_a_clear_error(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    ref.snapshot_commit = "0" * 40
    with pytest.raises(RestoreUnavailable, match="gone"):
        plan_restore(ref, state_home=git_home)


def test_drift_lists_changes_since_the_checkpoint(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    assert drift(ref, state_home=git_home).clean
    write(repo, {"src/app.py": "print('v2')\n", "agent.py": "a\n", "user.txt": "u\n", "more.log": "ignored\n"})
    (repo / "README.md").unlink()
    state = UserGitState.capture(repo)
    report = drift(ref, state_home=git_home, session_paths=["agent.py", "src/app.py"])
    assert_untouched(state, repo)
    assert (report.modified, report.added, report.deleted) == (["src/app.py"], ["agent.py", "user.txt"], ["README.md"])
    assert report.outside_session == ["README.md", "user.txt"]
    assert not report.head_moved and not report.branch_changed
    git(repo, "checkout", "-q", "-b", "elsewhere")
    assert drift(ref, state_home=git_home).branch_changed


def test_retention_deletes_only_that_threads_refs(repo, git_home):
    for generation in range(1, 5):
        write(repo, {"src/app.py": f"print({generation})\n"})
        take_snapshot(repo, "t1-abc", generation, state_home=git_home)
    other = take_snapshot(repo, "t2-def", 1, state_home=git_home)
    assert prune_thread_refs(repo, "t1-abc", keep=2, state_home=git_home) == 2
    assert [r.generation for r in list_snapshot_refs(repo, state_home=git_home, thread_key="t1-abc")] == [3, 4]
    assert delete_thread_refs(repo, "t1-abc", state_home=git_home) == 2
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/continuation/").split() == ["refs/continuation/t2-def/1"]
    assert drift(other, state_home=git_home) is not None


def test_metadata_and_none_checkpoints_cannot_be_restored(repo, git_home):
    meta = take_snapshot(repo, "t1-abc", 1, state_home=git_home, policy=WorkspacePolicy(mode="metadata"))
    none = take_snapshot(repo, "t1-abc", 2, state_home=git_home, policy=WorkspacePolicy(mode="none"))
    assert git(repo, "for-each-ref", "refs/continuation/") == ""
    for ref in (meta, none):
        with pytest.raises(RestoreUnavailable):
            plan_restore(ref, state_home=git_home)


def test_restore_never_removes_unbacked_files_in_the_way(repo, git_home):
    write(repo, {"out": "a file at the checkpoint\n", "cfg/settings": "s\n"})
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    (repo / "out").unlink()
    write(repo, {"out/cache.log": "ignored file inside a folder where a file was\n"})
    (repo / "cfg" / "settings").unlink()
    (repo / "cfg").rmdir()
    write(repo, {"cfg": "x"})
    git(repo, "config", "--add", "core.excludesFile", str(repo / ".git" / "extra-ignore"))
    (repo / ".git" / "extra-ignore").write_text("cfg\n", encoding="utf-8")  # the blocking file is ignored
    plan = plan_restore(ref, state_home=git_home)
    # the file standing where the folder was, and the folder with files where the file was,
    # are left alone, and the preview already says so (preview and restore agree)
    assert plan.recreated == [] and {"out", "cfg/settings"} <= {s.path for s in plan.skipped}
    result = apply_restore(plan, state_home=git_home)
    assert (repo / "out" / "cache.log").exists() and (repo / "cfg").read_text() == "x"
    assert result.recreated == [] and result.ok


def test_load_snapshot_by_name_keeps_what_was_not_stored(repo, git_home):
    from continuation.workspace import load_snapshot

    write(repo, {"huge.bin": b"z" * 5000, "skip.tmp": "t\n"})
    policy = WorkspacePolicy(size_cap_bytes=1000, exclude=("*.tmp",))
    taken = take_snapshot(repo, "t1-abc", 4, state_home=git_home, policy=policy)
    for name in ("t1-abc/4", "refs/continuation/t1-abc/4", taken.snapshot_commit):
        loaded = load_snapshot(repo, name, state_home=git_home)
        assert loaded.snapshot_commit == taken.snapshot_commit and loaded.snapshot_tree == taken.snapshot_tree
        assert [o.path for o in loaded.oversized] == ["huge.bin"] and loaded.exclude_patterns == ["*.tmp"]
        assert (loaded.thread_key, loaded.generation, loaded.head, loaded.branch) == ("t1-abc", 4, taken.head, "main")
    write(repo, {"huge.bin": b"q" * 10, "README.md": "agent\n"})
    plan = plan_restore(load_snapshot(repo, "t1-abc/4", state_home=git_home), state_home=git_home)
    assert plan.modified == ["README.md"] and "huge.bin" in {s.path for s in plan.skipped}
    for bad in ("t1-abc/99", "refs/heads/main", git(repo, "rev-parse", "HEAD").strip(), "--help"):
        with pytest.raises(RestoreUnavailable):
            load_snapshot(repo, bad, state_home=git_home)


def test_comparison_index_reuses_stat_data(repo, git_home):
    """Plan and drift must not re-hash the whole tree: matching entries keep their stat data."""
    from continuation.workspace.compare import checkpoint_index
    from continuation.workspace.workspace_target import content_target, resolve_workspace

    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('agent')\n"})
    git(repo, "add", "src/app.py")  # the user's index now differs from the snapshot and the tree
    write(repo, {"src/app.py": "print('agent again')\n"})
    ws = resolve_workspace(repo, git_home)
    target = content_target(ws, create=False)
    scratch = ws.layout.tmp_dir / "probe.index"
    checkpoint_index(target, scratch, ref.snapshot_tree, ref.thread_key)
    debug = git(repo, "ls-files", "--debug", "README.md", "src/app.py", env={"GIT_INDEX_FILE": str(scratch)})
    readme, app = debug.split("src/app.py")
    assert "mtime: 0:0" not in readme  # unchanged file: stat data kept
    assert git(repo, "ls-files", "-s", "src/app.py", env={"GIT_INDEX_FILE": str(scratch)}).split()[1] == git(
        repo, "rev-parse", f"{ref.snapshot_commit}:src/app.py").strip()


def test_latest_snapshot_is_the_highest_generation(repo, git_home):
    from continuation.workspace import latest_snapshot

    assert latest_snapshot(repo, "t1-abc", state_home=git_home) is None
    for generation in (2, 10, 9):
        write(repo, {"README.md": f"gen {generation}\n"})
        take_snapshot(repo, "t1-abc", generation, state_home=git_home)
    apply_restore(plan_restore(latest_snapshot(repo, "t1-abc", state_home=git_home), state_home=git_home), state_home=git_home)
    latest = latest_snapshot(repo, "t1-abc", state_home=git_home)
    assert latest.generation == 10 and git(repo, "show", f"{latest.snapshot_commit}:README.md") == "gen 10\n"


def test_a_file_ignored_since_the_checkpoint_is_never_overwritten(repo, git_home):
    """The safety snapshot stores no ignored file: a file untracked at the checkpoint that the
    user has since ignored (and changed) would be lost for good if the restore wrote it."""
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)  # notes.txt: untracked, stored
    write(repo, {".gitignore": "*.log\nbuild/\nnotes.txt\n", "notes.txt": "the user's newer notes\n",
                 "src/app.py": "print('v2')\n"})
    plan = plan_restore(ref, state_home=git_home)
    assert "notes.txt" in plan.modified  # the preview compares with the checkpoint's copy
    result = apply_restore(plan, state_home=git_home)
    assert (repo / "notes.txt").read_text() == "the user's newer notes\n"
    assert "notes.txt" in {s.path for s in result.skipped} and "notes.txt" not in result.restored
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n" and result.ok
