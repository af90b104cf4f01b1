"""Folders outside git: shadow repository snapshots, metadata manifests, policy none."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from continuation.workspace import (
    WorkspacePolicy,
    apply_restore,
    delete_thread_refs,
    drift,
    gc_shadow,
    list_snapshot_refs,
    plan_restore,
    take_snapshot,
)
from continuation.workspace.layout import StateLayout
from workspace_repos import git_home, make_repo, worktree_files, write  # noqa: F401


@pytest.fixture
def folder(git_home, tmp_path) -> Path:
    root = tmp_path / "plain"
    write(root, {"a.txt": "a\n", "sub/b.txt": "b\n", ".gitignore": "*.tmp\n", "skip.tmp": "t\n"})
    return root


def test_shadow_snapshot_restore_and_drift(folder, git_home):
    ref = take_snapshot(folder, "t1-abc", 1, state_home=git_home)
    assert ref.kind == "shadow" and ref.head is None and ref.snapshot_ref == "refs/continuation/t1-abc/1"
    assert not (folder / ".git").exists()
    shadow = StateLayout.for_root(git_home, folder.resolve()).shadow_git_dir
    assert shadow.is_dir() and git_home in shadow.parents
    at_checkpoint = worktree_files(folder)

    write(folder, {"a.txt": "changed\n", "agent.txt": "new\n", "later.tmp": "ignored\n"})
    (folder / "sub" / "b.txt").unlink()
    report = drift(ref, state_home=git_home)
    assert (report.modified, report.added, report.deleted) == (["a.txt"], ["agent.txt"], ["sub/b.txt"])

    plan = plan_restore(ref, state_home=git_home, session_created=["agent.txt"])
    assert (plan.modified, plan.recreated, plan.deleted) == (["a.txt"], ["sub/b.txt"], ["agent.txt"])
    result = apply_restore(plan, state_home=git_home)
    assert result.ok
    after = worktree_files(folder)
    assert after.pop("later.tmp") == b"ignored\n"
    assert after == at_checkpoint
    assert not (folder / ".git").exists()


def test_shadow_incremental_and_retention(folder, git_home):
    first = take_snapshot(folder, "t1-abc", 1, state_home=git_home)
    assert first.dirty.base == "none"
    write(folder, {"a.txt": "v2\n", "c.txt": "c\n"})
    second = take_snapshot(folder, "t1-abc", 2, state_home=git_home)
    assert (second.dirty.modified, second.dirty.added) == (1, 1)
    assert [r.generation for r in list_snapshot_refs(folder, state_home=git_home)] == [1, 2]
    assert delete_thread_refs(folder, "t1-abc", state_home=git_home) == 2
    assert gc_shadow(folder, state_home=git_home)
    assert list_snapshot_refs(folder, state_home=git_home) == []


def test_shadow_nested_repository_recorded_not_descended(folder, git_home):
    make_repo(folder / "inner", {"x.txt": "x\n"})
    ref = take_snapshot(folder, "t1-abc", 1, state_home=git_home)
    assert ref.nested_repos == ["inner"]
    write(folder, {"inner/x.txt": "changed\n"})
    assert drift(ref, state_home=git_home).clean


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_metadata_manifest_of_a_plain_folder(folder, git_home):
    os.symlink("a.txt", folder / "link")
    write(folder, {"big.bin": b"z" * 3000})
    policy = WorkspacePolicy(mode="metadata", size_cap_bytes=1000, exclude=("sub/",))
    ref = take_snapshot(folder, "t1-abc", 1, state_home=git_home, policy=policy)
    assert ref.kind == "metadata" and ref.snapshot_ref is None and not ref.has_contents
    manifest = json.loads(Path(ref.manifest_path).read_text(encoding="utf-8"))
    entries = manifest["entries"]
    assert set(entries) == {"a.txt", ".gitignore", "skip.tmp", "link", "big.bin"}
    assert entries["a.txt"]["size"] == 2 and len(entries["a.txt"]["sha256"]) == 64 and "mtime_ns" in entries["a.txt"]
    assert entries["link"]["link"] == "a.txt"
    assert entries["big.bin"].get("oversized") and "sha256" not in entries["big.bin"]
    assert [(o.path, o.size) for o in ref.oversized] == [("big.bin", 3000)]
    assert ref.excluded == ["sub/b.txt"]
    assert git_home in Path(ref.manifest_path).parents

    assert drift(ref, state_home=git_home).clean
    write(folder, {"a.txt": "A\n", "new.txt": "n\n", "sub/b.txt": "excluded change\n"})
    (folder / "skip.tmp").unlink()
    report = drift(ref, state_home=git_home)
    assert (report.modified, report.added, report.deleted) == (["a.txt"], ["new.txt"], ["skip.tmp"])
    second = take_snapshot(folder, "t1-abc", 2, state_home=git_home, policy=policy)
    assert (second.dirty.modified, second.dirty.added, second.dirty.deleted) == (1, 1, 1)


def test_metadata_in_a_git_repository_covers_dirty_files(git_home, tmp_path):
    from workspace_repos import UserGitState, assert_untouched, git

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    write(repo, {"a.txt": "dirty\n", "u.txt": "u\n"})
    state = UserGitState.capture(repo)
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home, policy=WorkspacePolicy(mode="metadata"))
    assert_untouched(state, repo)
    assert ref.head == git(repo, "rev-parse", "HEAD").strip() and ref.branch == "main"
    assert (ref.dirty.base, ref.dirty.modified, ref.dirty.untracked) == ("HEAD", 1, 1)
    entries = json.loads(Path(ref.manifest_path).read_text(encoding="utf-8"))["entries"]
    assert set(entries) == {"a.txt", "u.txt"}
    write(repo, {"b.txt": "changed later\n", "a.txt": "a\n"})
    report = drift(ref, state_home=git_home)
    assert report.modified == ["a.txt", "b.txt"] and report.added == [] and report.deleted == []


def test_policy_none_records_only_the_root(folder, git_home):
    ref = take_snapshot(folder, "t1-abc", 1, state_home=git_home, policy=WorkspacePolicy(mode="none"))
    assert (ref.kind, ref.root, ref.snapshot_ref, ref.manifest_path) == ("none", str(folder.resolve()), None, None)
    assert not (git_home / "workspaces").exists() or not any((git_home / "workspaces").rglob("shadow.git"))
    assert drift(ref, state_home=git_home).clean


def test_torn_private_index_and_record_are_rebuilt(folder, git_home):
    take_snapshot(folder, "t1-abc", 1, state_home=git_home)
    layout = StateLayout.for_root(git_home, folder.resolve())
    layout.thread_index("t1-abc").write_bytes(b"DIRC\x00\x00garbage")
    layout.thread_record("t1-abc").write_text("{not json", encoding="utf-8")
    write(folder, {"a.txt": "after the tear\n"})
    ref = take_snapshot(folder, "t1-abc", 2, state_home=git_home)
    assert ref.dirty.base == "none"
    plan = plan_restore(ref, state_home=git_home)
    assert plan.is_empty
    write(folder, {"a.txt": "agent\n"})
    apply_restore(plan_restore(ref, state_home=git_home), state_home=git_home)
    assert (folder / "a.txt").read_text() == "after the tear\n"


def test_gc_keeps_live_threads_and_forgets_vanished_folders(folder, git_home, tmp_path):
    import shutil

    from continuation.workspace import gc_workspaces, list_workspaces
    from workspace_repos import git

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    gone = tmp_path / "gone"
    write(gone, {"x.txt": "x\n"})
    for root in (repo, folder, gone):
        take_snapshot(root, "t1-live", 1, state_home=git_home)
        take_snapshot(root, "t2-dead", 1, state_home=git_home)
    take_snapshot(folder, "t3-meta", 1, state_home=git_home, policy=WorkspacePolicy(mode="metadata"))
    assert sorted(list_workspaces(git_home)) == sorted(p.resolve() for p in (repo, folder, gone))
    shutil.rmtree(gone)

    report = gc_workspaces(git_home, live_threads=["t1-live"])

    assert not report.errors
    assert sorted(report.threads_deleted) == ["t2-dead", "t2-dead", "t3-meta"]
    assert report.refs_deleted == 2 and report.workspaces_forgotten == [str(gone.resolve())]
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/continuation/").split() == ["refs/continuation/t1-live/1"]
    assert [r.thread_key for r in list_snapshot_refs(folder, state_home=git_home)] == ["t1-live"]
    assert not StateLayout.for_root(git_home, folder.resolve()).manifest_path("t3-meta", 1).exists()
    assert sorted(list_workspaces(git_home)) == sorted(p.resolve() for p in (repo, folder))


def _loose_modes(folder: Path) -> list[str]:
    """Paths under ``folder`` another user could read or enter."""
    return [f"{oct(p.stat().st_mode & 0o777)} {p}" for p in [folder, *folder.rglob("*")]
            if p.stat().st_mode & 0o077]


def test_the_shadow_repository_is_private_whatever_the_umask(folder, git_home):
    old = os.umask(0o022)
    try:
        take_snapshot(folder, "t1-priv", 1, state_home=git_home)
        write(folder, {"a.txt": "changed\n"})
        take_snapshot(folder, "t1-priv", 2, state_home=git_home)
    finally:
        os.umask(old)
    shadow = StateLayout.for_root(git_home, folder.resolve()).shadow_git_dir
    assert (shadow / "HEAD").is_file() and _loose_modes(shadow) == []


def test_a_shadow_repository_an_older_version_made_is_made_private(folder, git_home):
    take_snapshot(folder, "t1-old", 1, state_home=git_home)
    shadow = StateLayout.for_root(git_home, folder.resolve()).shadow_git_dir
    for p in [shadow, *shadow.rglob("*")]:  # as `git init` left them under umask 022
        p.chmod(0o755 if p.is_dir() else 0o644)
    take_snapshot(folder, "t1-old", 2, state_home=git_home)
    assert _loose_modes(shadow) == []
