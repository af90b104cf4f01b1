"""``continuation restore`` and ``drift`` on a real temporary git repository: the user's HEAD,
branch, index and (apart from the restored files) status stay as they were; only a file the
session created after the checkpoint is deleted; the user's own untracked files are kept."""
from __future__ import annotations

import json

import pytest
from test_rewind_support import HookSession, cli, cli_json
from workspace_repos import UserGitState, git, git_home, make_repo  # noqa: F401

from continuation.session.engine import Engine


@pytest.fixture
def repo(tmp_path, git_home, home):
    return make_repo(tmp_path / "repo", {"src/app.py": "print('v1')\n", "README.md": "readme\n",
                                         ".gitignore": "*.log\n"})


def test_restore_cli_leaves_the_users_git_alone(home, repo):
    # the user has a staged change, an unstaged change and an untracked file at the checkpoint
    (repo / "README.md").write_text("readme, staged edit\n", encoding="utf-8")
    git(repo, "add", "README.md")
    (repo / "src" / "app.py").write_text("print('v1, unstaged')\n", encoding="utf-8")
    (repo / "user-notes.txt").write_text("mine\n", encoding="utf-8")
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("look around")
    s.stop(p1, "looked")
    s.compact()
    at_checkpoint = UserGitState.capture(repo)
    # after the checkpoint: the session edits a file, creates one, and one in a new folder;
    # the user creates an untracked file of their own and an ignored log
    p2 = s.prompt("refactor")
    s.tool(p2, "Edit", {"file_path": str(repo / "src" / "app.py")}, exit_code=None,
           write={"src/app.py": "print('v2')\n"})
    s.write_file(p2, "src/helper.py", "def help(): ...\n")
    s.write_file(p2, "gen/out.py", "x = 1\n")
    s.stop(p2, "refactored")
    (repo / "user-later.txt").write_text("also mine\n", encoding="utf-8")
    (repo / "debug.log").write_text("ignored\n", encoding="utf-8")
    before_restore = UserGitState.capture(repo)
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]

    r = cli("restore", cp, "--dry-run", home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert "modify    src/app.py" in out and "delete    src/helper.py" in out
    assert "delete    gen/out.py" in out and "keep      user-later.txt" in out
    assert UserGitState.capture(repo).status == before_restore.status
    assert (repo / "src" / "helper.py").exists()

    r = cli("restore", cp, "--reason", "refactor was wrong", home=home)
    assert r.returncode == 0, r.stderr.decode()
    after = UserGitState.capture(repo)
    for field in ("head", "branch", "index", "stash", "config", "hooks", "refs", "head_log"):
        assert getattr(after, field) == getattr(at_checkpoint, field), field
    # status: as at the checkpoint, plus the user's later untracked file (kept)
    assert sorted(after.status.splitlines()) == sorted(at_checkpoint.status.splitlines() + ["?? user-later.txt"])
    assert (repo / "src" / "app.py").read_text() == "print('v1, unstaged')\n"
    assert not (repo / "src" / "helper.py").exists() and not (repo / "gen").exists()
    assert (repo / "user-notes.txt").read_text() == "mine\n"
    assert (repo / "user-later.txt").read_text() == "also mine\n"
    assert (repo / "debug.log").read_text() == "ignored\n"
    with Engine(home) as e:
        t = s.thread(e)
        restored = [ev for ev in t.events() if ev["type"] == "workspace_restored"]
        assert len(restored) == 1 and restored[0]["data"]["reason"] == "refactor was wrong"
        safety = restored[0]["data"]["safety_ref"]
        assert safety.startswith(f"refs/continuation/{t.key}/safety/")
        # the safety snapshot holds the files as they were before the restore
        assert git(repo, "show", f"{safety}:src/helper.py") == "def help(): ...\n"
        assert {r.text: r.state for r in t.inputs()}["refactor"] == "handled"


def test_drift_lists_changes_since_the_last_checkpoint(home, repo):
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("start")
    s.stop(p1)
    s.compact()
    r = cli("drift", "--json", home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["clean"] is True
    p2 = s.prompt("edit")
    s.write_file(p2, "new.py", "n = 1\n")
    s.stop(p2)
    (repo / "README.md").write_text("user edit\n", encoding="utf-8")
    data = cli_json("drift", home=home)
    report = data["report"]
    assert report["added"] == ["new.py"] and report["modified"] == ["README.md"]
    assert report["outside_session"] == ["README.md"]
    r = cli("drift", home=home)
    assert b"README.md  (outside the session)" in r.stdout


def test_restore_when_the_snapshot_objects_are_gone_is_a_clear_error(home, repo):
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("start")
    s.stop(p1)
    s.compact()
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]
    git(repo, "update-ref", "-d", cp["snapshot_ref"])
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "--prune=now", "-q")
    r = cli("restore", cp["checkpoint_id"], home=home)
    assert r.returncode == 1 and b"Traceback" not in r.stderr
    assert b"gone" in r.stderr or b"snapshot" in r.stderr


def test_restore_can_be_undone_from_its_safety_snapshot(home, repo):
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("start")
    s.stop(p1)
    s.compact()
    p2 = s.prompt("work")
    s.tool(p2, "Edit", {"file_path": str(repo / "README.md")}, exit_code=None,
           write={"README.md": "edited by the agent\n"})
    s.write_file(p2, "made.py", "m = 1\n")
    s.stop(p2)
    (repo / "README.md").unlink()  # deleted after the checkpoint: the restore re-creates it
    s.write_file(p2, "README.md", "rewritten\n")
    (repo / "src" / "app.py").unlink()
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    before = {p: (repo / p).read_bytes() for p in ("README.md", "made.py")}
    assert cli("restore", cp, home=home).returncode == 0
    assert (repo / "src" / "app.py").exists() and not (repo / "made.py").exists()
    r = cli("restore", "--undo", "--dry-run", home=home)
    assert r.returncode == 0 and b"made.py" in r.stdout and (repo / "src" / "app.py").exists()
    r = cli("restore", "--undo", "--reason", "I wanted those", home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert {p: (repo / p).read_bytes() for p in ("README.md", "made.py")} == before
    assert not (repo / "src" / "app.py").exists(), "re-created by the restore, so removed by the undo"
    with Engine(home) as e:
        from continuation.boundary import checkpoints as cps

        notes = cps.load(s.thread(e)).capsule.notices
        assert any("undid the files restore" in n.lines[0] for n in notes)
    r = cli("restore", home=home)
    assert r.returncode == 2 and b"--undo" in r.stderr


def test_restore_undo_without_a_restore_is_a_clear_error(home, repo):
    s = HookSession(home, repo)
    s.start()
    s.prompt("hello")
    r = cli("restore", "--undo", home=home)
    assert r.returncode == 1 and b"no files restore to undo" in r.stderr


def test_corrupt_workspace_reference_and_capsule_are_reported_not_raised(home, repo):
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("start")
    s.stop(p1)
    s.compact()
    p2 = s.prompt("more")
    s.stop(p2)
    s.compact()
    with Engine(home) as e:
        first, second = e.store.conn.execute(
            "SELECT checkpoint_id FROM checkpoints ORDER BY generation").fetchall()
        with e.store.transaction() as c:
            c.execute("UPDATE checkpoints SET workspace=? WHERE checkpoint_id=?",
                      (json.dumps({"root": str(repo), "kind": "bogus"}), first[0]))
            c.execute("UPDATE checkpoints SET capsule=? WHERE checkpoint_id=?",
                      (b"\x00torn", second[0]))
    r = cli("rewind", first[0], "--files", home=home)
    assert r.returncode == 1 and b"bad workspace reference" in r.stderr and b"Traceback" not in r.stderr
    r = cli("checkpoints", home=home)
    assert r.returncode == 0 and b"CORRUPT" in r.stdout and b"capsule unreadable" in r.stdout
    # the conversation rewind builds a fresh capsule from the log: a torn old one does not matter
    r = cli("rewind", second[0], "--conversation", home=home)
    assert r.returncode == 0, r.stderr.decode()


def test_restore_keeps_files_the_user_made_or_committed_between_checkpoints(home, repo):
    """A later snapshot of the thread records the user's own new files too: it is no evidence
    that the agent created them (found in review: such files were deleted by a restore)."""
    s = HookSession(home, repo)
    s.start()
    p1 = s.prompt("one")
    s.stop(p1)
    s.compact()  # the checkpoint restored below: neither file exists yet
    (repo / "my-own-notes.txt").write_text("written by hand\n")
    (repo / "feature.py").write_text("x = 1\n")
    git(repo, "add", "feature.py")
    git(repo, "commit", "-qm", "the user's commit")
    p2 = s.prompt("two")
    s.write_file(p2, "agent-made.py", "made by the agent\n")
    s.stop(p2)
    s.compact()  # a later snapshot holding all three files
    first = min(cli_json("checkpoints", home=home)["checkpoints"], key=lambda c: c["generation"])
    r = cli("restore", first["checkpoint_id"], home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert (repo / "my-own-notes.txt").read_text() == "written by hand\n"
    assert (repo / "feature.py").read_text() == "x = 1\n"
    assert not (repo / "agent-made.py").exists(), "the agent's Write is named by its tool call"
    assert "feature.py" not in git(repo, "status", "--porcelain")
