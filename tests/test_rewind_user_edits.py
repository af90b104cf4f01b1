"""`rewind --files` restores what the agent changed and keeps the user's own edits: a changed
file no agent call names, staged or changed outside every call's time window, is kept; one
changed while a shell call ran is unsure (restored, or kept with --keep-unsure); --all restores
everything. The preview names each file and why."""
from __future__ import annotations

import json
import time

import pytest
from test_rewind_support import HookSession, cli
from workspace_repos import git, git_home, make_repo  # noqa: F401 (git_home is a fixture)

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine


@pytest.fixture
def repo(tmp_path, git_home, home):
    return make_repo(tmp_path / "repo", {"base.txt": "v1\n", "other.txt": "o1\n",
                                         "shell.txt": "s1\n"})


def _session(home, repo):
    """A checkpoint, then the agent's work (an Edit it names, a Write it creates, a shell call
    that changes a file it does not name), then the user's own edit of base.txt: staged as
    v2, edited again to v3, after every call ended."""
    s = HookSession(home, repo)
    s.start()
    p = s.prompt("refactor the parser")
    s.compact()
    with Engine(home) as e:
        checkpoint = cps.list_checkpoints(s.thread(e))[-1].checkpoint_id
    s.tool(p, "Edit", {"file_path": str(repo / "other.txt"), "old_string": "o1",
                       "new_string": "o2"}, write={"other.txt": "o2\n"})
    s.write_file(p, "agent.txt", "made by the agent\n")
    s.tool(p, "Bash", {"command": "./regenerate.sh"}, write={"shell.txt": "s2\n"})
    s.stop(p)
    time.sleep(1.5)  # past every call's window and its slack
    (repo / "base.txt").write_text("v2\n")
    git(repo, "add", "base.txt")
    (repo / "base.txt").write_text("v3\n")
    return checkpoint


def test_the_users_edit_is_kept_and_the_agents_work_restored(home, repo):
    checkpoint = _session(home, repo)
    preview = cli("rewind", checkpoint, "--files", "--dry-run", home=home)
    text = preview.stdout.decode()
    assert preview.returncode == 0, preview.stderr
    assert "keep      base.txt (your edit: staged in your index outside every agent call" in text
    assert "unsure    shell.txt (changed at" in text and "restored (--keep-unsure keeps it)" in text
    assert "modify    other.txt" in text and "delete    agent.txt" in text
    done = cli("rewind", checkpoint, "--files", "--yes", "--json", home=home)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["result"]["files"]
    assert [k["path"] for k in files["kept_edits"]] == ["base.txt"]
    assert (repo / "base.txt").read_text() == "v3\n"  # the user's edit, as they left it
    assert git(repo, "show", ":base.txt").strip() == "v2"  # and their index
    assert (repo / "other.txt").read_text() == "o1\n"  # the agent's Edit undone
    assert not (repo / "agent.txt").exists()  # the agent's Write removed
    assert (repo / "shell.txt").read_text() == "s1\n"  # unsure: restored by default


def test_keep_unsure_and_all(home, repo):
    checkpoint = _session(home, repo)
    kept = cli("rewind", checkpoint, "--files", "--yes", "--keep-unsure", home=home)
    assert kept.returncode == 0, kept.stderr
    assert (repo / "shell.txt").read_text() == "s2\n" and (repo / "base.txt").read_text() == "v3\n"
    everything = cli("rewind", checkpoint, "--files", "--yes", "--all", home=home)
    assert everything.returncode == 0, everything.stderr
    assert (repo / "base.txt").read_text() == "v1\n" and (repo / "shell.txt").read_text() == "s1\n"


def test_an_edit_outside_every_call_is_kept_unstaged_too(home, repo):
    checkpoint = _session(home, repo)
    git(repo, "reset", "-q", "base.txt")  # not staged: only its time tells
    time.sleep(1.1)
    (repo / "base.txt").write_text("v4\n")
    done = cli("rewind", checkpoint, "--files", "--yes", "--json", home=home)
    assert done.returncode == 0, done.stderr
    [kept] = json.loads(done.stdout)["result"]["files"]["kept_edits"]
    assert kept["path"] == "base.txt" and "outside every agent call" in kept["why"]
    assert (repo / "base.txt").read_text() == "v4\n"
