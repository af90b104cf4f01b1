"""A tracked folder replaced by a symbolic link.

Every snapshot failed (git: "'lib/a.py' is beyond a symbolic link"), and a restore replaced the
symlinked folder with a real one although its preview said "keep"."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from continuation.workspace import apply_restore, plan_restore, take_snapshot
from workspace_repos import UserGitState, assert_untouched, git, git_home, make_repo, write  # noqa: F401


def tree_entries(repo: Path, commit: str) -> dict[str, str]:
    """path -> mode of every entry of the snapshot tree."""
    out = {}
    for record in filter(None, git(repo, "ls-tree", "-r", "-z", commit).split("\0")):
        meta, path = record.split("\t", 1)
        out[path] = meta.split(" ")[0]
    return out


def replace_with_link(repo: Path, folder: str, target: Path) -> None:
    shutil.rmtree(repo / folder)
    os.symlink(os.path.relpath(target, (repo / folder).parent), repo / folder)


@pytest.mark.parametrize("folder", ["lib", "src/pkg"])
@pytest.mark.parametrize("target_inside", [False, True])
def test_snapshot_stores_the_symlink_that_replaced_a_tracked_folder(git_home, tmp_path, folder,
                                                                      target_inside):
    repo = make_repo(tmp_path / "repo", {f"{folder}/a.py": "a\n", f"{folder}/b.py": "b\n",
                                         "top.txt": "t\n"})
    target = (repo / "vendor" / "lib") if target_inside else (tmp_path / "elsewhere")
    write(target, {"a.py": "changed through the link\n", "new.py": "n\n"})  # a.py now differs
    replace_with_link(repo, folder, target)
    before = UserGitState.capture(repo)
    ref = take_snapshot(repo, "t1", 1, state_home=git_home)
    assert_untouched(before, repo)
    entries = tree_entries(repo, ref.snapshot_commit)
    assert entries[folder] == "120000"
    assert not any(p.startswith(folder + "/") for p in entries), "entries behind the link stored"
    link = git(repo, "cat-file", "blob", f"{ref.snapshot_commit}:{folder}")
    assert link == os.readlink(repo / folder)
    # the dirty summary says what git status says
    dirty = {(p.status, p.path) for p in ref.dirty.paths}
    assert {("D", f"{folder}/a.py"), ("D", f"{folder}/b.py"), ("?", folder)} <= dirty
    # and a second snapshot (stat cache, incremental) works as well
    (repo / "top.txt").write_text("t2\n")
    assert tree_entries(repo, take_snapshot(repo, "t1", 2, state_home=git_home).snapshot_commit)[folder] \
        == "120000"


def test_restore_keeps_a_symlinked_folder_its_preview_keeps(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"lib/a.py": "a\n", "top.txt": "t\n"})
    (repo / "top.txt").write_text("at the checkpoint\n")
    ref = take_snapshot(repo, "t1", 1, state_home=git_home)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, {"a.py": "the user's other copy\n"})
    replace_with_link(repo, "lib", elsewhere)
    (repo / "top.txt").write_text("later\n")
    plan = plan_restore(ref, state_home=git_home)
    assert plan.kept == ["lib"]
    assert plan.modified == ["top.txt"] and plan.recreated == []
    assert [s.path for s in plan.skipped] == ["lib/a.py"]
    assert "keep      lib" in plan.describe() and "skip      lib/a.py" in plan.describe()
    result = apply_restore(plan, state_home=git_home)
    assert result.ok, result.errors
    assert (repo / "lib").is_symlink(), "the kept symlink was replaced by a folder"
    assert (elsewhere / "a.py").read_text() == "the user's other copy\n", "wrote through the link"
    assert (repo / "top.txt").read_text() == "at the checkpoint\n"
    assert result.restored == ["top.txt"]


def test_restore_keeps_a_file_that_took_a_folders_place(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"lib/a.py": "a\n"})
    ref = take_snapshot(repo, "t1", 1, state_home=git_home)
    shutil.rmtree(repo / "lib")
    (repo / "lib").write_text("the user's file\n")
    plan = plan_restore(ref, state_home=git_home)
    assert plan.kept == ["lib"] and plan.recreated == []
    apply_restore(plan, state_home=git_home)
    assert (repo / "lib").read_text() == "the user's file\n"


def test_a_symlink_the_plan_deletes_gives_way_to_the_folder(git_home, tmp_path):
    """When the plan deletes the link (undoing a restore deletes exactly what it re-created, even
    where HEAD has a folder), the folder comes back under it."""
    repo = make_repo(tmp_path / "repo", {"lib/a.py": "a\n"})
    ref = take_snapshot(repo, "t1", 1, state_home=git_home)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, {"a.py": "other\n"})
    replace_with_link(repo, "lib", elsewhere)
    plan = plan_restore(ref, state_home=git_home, session_created=["lib"], keep_committed=False)
    assert plan.deleted == ["lib"] and plan.recreated == ["lib/a.py"]
    result = apply_restore(plan, state_home=git_home)
    assert result.ok, result.errors
    assert not (repo / "lib").is_symlink() and (repo / "lib" / "a.py").read_text() == "a\n"
    assert (elsewhere / "a.py").read_text() == "other\n"


def test_shadow_snapshot_outside_git_stores_the_symlink_too(git_home, tmp_path):
    """Outside git the same: the link is stored, nothing behind it (the shadow index of the
    last snapshot listed the folder's files)."""
    folder = tmp_path / "plain"
    write(folder, {"lib/a.py": "a\n", "top.txt": "t\n"})
    first = take_snapshot(folder, "t1", 1, state_home=git_home)
    assert first.kind == "shadow"
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere, {"a.py": "changed\n"})
    replace_with_link(folder, "lib", elsewhere)
    second = take_snapshot(folder, "t1", 2, state_home=git_home)
    listing = {}
    git_dir = next(Path(git_home).glob("workspaces/*/shadow.git"))
    out = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", second.snapshot_commit],
                         capture_output=True, text=True, check=True).stdout
    for line in filter(None, out.splitlines()):
        meta, path = line.split("\t", 1)
        listing[path] = meta.split(" ")[0]
    assert listing == {"lib": "120000", "top.txt": "100644"}


def test_a_folder_that_replaced_a_symlink_is_kept_in_the_preview_too(git_home, tmp_path):
    """The other way round: the checkpoint stored the link, a real folder with files stands
    there now; the preview already says it is left alone (it said "recreate")."""
    repo = make_repo(tmp_path / "repo", {"top.txt": "t\n"})
    write(tmp_path / "elsewhere", {"a.py": "a\n"})
    os.symlink("../elsewhere", repo / "lib")
    ref = take_snapshot(repo, "t1", 1, state_home=git_home)
    (repo / "lib").unlink()
    write(repo, {"lib/mine.py": "the user's\n"})
    plan = plan_restore(ref, state_home=git_home)
    assert plan.recreated == [] and [s.path for s in plan.skipped] == ["lib"]
    assert plan.kept == ["lib/mine.py"]
    result = apply_restore(plan, state_home=git_home)
    assert result.ok and (repo / "lib" / "mine.py").read_text() == "the user's\n"
