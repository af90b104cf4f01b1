"""A restore applied at once scans the work tree once.

``plan_restore(..., at_once=True)`` takes the safety snapshot first and reads the preview off it
(``workspace.safety_first``). These tests hold that preview to the one ``git status`` against the
checkpoint gives, over random changes of every kind a session makes (hypothesis), check that the
shortcut is taken where it can be (and the scan where it cannot), and that the apply leaves
alone what changed after the safety snapshot, and takes a new one when the plan's is stale.
"""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from continuation.workspace import WorkspacePolicy, apply_restore, index_cache, plan_restore, safety_first, take_snapshot
from continuation.workspace import gitrun
from continuation.workspace.compare import open_snapshot_target, status_against_snapshot
from continuation.workspace.workspace_target import resolve_workspace
from workspace_repos import git, git_commands, git_home, make_repo, write  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the shortcut is POSIX only")

FILES = ["a.txt", "b.txt", "src/c.py", "src/d.py", "src/deep/e.py", "run.sh", "docs/f.md"]
NEW = ["n1.txt", "src/n2.py", "newdir/n3.txt", "newdir/sub/n4.txt", "x.log", "logs/y.txt"]
CAP = 200  # the checkpoint's size cap: a file written past it is recorded, not stored


def make(tmp_path):
    repo = make_repo(tmp_path / "repo", {**{p: f"{p} v1\n" for p in FILES}, ".gitignore": "*.log\nlogs/\n"})
    os.chmod(repo / "run.sh", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "modes")
    write(repo, {"untracked-at-cp.txt": "u\n", "src/big.bin": "B" * (CAP + 10)})
    return repo


def change(repo, op: str, path: str) -> None:
    full = repo / path
    if full.is_dir() and not full.is_symlink() and op != "nested":
        return  # a folder made by an earlier change: left as it is
    if full.is_symlink() and op in ("edit", "grow", "add", "commit"):
        full.unlink()  # write a file, not through the link
    if op == "edit":
        write(repo, {path: f"{path} edited\n"})
    elif op == "delete" and full.is_file():
        full.unlink()
    elif op == "chmod" and full.is_file() and not full.is_symlink():
        os.chmod(full, 0o755 if not os.access(full, os.X_OK) else 0o644)
    elif op == "symlink":
        if full.is_file() or full.is_symlink():
            full.unlink()
        full.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("link-target", full)
    elif op == "grow":
        write(repo, {path: "G" * (CAP + 1)})
    elif op == "add":  # the user's index tracks it now (git add -f: ignored ones too)
        write(repo, {path: f"{path} added\n"})
        git(repo, "add", "-f", "--", path)
    elif op == "commit":
        write(repo, {path: f"{path} committed\n"})
        git(repo, "add", "-f", "--", path)
        git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {path}")
    elif op == "folder" and full.is_file():  # a folder with a file where a file was
        full.unlink()
        write(repo, {f"{path}/inside.txt": "x\n"})
    elif op == "nested":
        nested = repo / "nested"
        if not nested.exists():
            make_repo(nested, {"inner.txt": "i\n"})


OPS = st.sampled_from(["edit", "delete", "chmod", "symlink", "grow", "add", "commit", "folder", "edit", "nested"])
PATHS = st.sampled_from([*FILES, *NEW, "untracked-at-cp.txt", "src/big.bin"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.lists(st.tuples(OPS, PATHS), min_size=1, max_size=6),
       created=st.lists(st.sampled_from(NEW + FILES), max_size=3))
def test_the_preview_read_off_the_safety_snapshot_is_the_scans(tmp_path_factory, git_home, changes, created):
    repo = make(tmp_path_factory.mktemp("t"))
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home, policy=WorkspacePolicy(size_cap_bytes=CAP))
    for op, path in changes:
        change(repo, op, path)
    scanned = plan_restore(ref, state_home=git_home, session_created=created)
    at_once = plan_restore(ref, state_home=git_home, session_created=created, at_once=True)
    assert at_once.taken is not None and scanned.taken is None
    assert at_once.to_dict() == scanned.to_dict()
    # and where the shortcut answers, its listing is git status's, entry by entry
    ws = resolve_workspace(repo, git_home)
    target = open_snapshot_target(ws, ref)
    read_off = safety_first.status_from_safety(target, at_once.taken, in_progress=False)
    event("read off the safety snapshot" if read_off is not None else "scanned")
    if read_off is not None:
        status = status_against_snapshot(target, ref, at_once.taken.tree)
        # (a path the work tree has as the checkpoint does, y ".", is no change to restore)
        assert [_fields(e) for e in read_off.entries] == [
            _fields(e) for e in status.entries if not (e.kind == "1" and e.y == ".")]


def _fields(entry):
    return entry.kind, entry.path, entry.y, entry.mode_index, entry.mode_worktree, entry.hash_index


def test_the_shortcut_is_taken_for_plain_changes_and_not_where_it_cannot_tell(tmp_path, git_home, git_commands):
    """Edits, deletions, new files, mode and type changes, a file the user committed: no
    ``git status`` against the checkpoint. A checkpoint file that is ignored now (so the safety
    snapshot does not store it): the preview scans."""
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home, policy=WorkspacePolicy(size_cap_bytes=CAP))
    for op, path in [("edit", "a.txt"), ("delete", "b.txt"), ("edit", "n1.txt"), ("chmod", "src/c.py"),
                     ("symlink", "src/d.py"), ("commit", "newdir/n3.txt"), ("grow", "src/n2.py"),
                     ("nested", "")]:
        change(repo, op, path)
    git_commands.clear()
    plan = plan_restore(ref, state_home=git_home, session_created=["n1.txt"], at_once=True)
    assert git_commands.count("status") == 1  # the safety snapshot's scan, and no other
    assert (plan.modified, plan.recreated, plan.deleted) == (["a.txt", "src/d.py"], ["b.txt"], ["n1.txt"])
    assert [m.path for m in plan.mode_changes] == ["src/c.py"]
    assert "newdir/n3.txt" in plan.kept and "nested" in {s.path for s in plan.skipped}

    git(repo, "rm", "-q", "--cached", "docs/f.md")
    write(repo, {".gitignore": "*.log\nlogs/\ndocs/\n"})
    git_commands.clear()
    plan_restore(ref, state_home=git_home, at_once=True)
    assert git_commands.count("status") == 2  # docs/f.md is not in the safety snapshot: scanned


def test_apply_leaves_alone_what_changed_after_the_safety_snapshot(tmp_path, git_home):
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"a.txt": "broken\n", "b.txt": "broken\n", "agent.txt": "the agent's\n"})
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.txt"], at_once=True)
    assert (plan.modified, plan.deleted) == (["a.txt", "b.txt"], ["agent.txt"])
    write(repo, {"b.txt": "the user typed this meanwhile\n", "agent.txt": "edited meanwhile\n"})
    result = apply_restore(plan, state_home=git_home, derive_tree=True)

    assert result.safety.snapshot_commit == plan.taken.ref.snapshot_commit  # no second snapshot
    assert (repo / "a.txt").read_text() == "a.txt v1\n"
    assert (repo / "b.txt").read_text() == "the user typed this meanwhile\n"
    assert (repo / "agent.txt").read_text() == "edited meanwhile\n"
    assert {s.path: s.reason for s in result.skipped} == {
        "agent.txt": "changed after the safety snapshot; left as is",
        "b.txt": "changed after the safety snapshot; left as is"}
    assert result.restored == ["a.txt"] and result.deleted == []
    assert git(repo, "show", f"{result.safety.snapshot_commit}:b.txt") == "broken\n"
    assert result.tree_after is None  # what changed meanwhile is in neither tree: scanned next


def test_apply_at_once_derives_the_tree_it_leaves(tmp_path, git_home):
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"a.txt": "broken\n", "agent.txt": "the agent's\n", "user.txt": "the user's\n"})
    (repo / "b.txt").unlink()
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.txt"], at_once=True)
    result = apply_restore(plan, state_home=git_home, derive_tree=True)
    assert (result.restored, result.recreated, result.deleted) == (["a.txt"], ["b.txt"], ["agent.txt"])
    scan = take_snapshot(repo, "scan-check", 1, state_home=git_home)
    assert result.tree_after.built.tree == scan.snapshot_tree != ref.snapshot_tree


@pytest.mark.parametrize("why", ["stale", "another snapshot"])
def test_apply_takes_the_safety_snapshot_again_when_the_plans_cannot_be_used(tmp_path, git_home, monkeypatch, why):
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"a.txt": "broken\n"})
    plan = plan_restore(ref, state_home=git_home, at_once=True)
    write(repo, {"b.txt": "changed after the plan\n"})
    if why == "stale":  # held, e.g. to ask the user
        import continuation.workspace.restore as restore
        monkeypatch.setattr(restore, "FRESH_FOR_S", 0.0)
    else:  # the thread's kept index is another snapshot's (of another tree) now
        take_snapshot(repo, "t1-abc", 2, state_home=git_home)
    result = apply_restore(plan, state_home=git_home)
    assert result.safety.snapshot_commit != plan.taken.ref.snapshot_commit
    assert git(repo, "show", f"{result.safety.snapshot_commit}:b.txt") == "changed after the plan\n"
    assert (repo / "a.txt").read_text() == "a.txt v1\n"
    assert {s.path: s.reason for s in result.skipped} == {"b.txt": "changed after the plan was made; left as is"}


def test_a_whole_restore_at_once_writes_no_index_and_a_later_preview_is_right(tmp_path, git_home, git_commands):
    """Every difference carried out at once: the tree left is the checkpoint's, with no index
    written for it (only the scratch index git checkout-index writes from); a later preview
    re-points an index and finds nothing to do."""
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"a.txt": "broken\n", "agent.txt": "the agent's\n"})
    (repo / "b.txt").unlink()
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.txt"], at_once=True)
    git_commands.clear()
    result = apply_restore(plan, state_home=git_home, derive_tree=True)
    assert result.tree_after.built.tree == ref.snapshot_tree
    assert git_commands.count("write-tree") == 0 and git_commands.count("update-index") == 1
    git_commands.clear()
    again = plan_restore(ref, state_home=git_home, session_created=["agent.txt"])
    assert again.is_empty and not again.kept and "read-tree" in git_commands
    assert take_snapshot(repo, "scan-check", 1, state_home=git_home).snapshot_tree == ref.snapshot_tree


@pytest.mark.parametrize("by_name", [True, False])
def test_changed_since_names_the_paths_or_compares_the_whole_index(tmp_path, git_home, monkeypatch, by_name):
    """Few paths are named to ``git diff-files``; many (or long) ones compare the whole index,
    the answer the same: the asked paths that changed, nothing else."""
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    if not by_name:
        monkeypatch.setattr(safety_first, "PATH_BYTES_BY_NAME", 1)
    write(repo, {"a.txt": "changed\n", "b.txt": "changed\n"})
    (repo / "src" / "c.py").unlink()
    ws = resolve_workspace(repo, git_home)
    target = open_snapshot_target(ws, ref)
    index = index_cache.recall(ws.layout, "t1-abc", ref.snapshot_tree)
    assert safety_first.changed_since(target, index, ["a.txt", "src/c.py", "docs/f.md"]) == {"a.txt", "src/c.py"}


def test_when_git_cannot_tell_the_ignore_rules_the_preview_scans(tmp_path, git_home, monkeypatch, git_commands):
    repo = make(tmp_path)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    change(repo, "commit", "n1.txt")  # new, and tracked by the user's index: its ignore rules are asked
    run = gitrun.GitTarget.run
    monkeypatch.setattr(gitrun.GitTarget, "run", lambda self, args, **kw: (
        (128, b"", "fatal") if "check-ignore" in args else run(self, args, **kw)))
    git_commands.clear()
    plan = plan_restore(ref, state_home=git_home, at_once=True)
    assert plan.kept == ["n1.txt"]
    assert git_commands.count("status") == 2 and plan.taken is not None  # the safety's, then the scan
