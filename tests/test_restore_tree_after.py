"""The snapshot after a restore is derived, not scanned.

A rewind commits a checkpoint right after restoring files; its snapshot is the safety
snapshot's tree with the restore's writes and deletions applied (``workspace.after_restore``)
instead of a third scan of the work tree. These tests hold the derived tree to what a scan of
the work tree stores, over every kind of change a restore makes, and check that the rewind
still previews, takes its safety snapshot and keeps the user's untracked files."""
from __future__ import annotations

import os
import sys

import pytest

from continuation.workspace import DirtySummary, WorkspacePolicy, apply_restore, plan_restore, take_snapshot
from continuation.workspace.after_restore import TreeAfterRestore
from workspace_repos import UserGitState, git, git_commands, git_home, make_repo, write  # noqa: F401


@pytest.fixture
def repo(git_home, tmp_path):
    root = make_repo(tmp_path / "repo", {
        "src/app.py": "print('v1')\n", "README.md": "readme\n", "run.sh": "#!/bin/sh\n",
        ".gitignore": "*.log\n", "docs/a.md": "a\n", "docs/b.md": "b\n", "cfg/settings": "s\n",
    })
    write(root, {"notes.txt": "untracked at checkpoint\n", "gone-untracked.txt": "u\n",
                 "scratch/x.txt": "an untracked folder at the checkpoint\n"})
    return root


def scanned_tree(repo, home) -> str:
    """What a fresh scan of the work tree stores (a snapshot under its own thread)."""
    return scan(repo, home).snapshot_tree


def scan(repo, home):
    return take_snapshot(repo, "scan-check", 1, state_home=home)


def change_everything(repo):
    write(repo, {"src/app.py": "print('v2')\n", "notes.txt": "edited\n", "agent.py": "made by the agent\n",
                 "user-new.txt": "the user's own\n", "new/dir/agent2.py": "deep\n", "x.log": "ignored\n"})
    (repo / "README.md").unlink()
    (repo / "gone-untracked.txt").unlink()
    (repo / "docs" / "a.md").unlink()
    (repo / "cfg" / "settings").unlink()
    (repo / "cfg").rmdir()
    write(repo, {"cfg": "a file where a committed folder was\n"})  # never deleted: in HEAD's tree
    (repo / "scratch" / "x.txt").unlink()
    (repo / "scratch").rmdir()
    write(repo, {"scratch": "the agent's file where a folder was\n"})  # deleted, the folder comes back
    if sys.platform != "win32":
        os.chmod(repo / "run.sh", 0o755)
    git(repo, "add", "src/app.py")  # staged in the user's index: still only read


@pytest.mark.parametrize("created", [
    ["agent.py", "new/dir/agent2.py", "scratch"],  # what the agent made goes
    [],  # nothing known to be the agent's: every new file is kept, the blocking files too
])
def test_derived_tree_is_what_a_scan_stores(repo, git_home, created):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    change_everything(repo)
    before = UserGitState.capture(repo)
    plan = plan_restore(ref, state_home=git_home, session_created=created)
    result = apply_restore(plan, state_home=git_home, derive_tree=True)

    assert result.ok and result.safety.snapshot_commit  # the safety snapshot is still taken
    assert isinstance(result.tree_after, TreeAfterRestore)
    scanned = scan(repo, git_home)
    assert result.tree_after.built.tree == scanned.snapshot_tree
    derived = take_snapshot(repo, "t1-abc", 2, state_home=git_home, tree_after_restore=result.tree_after)
    # what the capsule says about the workspace is what a scan would say
    assert (derived.snapshot_tree, derived.dirty) == (scanned.snapshot_tree, scanned.dirty)
    assert set(result.deleted) == set(created)
    assert (repo / "scratch" / "x.txt").is_file() == ("scratch" in created)
    assert (repo / "cfg").read_text() == "a file where a committed folder was\n"
    assert (repo / "user-new.txt").read_text() == "the user's own\n"  # never the agent's: kept
    after = UserGitState.capture(repo)
    for name in ("head", "branch", "index", "stash", "config", "hooks", "head_log"):
        assert getattr(after, name) == getattr(before, name), f"the user's {name} changed"


def test_derived_tree_follows_skips_and_files_changed_meanwhile(repo, git_home):
    """Paths the restore leaves alone (a folder with files in the way, a file changed after the
    plan) keep what the work tree has, in the derived tree as in a scan."""
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    (repo / "README.md").unlink()
    write(repo, {"README.md/inside.txt": "a folder with a file where README.md was\n",
                 "src/app.py": "print('v2')\n"})
    plan = plan_restore(ref, state_home=git_home)
    write(repo, {"docs/b.md": "changed after the plan\n"})
    result = apply_restore(plan, state_home=git_home, derive_tree=True)
    assert "README.md" in {s.path for s in plan.skipped}
    assert (repo / "docs" / "b.md").read_text() == "changed after the plan\n"
    assert result.tree_after.built.tree == scanned_tree(repo, git_home)


@pytest.mark.parametrize("user_file", [False, True])
def test_a_restore_of_every_change_is_the_checkpoint_tree(repo, git_home, git_commands, user_file):
    """When the restore carries out every difference between the safety snapshot and the
    checkpoint, the work tree is the checkpoint's tree: no ``write-tree`` is run for it (only
    the safety snapshot's). A file the restore keeps (the user's) makes it write the tree."""
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('v2')\n", "notes.txt": "edited\n", "agent.py": "new\n"})
    (repo / "README.md").unlink()
    if sys.platform != "win32":
        os.chmod(repo / "run.sh", 0o755)
    if user_file:
        write(repo, {"user-new.txt": "the user's own\n"})
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.py"])
    git_commands.clear()
    result = apply_restore(plan, state_home=git_home, derive_tree=True)
    commands = list(git_commands)

    assert result.ok and result.deleted == ["agent.py"]
    assert commands.count("write-tree") == (2 if user_file else 1)
    scanned = scanned_tree(repo, git_home)
    assert result.tree_after.built.tree == scanned
    assert (scanned == ref.snapshot_tree) != user_file
    derived = take_snapshot(repo, "t1-abc", 2, state_home=git_home, tree_after_restore=result.tree_after)
    assert (derived.snapshot_tree, derived.dirty) == (scanned, scan(repo, git_home).dirty)


def test_no_tree_unless_asked(repo, git_home):
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('v2')\n"})
    result = apply_restore(plan_restore(ref, state_home=git_home), state_home=git_home)
    assert result.tree_after is None and "tree_after" not in result.to_dict()


def test_a_snapshot_under_another_policy_scans(repo, git_home):
    """The derived tree was built under the checkpoint's policy: a snapshot under other
    exclusions scans the work tree as usual."""
    ref = take_snapshot(repo, "t1-abc", 1, state_home=git_home)
    write(repo, {"src/app.py": "print('v2')\n", "docs/extra.md": "x\n"})
    result = apply_restore(plan_restore(ref, state_home=git_home), state_home=git_home, derive_tree=True)
    other = WorkspacePolicy(exclude=("docs/",))
    snap = take_snapshot(repo, "t1-abc", 2, state_home=git_home, policy=other,
                         tree_after_restore=result.tree_after)
    other_scan = take_snapshot(repo, "other", 1, state_home=git_home, policy=other)
    assert snap.snapshot_tree == other_scan.snapshot_tree != result.tree_after.built.tree
    same = take_snapshot(repo, "t1-abc", 3, state_home=git_home, tree_after_restore=result.tree_after)
    scanned = scan(repo, git_home)
    assert same.snapshot_tree == result.tree_after.built.tree == scanned.snapshot_tree
    assert (same.dirty, same.head, same.branch) == (scanned.dirty, scanned.head, scanned.branch)


def _session_after_a_compaction(home, tmp_path):
    """A session compacted once, then an agent that creates agent.txt and edits src/app.py,
    and a user who deletes README.md and writes user-notes.txt."""
    from test_rewind_support import HookSession

    repo = make_repo(tmp_path / "work", {"README.md": "hello\n", "src/app.py": "v1\n"})
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("first")
    s.stop(p1)
    s.compact()
    p2 = s.prompt("break things")
    s.write_file(p2, "agent.txt", "agent\n")
    s.tool(p2, "Edit", {"file_path": str(repo / "src/app.py"), "old_string": "v1",
                        "new_string": "v2"}, write={"src/app.py": "v2\n"})
    write(repo, {"user-notes.txt": "the user's own\n"})
    (repo / "README.md").unlink()
    s.stop(p2)
    return repo, s


def test_rewind_files_scans_once_and_its_checkpoint_holds_the_restored_tree(home, tmp_path, git_home,
                                                                           monkeypatch):
    """A files rewind: the preview lists the changes, the safety snapshot is taken (the only
    snapshot that scans the work tree; the preview compares with `git status`), the user's new
    file survives, and the new checkpoint's snapshot is the restored work tree, without a scan."""
    from continuation.boundary import checkpoints as cps
    from continuation.session.engine import Engine
    from continuation.rewind.operation import apply_rewind, plan_rewind
    from continuation.workspace import treebuild

    repo, s = _session_after_a_compaction(home, tmp_path)
    scans = []
    monkeypatch.setattr(treebuild, "_stage_hook", lambda name: scans.append(name) if name == "seeded" else None)
    with Engine(home) as e:
        t = s.thread(e)
        cp = cps.list_checkpoints(t)[0]
        plan = plan_rewind(e, cp.checkpoint_id, "files")
        assert (plan.files.modified, plan.files.recreated, plan.files.deleted, plan.files.kept) == (
            ["src/app.py"], ["README.md"], ["agent.txt"], ["user-notes.txt"])
        assert scans == []  # the preview compares; it stores nothing
        result = apply_rewind(e, plan)
        new_ws = result.checkpoint.workspace
    assert scans == ["seeded"]  # the safety snapshot; the new checkpoint's is derived from it
    assert result.files["safety_commit"] and git(repo, "cat-file", "-t", result.files["safety_commit"]).strip() == "commit"
    assert (repo / "user-notes.txt").read_text() == "the user's own\n" and not (repo / "agent.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n" and (repo / "src/app.py").read_text() == "v1\n"
    monkeypatch.setattr(treebuild, "_stage_hook", None)
    scanned = scan(repo, git_home)
    assert new_ws["snapshot_tree"] == scanned.snapshot_tree
    assert DirtySummary.from_dict(new_ws["dirty"]) == scanned.dirty


def test_outside_git_the_derived_snapshot_is_what_a_scan_stores(git_home, tmp_path):
    """A folder outside git (shadow repository): the snapshot after the restore is the derived
    tree, and its changes are counted against the safety snapshot, as a scan's would be."""
    folder = tmp_path / "plain"
    write(folder, {"a.txt": "a\n", "sub/b.txt": "b\n", "c.txt": "c\n"})
    ref = take_snapshot(folder, "t1-abc", 1, state_home=git_home)
    write(folder, {"a.txt": "changed\n", "agent.txt": "new\n", "mine.txt": "the user's\n"})
    (folder / "sub" / "b.txt").unlink()
    plan = plan_restore(ref, state_home=git_home, session_created=["agent.txt"])
    result = apply_restore(plan, state_home=git_home, derive_tree=True)
    assert result.ok and result.tree_after.kind == "shadow"
    derived = take_snapshot(folder, "t1-abc", 2, state_home=git_home, tree_after_restore=result.tree_after)
    assert (folder / "mine.txt").exists() and not (folder / "agent.txt").exists()
    assert derived.dirty.base == "previous-snapshot"
    assert {p.path for p in derived.dirty.paths} == {"a.txt", "sub/b.txt", "agent.txt"}
    scanned = take_snapshot(folder, "scan-check", 1, state_home=git_home)
    assert derived.snapshot_tree == scanned.snapshot_tree


@pytest.mark.parametrize("yes", [True, False])
def test_rewind_files_at_once_scans_the_work_tree_once(home, tmp_path, git_home, yes):
    """``rewind --files --yes`` (or with no terminal to confirm on): one ``git status`` in all,
    the safety snapshot's; the preview is read off it (``workspace.safety_first``)."""
    import subprocess

    from continuation.boundary import checkpoints as cps
    from continuation.session.engine import Engine

    repo, s = _session_after_a_compaction(home, tmp_path)
    with Engine(home) as e:
        cp = cps.list_checkpoints(s.thread(e))[0]
    trace = tmp_path / "git-trace"
    r = subprocess.run([sys.executable, "-m", "continuation", "rewind", cp.checkpoint_id, "--files",
                        *(["--yes"] if yes else [])], capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
                       env={**os.environ, "CONTINUATION_HOME": str(home), "GIT_TRACE": str(trace)})
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert b"modify    src/app.py" in r.stdout and b"delete    agent.txt" in r.stdout
    # the preview names the safety snapshot already taken, the one the rewind records
    with Engine(home) as e:
        rewound = [ev for ev in s.thread(e).events() if ev["type"] == "workspace_restored"][-1]
    preview = r.stdout.split(b"\nrewound: ")[0]
    assert f"kept in the safety snapshot {rewound['data']['safety_ref']}.".encode() in preview
    assert trace.read_text().count("built-in: git status") == 1
    assert (repo / "README.md").read_text() == "hello\n" and (repo / "src/app.py").read_text() == "v1\n"
    assert not (repo / "agent.txt").exists() and (repo / "user-notes.txt").exists()
