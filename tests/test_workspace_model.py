"""WorkspaceRef serialisation, policy validation and exclude patterns."""

from __future__ import annotations

import json

import pytest

from continuation.workspace import (
    CorruptReference,
    DirtyPath,
    DirtySummary,
    OversizedFile,
    Submodule,
    WorkspacePolicy,
    WorkspaceRef,
    take_snapshot,
)
from continuation.workspace.layout import validate_thread_key
from continuation.workspace.policy import ExcludeMatcher
from workspace_repos import git_home, make_repo, write  # noqa: F401


def sample_ref() -> WorkspaceRef:
    return WorkspaceRef(
        root="/w", kind="git", thread_key="t1-abc", generation=3, head="a" * 40, branch="main",
        dirty=DirtySummary(base="HEAD", modified=1, untracked=2, paths=[DirtyPath("M", "x.py")]),
        snapshot_ref="refs/continuation/t1-abc/3", snapshot_commit="b" * 40, snapshot_tree="c" * 40,
        oversized=[OversizedFile("big.bin", 99)], submodules=[Submodule("vendor/lib", "d" * 40)],
        nested_repos=["inner"], exclude_patterns=["*.tmp"], size_cap_bytes=10, created_at="2026-01-01T00:00:00Z",
    )


def test_round_trip_through_json():
    ref = sample_ref()
    assert WorkspaceRef.from_dict(json.loads(json.dumps(ref.to_dict()))) == ref


def test_real_snapshot_round_trips(git_home, tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, {"b.txt": "b\n"})
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    assert WorkspaceRef.from_dict(json.loads(json.dumps(ref.to_dict()))) == ref


def test_unknown_keys_and_future_versions_are_read():
    data = sample_ref().to_dict()
    data["schema_version"] = 99
    data["future_field"] = {"x": 1}
    data["dirty"]["future_count"] = 5
    data["oversized"].append({"path": "other", "size": 5, "hash": "later"})
    ref = WorkspaceRef.from_dict(data)
    assert ref.schema_version == 99 and ref.dirty.modified == 1 and len(ref.oversized) == 2


def test_older_records_get_defaults():
    ref = WorkspaceRef.from_dict({"root": "/w", "kind": "none"})
    assert ref.dirty.total == 0 and ref.oversized == [] and ref.snapshot_commit is None and not ref.has_contents


@pytest.mark.parametrize(
    "data",
    [None, [], "text", {"kind": "git"}, {"root": "", "kind": "git"}, {"root": "/w", "kind": "zip"},
     {"root": "/w", "kind": "git", "generation": "3"}, {"root": "/w", "kind": "git", "excluded": "x"},
     {"root": "/w", "kind": "git", "dirty": {"modified": "many"}},
     {"root": "/w", "kind": "git", "oversized": [{"path": "a", "size": "huge"}]},
     {"root": "/w", "kind": "git", "head": 5}, {"root": "/w", "kind": "git", "detached": "yes"},
     {"root": "/w", "kind": "git", "dirty": {"paths": 3}}],
)
def test_malformed_references_raise_a_clear_error(data):
    with pytest.raises(CorruptReference):
        WorkspaceRef.from_dict(data)


def test_policy_validation():
    with pytest.raises(ValueError, match="mode"):
        WorkspacePolicy(mode="everything")
    with pytest.raises(ValueError, match="sequence"):
        WorkspacePolicy(exclude="*.log")
    with pytest.raises(ValueError, match="size_cap"):
        WorkspacePolicy(size_cap_bytes=-1)
    assert WorkspacePolicy(exclude=["a", " "]).exclude == ("a",)


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "expected"),
    [
        ("*.log", "a.log", False, True),
        ("*.log", "deep/er/a.log", False, True),
        ("*.log", "a.logx", False, False),
        ("node_modules/", "node_modules/x/y.js", False, True),
        ("node_modules/", "src/node_modules/y.js", False, True),
        ("node_modules/", "node_modules", False, False),
        ("node_modules/", "node_modules", True, True),
        ("build/out", "build/out/x.o", False, True),
        ("build/out", "src/build/out/x.o", False, False),
        ("docs/*.tmp", "docs/a.tmp", False, True),
        ("docs/*.tmp", "docs/sub/a.tmp", False, False),
        ("**/cache/**", "a/b/cache/c.bin", False, True),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "sub/top.txt", False, False),
        ("file[0-9].txt", "file3.txt", False, True),
    ],
)
def test_exclude_patterns(pattern, path, is_dir, expected):
    assert ExcludeMatcher([pattern]).excluded(path, is_dir=is_dir) is expected


def test_thread_key_accepts_engine_keys():
    assert validate_thread_key("t12-abcdef") == "t12-abcdef"
    assert validate_thread_key("T.1_x") == "T.1_x"


def test_importing_the_package_loads_neither_gitpython_nor_filelock():
    import subprocess
    import sys

    code = "import sys, continuation.workspace as w; w.WorkspacePolicy; print('git' in sys.modules, 'filelock' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_bad_roots_are_clear_errors(git_home, tmp_path):
    from continuation.workspace import WorkspaceError, drift

    with pytest.raises(WorkspaceError, match="does not exist"):
        take_snapshot(tmp_path / "missing", "t1-abc", 1, state_home=git_home)
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="not a directory"):
        take_snapshot(tmp_path / "file.txt", "t1-abc", 1, state_home=git_home)
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)
    (broken / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="looks like a git repository but git cannot open it"):
        take_snapshot(broken, "t1-abc", 1, state_home=git_home)
    with pytest.raises(WorkspaceError):
        take_snapshot(tmp_path, "t1-abc", -1, state_home=git_home)
    with pytest.raises(WorkspaceError):
        drift(WorkspaceRef(root=str(tmp_path / "gone"), kind="git"), state_home=git_home)


def test_an_empty_git_folder_above_is_passed_over_as_git_does(git_home, tmp_path):
    """A sandbox's leftover mount point (an empty ``.git`` in a shared temporary folder) holds
    nothing of a repository: git passes it over, and so do snapshots (a folder under it is a
    folder outside git, and a repository under it is itself)."""
    (tmp_path / ".git").mkdir()
    plain = tmp_path / "plain"
    write(plain, {"notes.txt": "n\n"})
    assert take_snapshot(plain, "t1-abc", 1, state_home=git_home).kind == "shadow"
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    assert take_snapshot(repo, "t1-abc", 2, state_home=git_home).kind == "git"
    # the thread's root and its boundary's snapshot are the folder, not the one holding the
    # empty .git (taken for a repository, the whole shared folder was scanned: a hang)
    from continuation.api import open_thread
    from continuation.session.engine import workspace_root

    for name in range(300):  # files beside the workspace, which the snapshot must not take
        (tmp_path / f"other-{name}.txt").write_text("x\n", encoding="utf-8")
    assert workspace_root(str(plain)) == str(plain.resolve())
    with open_thread("s1", home=tmp_path / "home", workspace=str(plain)) as thread:
        thread.admit("work", input_id="m1")
        cp = thread.checkpoint()
    assert cp.workspace["kind"] == "shadow" and cp.workspace["root"] == str(plain.resolve())
