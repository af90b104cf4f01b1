"""A restore preview of the thread's last snapshot tree compares
through that snapshot's kept index instead of building one with ``git read-tree``; the preview
is the same either way, and a kept index that does not match its record is not used."""
from __future__ import annotations

import os

import pytest

from continuation.workspace import apply_restore, plan_restore, take_snapshot
from continuation.workspace import index_cache
from continuation.workspace.workspace_target import resolve_workspace
from workspace_repos import git_commands, git_home, make_repo, write  # noqa: F401


@pytest.fixture
def repo(git_home, tmp_path):
    root = make_repo(tmp_path / "repo", {"src/app.py": "v1\n", "README.md": "readme\n", "run.sh": "#!/bin/sh\n"})
    write(root, {"notes.txt": "untracked at the checkpoint\n"})
    return root


def damage(repo):
    write(repo, {"src/app.py": "v2\n", "notes.txt": "edited\n", "agent.py": "new\n"})
    (repo / "README.md").unlink()
    os.chmod(repo / "run.sh", 0o755)


def plan_of(plan):
    d = plan.to_dict()
    d.pop("checkpoint")
    return d


def test_preview_of_the_last_snapshot_uses_its_kept_index(repo, git_home, git_commands):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    damage(repo)
    git_commands.clear()
    cached = plan_restore(ref, state_home=git_home, session_created=["agent.py"])
    assert "read-tree" not in git_commands
    layout = resolve_workspace(repo, git_home).layout
    layout.thread_record("t1-abc").unlink()  # no kept index: built with read-tree, as before
    git_commands.clear()
    built = plan_restore(ref, state_home=git_home, session_created=["agent.py"])
    assert "read-tree" in git_commands
    assert plan_of(cached) == plan_of(built)
    assert (cached.modified, cached.recreated, cached.deleted) == (["notes.txt", "src/app.py"], ["README.md"], ["agent.py"])
    assert [m.path for m in cached.mode_changes] == ["run.sh"]


def test_a_kept_index_of_another_tree_or_not_matching_its_record_is_not_used(repo, git_home, git_commands):
    old = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "v1.5\n"})
    take_snapshot(repo, "t1-abc", 2, state_home=git_home)  # the kept index is of generation 2 now
    damage(repo)
    git_commands.clear()
    first = plan_restore(old, state_home=git_home)
    assert "read-tree" in git_commands
    layout = resolve_workspace(repo, git_home).layout
    newest = take_snapshot(repo, "t1-abc", 3, state_home=git_home)
    kept = layout.thread_index("t1-abc")
    assert index_cache.recall(layout, "t1-abc", newest.snapshot_tree) == kept
    os.utime(kept, ns=(1, 1))  # as if a process died between the index and its record
    assert index_cache.recall(layout, "t1-abc", newest.snapshot_tree) is None
    git_commands.clear()
    plan = plan_restore(newest, state_home=git_home)
    assert "read-tree" in git_commands and plan.is_empty
    assert (first.modified, first.recreated, first.kept) == (["notes.txt", "src/app.py"], ["README.md"], ["agent.py"])


def test_after_a_restore_the_kept_index_is_of_the_restored_tree(repo, git_home, git_commands):
    """A second rewind to the same checkpoint (its tree is what the first one restored)
    compares through the index the first one left."""
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    damage(repo)
    take_snapshot(repo, "t1-abc", 2, state_home=git_home)
    result = apply_restore(plan_restore(ref, state_home=git_home, session_created=["agent.py"]),
                           state_home=git_home, derive_tree=True)
    assert result.tree_after.built.tree == ref.snapshot_tree
    damage(repo)
    git_commands.clear()
    again = plan_restore(ref, state_home=git_home, session_created=["agent.py"])
    assert "read-tree" not in git_commands
    assert (again.modified, again.recreated, again.deleted) == (["notes.txt", "src/app.py"], ["README.md"], ["agent.py"])
    assert [m.path for m in again.mode_changes] == ["run.sh"]
