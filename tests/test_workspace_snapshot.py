"""Snapshots on every repository shape leave the user's git exactly as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from continuation.workspace import (
    InvalidThreadKey,
    WorkspaceBusy,
    WorkspacePolicy,
    WorkspaceRef,
    apply_restore,
    plan_restore,
    take_snapshot,
)
from workspace_repos import UserGitState, assert_untouched, git, git_home, make_repo, worktree_files, write  # noqa: F401


def tree_files(repo: Path, commit: str) -> dict[str, str]:
    """path -> 'mode type' for every entry of the snapshot tree."""
    listing = git(repo, "ls-tree", "-r", "-z", commit)
    result = {}
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        mode, kind, _ = meta.split(" ")
        result[path] = f"{mode} {kind}"
    return result


def blob(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", f"{commit}:{path}"], cwd=repo, capture_output=True, check=True).stdout


def snapshot_and_check(repo: Path, home: Path, thread: str = "t1-abc", generation: int = 1, **kwargs) -> WorkspaceRef:
    before = UserGitState.capture(repo)
    ref = take_snapshot(repo, thread, generation, state_home=home, **kwargs)
    assert_untouched(before, repo)
    assert git(repo, "rev-parse", f"refs/continuation/{thread}/{generation}").strip() == ref.snapshot_commit
    return ref


def restore_roundtrip(repo: Path, home: Path, ref: WorkspaceRef, mutate, session_created=()) -> None:
    """Mutate the tree like a session would, restore, and demand the exact checkpoint state."""
    at_checkpoint = UserGitState.capture(repo)
    files_at_checkpoint = worktree_files(repo)
    mutate()
    plan = plan_restore(ref, state_home=home, session_created=session_created)
    result = apply_restore(plan, state_home=home)
    assert result.ok, result.errors
    assert_untouched(at_checkpoint, repo)
    assert worktree_files(repo) == files_at_checkpoint


def test_dirty_tree_with_partially_staged_files(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "gone.txt": "bye\n", "keep.txt": "k\n", ".gitignore": "*.log\n"})
    write(repo, {"a.txt": "one\nstaged\n"})
    git(repo, "add", "a.txt")
    write(repo, {"a.txt": "one\nstaged\nunstaged\n", "new-staged.txt": "ns\n", "untracked.txt": "u\n", "debug.log": "ignored\n"})
    git(repo, "add", "new-staged.txt")
    (repo / "gone.txt").unlink()

    ref = snapshot_and_check(repo, git_home)

    files = tree_files(repo, ref.snapshot_commit)
    assert blob(repo, ref.snapshot_commit, "a.txt") == b"one\nstaged\nunstaged\n"
    assert "new-staged.txt" in files and "untracked.txt" in files and "keep.txt" in files
    assert "gone.txt" not in files and "debug.log" not in files
    assert (ref.kind, ref.branch, ref.detached, ref.unborn, ref.in_progress) == ("git", "main", False, False, None)
    assert ref.head == git(repo, "rev-parse", "HEAD").strip()
    d = ref.dirty
    assert (d.base, d.modified, d.added, d.deleted, d.untracked) == ("HEAD", 1, 1, 1, 1)
    assert {(p.status, p.path) for p in d.paths} == {("M", "a.txt"), ("A", "new-staged.txt"), ("D", "gone.txt"), ("?", "untracked.txt")}
    assert git(repo, "rev-parse", f"{ref.snapshot_commit}^").strip() == ref.head  # parent is HEAD

    def mutate():
        write(repo, {"a.txt": "rewritten\n", "keep.txt": "changed\n"})
        (repo / "untracked.txt").unlink()
        write(repo, {"agent-new.txt": "agent\n"})

    restore_roundtrip(repo, git_home, ref, mutate, session_created=["agent-new.txt"])
    assert (repo / "debug.log").read_text() == "ignored\n"
    git(repo, "fsck", "--strict", "--no-dangling")  # every snapshot and safety commit is sound


def test_incremental_snapshot_reuses_thread_and_sees_new_changes(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {f"d/{i}.txt": f"{i}\n" for i in range(50)})
    first = snapshot_and_check(repo, git_home, generation=1)
    write(repo, {"d/3.txt": "three\n", "fresh.txt": "f\n"})
    second = snapshot_and_check(repo, git_home, generation=2)
    assert first.snapshot_commit != second.snapshot_commit
    assert blob(repo, second.snapshot_commit, "d/3.txt") == b"three\n"
    assert "fresh.txt" in tree_files(repo, second.snapshot_commit)
    assert "fresh.txt" not in tree_files(repo, first.snapshot_commit)
    # re-taking a generation moves its ref to the newer state
    write(repo, {"d/4.txt": "four\n"})
    again = snapshot_and_check(repo, git_home, generation=2)
    assert git(repo, "rev-parse", "refs/continuation/t1-abc/2").strip() == again.snapshot_commit != second.snapshot_commit


def test_detached_head(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n"})
    write(repo, {"a.txt": "2\n"})
    git(repo, "commit", "-qam", "second")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    write(repo, {"a.txt": "dirty\n"})
    ref = snapshot_and_check(repo, git_home)
    assert ref.detached and ref.branch is None
    assert ref.head == git(repo, "rev-parse", "HEAD").strip()
    assert blob(repo, ref.snapshot_commit, "a.txt") == b"dirty\n"
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"a.txt": "agent\n"}))


def test_unborn_branch(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"staged.txt": "s\n", "loose.txt": "l\n"}, commit=False)
    git(repo, "add", "staged.txt")
    ref = snapshot_and_check(repo, git_home)
    assert ref.unborn and ref.head is None and ref.branch == "main" and not ref.detached
    assert set(tree_files(repo, ref.snapshot_commit)) == {"staged.txt", "loose.txt"}
    assert git(repo, "rev-list", "--parents", "-n1", ref.snapshot_commit).split() == [ref.snapshot_commit]
    assert (ref.dirty.added, ref.dirty.untracked) == (1, 1)
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"staged.txt": "agent\n"}))


def test_unborn_branch_without_index_file(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"only.txt": "o\n"}, commit=False)
    assert not (repo / ".git" / "index").exists()
    ref = snapshot_and_check(repo, git_home)
    assert set(tree_files(repo, ref.snapshot_commit)) == {"only.txt"}
    assert not (repo / ".git" / "index").exists()


def _conflicting_branches(repo: Path) -> None:
    write(repo, {"c.txt": "base\n"})
    git(repo, "add", "c.txt")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "other")
    write(repo, {"c.txt": "other\n"})
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    write(repo, {"c.txt": "main\n"})
    git(repo, "commit", "-qam", "main")


def test_merge_in_progress(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    _conflicting_branches(repo)
    git(repo, "merge", "other", check=False)
    assert (repo / ".git" / "MERGE_HEAD").exists()
    write(repo, {"scratch.txt": "notes\n"})
    ref = snapshot_and_check(repo, git_home)
    assert ref.in_progress == "merge"
    assert ref.dirty.unmerged == 1
    assert b"<<<<<<<" in blob(repo, ref.snapshot_commit, "c.txt")
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"c.txt": "resolved by agent\n"}))
    assert (repo / ".git" / "MERGE_HEAD").exists()


def test_rebase_in_progress(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    _conflicting_branches(repo)
    git(repo, "checkout", "-q", "other")
    git(repo, "rebase", "main", check=False)
    assert (repo / ".git" / "rebase-merge").is_dir()
    ref = snapshot_and_check(repo, git_home)
    assert ref.in_progress == "rebase" and ref.detached
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"c.txt": "agent\n", "extra.txt": "x\n"}), ["extra.txt"])
    assert (repo / ".git" / "rebase-merge").is_dir()


def test_submodule_and_nested_repositories_are_recorded_not_descended(git_home, tmp_path):
    lib = make_repo(tmp_path / "lib", {"lib.txt": "lib\n"})
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "add submodule")
    nested = make_repo(repo / "nested", {"inner.txt": "inner\n"})
    write(repo, {"empty-nested/.keep": ""})
    git(repo / "empty-nested", "init", "-q")  # a nested repository with no commit at all
    write(repo / "vendor" / "lib", {"lib.txt": "dirty inside submodule\n"})
    write(repo, {"a.txt": "changed\n"})

    ref = snapshot_and_check(repo, git_home)

    files = tree_files(repo, ref.snapshot_commit)
    sub_commit = git(lib, "rev-parse", "HEAD").strip()
    assert files["vendor/lib"] == "160000 commit"
    assert [(s.path, s.commit) for s in ref.submodules] == [("vendor/lib", sub_commit)]
    assert sorted(ref.nested_repos) == ["empty-nested", "nested"]
    assert not any(p.startswith(("nested/", "empty-nested/", "vendor/lib/")) for p in files)
    nested_before = UserGitState.capture(nested)

    def mutate():
        write(repo, {"a.txt": "agent\n"})
        write(nested, {"inner.txt": "changed by someone\n"})

    at_checkpoint = worktree_files(repo / "vendor" / "lib")
    plan = plan_restore(ref, state_home=git_home)
    assert plan.modified == [] and plan.deleted == []
    mutate()
    plan = plan_restore(ref, state_home=git_home)
    assert plan.modified == ["a.txt"]
    assert {s.path for s in plan.skipped} >= {"nested", "empty-nested"}
    result = apply_restore(plan, state_home=git_home)
    assert result.ok
    assert (repo / "a.txt").read_text() == "changed\n"
    assert (nested / "inner.txt").read_text() == "changed by someone\n"  # nested repo left alone
    assert worktree_files(repo / "vendor" / "lib") == at_checkpoint
    assert UserGitState.capture(nested).head == nested_before.head


def test_files_over_the_size_cap_are_recorded_not_stored(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"tracked.bin": b"x" * 100, "small.txt": "s\n"})
    write(repo, {"tracked.bin": b"y" * 5000, "huge.bin": b"z" * 4000, "ok.txt": "fine\n"})
    policy = WorkspacePolicy(size_cap_bytes=1000)
    ref = snapshot_and_check(repo, git_home, policy=policy)
    assert sorted((o.path, o.size) for o in ref.oversized) == [("huge.bin", 4000), ("tracked.bin", 5000)]
    files = tree_files(repo, ref.snapshot_commit)
    assert "huge.bin" not in files and "ok.txt" in files
    assert blob(repo, ref.snapshot_commit, "tracked.bin") == b"x" * 100  # the stored (old) version
    write(repo, {"tracked.bin": b"w" * 6000, "huge.bin": b"q" * 10, "ok.txt": "agent\n"})
    plan = plan_restore(ref, state_home=git_home)
    assert plan.modified == ["ok.txt"]
    assert {s.path for s in plan.skipped} == {"tracked.bin", "huge.bin"}
    apply_restore(plan, state_home=git_home)
    assert (repo / "tracked.bin").read_bytes() == b"w" * 6000 and (repo / "huge.bin").read_bytes() == b"q" * 10
    assert (repo / "ok.txt").read_text() == "fine\n"


def test_policy_exclude_patterns(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"src/a.py": "a\n"})
    write(repo, {"node_modules/x/index.js": "x\n", "src/cache.tmp": "t\n", "src/b.py": "b\n"})
    ref = snapshot_and_check(repo, git_home, policy=WorkspacePolicy(exclude=("node_modules/", "*.tmp")))
    files = tree_files(repo, ref.snapshot_commit)
    assert set(files) == {"src/a.py", "src/b.py"}
    assert ref.excluded_count == 2 and sorted(ref.excluded) == ["node_modules/x/index.js", "src/cache.tmp"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlinks_are_stored_as_links(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"target.txt": "t\n", "dir/inner.txt": "i\n"})
    os.symlink("target.txt", repo / "to-file")
    os.symlink("dir", repo / "to-dir")
    os.symlink("missing", repo / "dangling")
    ref = snapshot_and_check(repo, git_home)
    files = tree_files(repo, ref.snapshot_commit)
    assert files["to-file"] == files["to-dir"] == files["dangling"] == "120000 blob"
    assert "to-dir/inner.txt" not in files
    assert blob(repo, ref.snapshot_commit, "to-dir") == b"dir"

    def mutate():
        (repo / "to-file").unlink()
        os.symlink("dir/inner.txt", repo / "to-file")
        (repo / "dangling").unlink()

    restore_roundtrip(repo, git_home, ref, mutate)
    assert os.readlink(repo / "to-file") == "target.txt" and os.readlink(repo / "dangling") == "missing"


def test_signing_config_and_hooks_never_fire(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    marker = tmp_path / "hook-ran"
    git(repo, "config", "commit.gpgsign", "true")
    git(repo, "config", "gpg.program", str(tmp_path / "no-such-gpg"))
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change", "post-checkout"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 1\n", encoding="utf-8")
        (hooks / name).chmod(0o755)
    write(repo, {"a.txt": "changed\n", "b.txt": "new\n"})
    assert subprocess.run(["git", "commit", "-qam", "x"], cwd=repo, capture_output=True).returncode != 0  # hooks are live
    marker.unlink(missing_ok=True)

    ref = snapshot_and_check(repo, git_home)
    assert "gpgsig" not in git(repo, "cat-file", "commit", ref.snapshot_commit)
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"a.txt": "agent\n"}))
    assert not marker.exists(), marker.read_text()


def test_two_threads_get_separate_refs_and_snapshots_serialise(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {f"f{i}.txt": f"{i}\n" for i in range(200)})
    write(repo, {"f1.txt": "dirty\n", "new.txt": "n\n"})
    before = UserGitState.capture(repo)
    results: dict[str, list] = {"t1-aaa": [], "t2-bbb": []}
    errors: list[BaseException] = []

    def worker(thread: str) -> None:
        try:
            for generation in range(1, 4):
                results[thread].append(take_snapshot(repo, thread, generation, state_home=git_home))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert_untouched(before, repo)
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/continuation/").split()
    assert sorted(refs) == sorted(f"refs/continuation/{t}/{g}" for t in results for g in (1, 2, 3))
    trees = {r.snapshot_tree for refs_ in results.values() for r in refs_}
    assert len(trees) == 1  # same work tree, same tree, whatever the interleaving


def test_snapshot_waits_for_the_workspace_lock(git_home, tmp_path):
    from filelock import FileLock

    from continuation.workspace.layout import StateLayout

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    layout = StateLayout.for_root(git_home, repo.resolve())
    with FileLock(str(layout.lock_path)):
        with pytest.raises(WorkspaceBusy, match="locked"):
            take_snapshot(repo, "t2-abc", 1, state_home=git_home, lock_timeout=0.2)
    take_snapshot(repo, "t2-abc", 1, state_home=git_home, lock_timeout=0.2)


def test_subdirectory_root_snapshots_the_repository(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"sub/a.txt": "a\n", "b.txt": "b\n"})
    ref = take_snapshot(repo / "sub", "t1-abc", 1, state_home=git_home)
    assert ref.root == str(repo.resolve())
    assert set(tree_files(repo, ref.snapshot_commit)) == {"sub/a.txt", "b.txt"}


def test_linked_worktree(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    write(linked, {"a.txt": "in worktree\n", "w.txt": "w\n"})
    ref = snapshot_and_check(linked, git_home)
    assert ref.branch == "feature" and ref.root == str(linked.resolve())
    assert blob(repo, ref.snapshot_commit, "a.txt") == b"in worktree\n"
    restore_roundtrip(linked, git_home, ref, lambda: write(linked, {"a.txt": "agent\n"}))


@pytest.mark.parametrize("key", ["", "../x", "a/b", "x.lock", "-lead", "a..b", "sp ace", "x" * 200])
def test_bad_thread_keys_are_rejected(git_home, tmp_path, key):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    with pytest.raises(InvalidThreadKey):
        take_snapshot(repo, key, 1, state_home=git_home)
    assert git(repo, "for-each-ref", "refs/continuation/") == ""


def test_inherited_git_environment_cannot_redirect_snapshots(git_home, tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    decoy = make_repo(tmp_path / "decoy", {"d.txt": "d\n"})
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    decoy_index = (decoy / ".git" / "index").read_bytes()
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert set(tree_files(repo, ref.snapshot_commit)) == {"a.txt"}
    assert (decoy / ".git" / "index").read_bytes() == decoy_index
    assert git(decoy, "for-each-ref", "refs/continuation/") == ""


def test_head_is_read_from_packed_refs(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "checkout", "-q", "-b", "feature/x")
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "feature" / "x").exists()
    ref = snapshot_and_check(repo, git_home)
    assert (ref.head, ref.branch) == (git(repo, "rev-parse", "HEAD").strip(), "feature/x")


def test_file_and_folder_swaps(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"was-file": "f\n", "was-dir/inner.txt": "i\n", "keep.txt": "k\n"})
    (repo / "was-file").unlink()
    write(repo, {"was-file/now-inside.txt": "n\n"})
    (repo / "was-dir" / "inner.txt").unlink()
    (repo / "was-dir").rmdir()
    write(repo, {"was-dir": "now a file\n"})
    ref = snapshot_and_check(repo, git_home)
    assert set(tree_files(repo, ref.snapshot_commit)) == {"was-file/now-inside.txt", "was-dir", "keep.txt"}

    def mutate():
        (repo / "was-dir").unlink()
        write(repo, {"was-dir/again.txt": "agent\n", "keep.txt": "agent\n"})

    restore_roundtrip(repo, git_home, ref, mutate, session_created=["was-dir/again.txt"])


def test_all_ignore_sources_are_honoured(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "sub/.gitignore": "*.gen\n"})
    global_excludes = tmp_path / "global-excludes"
    global_excludes.write_text("*.swp\n", encoding="utf-8")
    git(repo, "config", "--global", "core.excludesFile", str(global_excludes))
    (repo / ".git" / "info" / "exclude").write_text("secret.env\n", encoding="utf-8")
    write(repo, {"x.swp": "s", "secret.env": "TOKEN=1", "sub/y.gen": "g", "kept.txt": "k\n", "y.gen": "top level"})
    ref = snapshot_and_check(repo, git_home)
    assert set(tree_files(repo, ref.snapshot_commit)) == {"a.txt", "sub/.gitignore", "kept.txt", "y.gen"}

    write(repo, {"a.txt": "agent\n", "x.swp": "changed", "other.swp": "new"})
    plan = plan_restore(ref, state_home=git_home, session_created=["other.swp", "x.swp"])
    assert (plan.modified, plan.deleted, plan.kept) == (["a.txt"], [], [])
    apply_restore(plan, state_home=git_home)
    assert (repo / "a.txt").read_text() == "a\n"
    # ignored files are outside every checkpoint: never restored, never deleted
    assert (repo / "x.swp").read_text() == "changed" and (repo / "other.swp").read_text() == "new"
    assert (repo / "secret.env").read_text() == "TOKEN=1"


def test_user_index_lock_is_neither_needed_nor_touched(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, {"a.txt": "changed\n"})
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"someone else's git add in progress")
    ref = snapshot_and_check(repo, git_home)
    assert blob(repo, ref.snapshot_commit, "a.txt") == b"changed\n"
    assert lock.read_bytes() == b"someone else's git add in progress"


def test_state_home_inside_the_workspace_is_never_snapshotted(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    inner_home = repo / ".continuation-state"
    ref = take_snapshot(repo, "t1-abc", 1, state_home=inner_home)
    assert (inner_home / "workspaces").is_dir()
    assert set(tree_files(repo, ref.snapshot_commit)) == {"a.txt"}
    write(repo, {"a.txt": "agent\n"})
    plan = plan_restore(ref, state_home=inner_home)
    assert plan.modified == ["a.txt"] and plan.kept == [] and plan.deleted == []
    apply_restore(plan, state_home=inner_home)
    assert (repo / "a.txt").read_text() == "a\n"


def test_sparse_checkout_files_are_neither_lost_nor_materialised(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"in/a.txt": "a\n", "out/b.txt": "b\n", "top.txt": "t\n"})
    git(repo, "sparse-checkout", "set", "--no-cone", "/in/", "/top.txt")
    assert not (repo / "out" / "b.txt").exists()
    write(repo, {"in/a.txt": "changed\n"})
    ref = snapshot_and_check(repo, git_home)
    assert blob(repo, ref.snapshot_commit, "out/b.txt") == b"b\n"  # index version, not "deleted"
    assert ref.dirty.deleted == 0
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"in/a.txt": "agent\n"}))
    assert not (repo / "out").exists()


def test_line_ending_filters_round_trip_exact_bytes(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {".gitattributes": "*.txt text eol=crlf\n*.bin binary\n", "a.txt": "one\ntwo\n"})
    assert (repo / "a.txt").read_bytes() == b"one\ntwo\n"  # written before the attributes applied
    write(repo, {"a.txt": b"one\r\ntwo\r\nthree\r\n", "b.bin": b"\x00\r\n\xff"})
    ref = snapshot_and_check(repo, git_home)
    assert blob(repo, ref.snapshot_commit, "a.txt") == b"one\ntwo\nthree\n"  # cleaned as git stores it
    restore_roundtrip(repo, git_home, ref, lambda: write(repo, {"a.txt": b"agent\r\n", "b.bin": b"x"}))


@pytest.mark.skipif(sys.platform != "linux", reason="arbitrary bytes in file names: Linux file systems")
def test_unusual_file_names(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"plain.txt": "p\n"})
    names = [b"sp ace.txt", b"new\nline.txt", b"caf\xc3\xa9.txt", b"raw\xff.bin", b"-dash", b"tab\there"]
    for name in names:
        (repo / os.fsdecode(name)).write_bytes(b"content of " + name)
    (repo / os.fsdecode(b"big\xff.bin")).write_bytes(b"x" * 20_000)
    ref = snapshot_and_check(repo, git_home, policy=WorkspacePolicy(size_cap_bytes=10_000))
    assert [o.path for o in ref.oversized] == [os.fsdecode(b"big\xff.bin")]
    import json

    from continuation.workspace import load_snapshot

    assert WorkspaceRef.from_dict(json.loads(json.dumps(ref.to_dict()))) == ref
    assert load_snapshot(repo, "t1-abc/1", state_home=git_home).oversized == ref.oversized
    listing = subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", ref.snapshot_commit], cwd=repo,
                             capture_output=True, check=True).stdout
    assert set(filter(None, listing.split(b"\0"))) == {b"plain.txt", *names}

    def mutate():
        for name in names:
            (repo / os.fsdecode(name)).write_bytes(b"agent")
        (repo / os.fsdecode(b"made\xfe.txt")).write_bytes(b"agent")

    restore_roundtrip(repo, git_home, ref, mutate, session_created=[os.fsdecode(b"made\xfe.txt")])


def test_snapshot_and_restore_run_without_importing_gitpython(git_home, tmp_path):
    """The snapshot and restore plumbing runs git processes only: a boundary does not pay
    GitPython's import (~70 ms measured in PreCompact)."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n", "b.txt": "two\n"})
    script = r"""
import sys
from pathlib import Path
from continuation.workspace import apply_restore, plan_restore, take_snapshot
repo, home = Path(sys.argv[1]), Path(sys.argv[2])
ref = take_snapshot(repo, "t1-abc", 1, state_home=home)
(repo / "a.txt").write_text("changed\n")
result = apply_restore(plan_restore(ref, state_home=home), state_home=home)
assert result.ok, result.errors
assert (repo / "a.txt").read_text() == "one\n"
print("git" in sys.modules)
"""
    r = subprocess.run([sys.executable, "-c", script, str(repo), str(git_home)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_the_scan_lists_what_differs_in_the_work_tree_from_the_index(tmp_path, git_home):
    """The snapshot's one scan (``git status`` on the seeded private index): tracked files the
    work tree changed or deleted, untracked files, nested repositories as folders; not a file
    only touched (same bytes), not a change staged and left alone, not an ignored file."""
    import shutil
    import time

    from continuation.workspace.policy import ExcludeMatcher
    from continuation.workspace.treebuild import build_tree
    from continuation.workspace.workspace_target import content_target, resolve_workspace

    repo = make_repo(tmp_path / "repo", {"touched.txt": "same\n", "staged.txt": "v1\n",
                                         "edited.txt": "v1\n", "gone.txt": "x\n",
                                         ".gitignore": "*.log\n"})
    write(repo, {"staged.txt": "v2\n"})
    git(repo, "add", "staged.txt")
    time.sleep(0.05)
    write(repo, {"touched.txt": "same\n", "edited.txt": "v2\n", "new.txt": "n\n",
                 "debug.log": "ignored\n"})
    (repo / "gone.txt").unlink()
    make_repo(repo / "nested", {"inner.txt": "i\n"})
    target = content_target(resolve_workspace(repo, git_home), create=True)
    index = tmp_path / "private.index"
    shutil.copy2(repo / ".git" / "index", index)
    built = build_tree(target, index, ExcludeMatcher([]), 1 << 20)
    assert built.tracked == {"edited.txt": "M", "gone.txt": "D"}
    assert built.untracked == ["new.txt"] and built.nested_repos == ["nested"]
    tree = {line.split("\t")[1] for line in git(repo, "ls-tree", "-r", built.tree).splitlines()}
    assert tree == {".gitignore", "edited.txt", "new.txt", "staged.txt", "touched.txt"}
