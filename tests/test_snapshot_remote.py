"""CONTINUATION_SNAPSHOT_REMOTE: snapshots pushed to the named remote (only their own refs,
never by default) so that host B, with its own clone and state home, can restore them."""
from __future__ import annotations

import pytest

from continuation.workspace import apply_restore, load_snapshot, plan_restore, take_snapshot
from workspace_repos import git, git_home, make_repo, write  # noqa: F401


@pytest.fixture
def hosts(git_home, tmp_path):
    """A shared bare remote, host A's repository (origin = the remote) and host B's clone."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a = make_repo(tmp_path / "a", {"app.py": "v1\n", "README.md": "readme\n"})
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    return remote, a, tmp_path / "b"


def _refs(repo):
    return git(repo, "for-each-ref", "--format=%(refname)").split()


def test_nothing_is_pushed_by_default(hosts, git_home, monkeypatch):
    remote, a, _ = hosts
    monkeypatch.delenv("CONTINUATION_SNAPSHOT_REMOTE", raising=False)
    before = _refs(remote)
    take_snapshot(a, "t1-abc", 1, state_home=git_home / "state-a")
    assert _refs(remote) == before


def test_only_the_threads_snapshot_refs_are_pushed_and_host_b_restores(hosts, git_home,
                                                                       monkeypatch):
    remote, a, b = hosts
    monkeypatch.setenv("CONTINUATION_SNAPSHOT_REMOTE", "origin")
    git(a, "checkout", "-q", "-b", "local-only")  # a branch that must stay local
    write(a, {"app.py": "v2 at the checkpoint\n", "new.txt": "untracked work\n"})
    take_snapshot(a, "t1-abc", 1, state_home=git_home / "state-a")
    take_snapshot(a, "t2-other", 1, state_home=git_home / "state-a")
    assert sorted(r for r in _refs(remote) if not r.startswith("refs/heads/main")) == [
        "refs/continuation/t1-abc/1", "refs/continuation/t2-other/1"]
    # host B: its own clone and state home; the snapshot is fetched when it is missing
    assert not [r for r in _refs(b) if r.startswith("refs/continuation/")]
    ref = load_snapshot(b, "t1-abc/1", state_home=git_home / "state-b")
    assert [r for r in _refs(b) if r.startswith("refs/continuation/")] == [
        "refs/continuation/t1-abc/1"]  # only that thread's refs came
    result = apply_restore(plan_restore(ref, state_home=git_home / "state-b"),
                           state_home=git_home / "state-b")
    assert result.ok
    assert (b / "app.py").read_text() == "v2 at the checkpoint\n"
    assert (b / "new.txt").read_text() == "untracked work\n"


def test_a_failed_push_does_not_fail_the_snapshot(hosts, git_home, monkeypatch, capsys):
    _, a, _ = hosts
    monkeypatch.setenv("CONTINUATION_SNAPSHOT_REMOTE", "no-such-remote")
    ref = take_snapshot(a, "t1-abc", 1, state_home=git_home / "state-a")
    assert ref.snapshot_ref == "refs/continuation/t1-abc/1"
    assert "could not push refs/continuation/t1-abc/1 to no-such-remote" in capsys.readouterr().err


def test_host_b_restores_a_checkpoint_recorded_at_another_path(hosts, git_home, monkeypatch):
    """A shared store names host A's folder; on host B the clone sits elsewhere: the files go
    into the clone of the current folder, fetched from the remote."""
    import shutil
    from types import SimpleNamespace

    from continuation.rewind.errors import RewindError
    from continuation.rewind.operation import workspace_ref

    remote, a, b = hosts
    monkeypatch.setenv("CONTINUATION_SNAPSHOT_REMOTE", "origin")
    write(a, {"app.py": "v2 at the checkpoint\n"})
    recorded = take_snapshot(a, "t1-abc", 1, state_home=git_home / "state-a").to_dict()
    shutil.rmtree(a)  # host A's folder does not exist on host B
    cp = SimpleNamespace(checkpoint_id="t1-abc:1", workspace=recorded)

    monkeypatch.chdir(remote.parent)  # not inside any repository: a clear error
    with pytest.raises(RewindError, match="not on this machine"):
        workspace_ref(cp)

    monkeypatch.chdir(b)
    ref = workspace_ref(cp)
    assert ref.root == str(b.resolve())
    result = apply_restore(plan_restore(ref, state_home=git_home / "state-b"),
                           state_home=git_home / "state-b")
    assert result.ok
    assert (b / "app.py").read_text() == "v2 at the checkpoint\n"
