"""`continuation doctor`: store version and integrity, derived state, checkpoints, temp files,
orphaned snapshot refs, locks, disk usage, hooks installed and trusted."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time

import pytest

from continuation.boundary import crossing as boundary, checkpoints
from continuation.commands import run as cli
from continuation.session.engine import Engine


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    """A private HOME (hooks are looked up there); no CODEX_HOME / CLAUDE_CONFIG_DIR leaks in."""
    h = tmp_path / "userhome"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for key in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    return h


@pytest.fixture
def claude_hooks(user_home, home):
    from continuation.install import install

    install("claude", "user", project_dir=user_home, home=user_home, state_home=home,
            command=["/opt/bin/continuation"])
    return user_home


def doctor(capsys, *extra) -> tuple[int, dict]:
    capsys.readouterr()
    code = cli(["doctor", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def by_check(report: dict, check: str) -> list[dict]:
    return [f for f in report["findings"] if f["check"] == check]


def _thread_with_work(home, root=None):
    with Engine(home) as e:
        t = e.thread("claude", "s1", workspace_root=root)
        t.admit("do it", input_id="p1", turn_id="p1")
        t.tool_started("c1", "Bash", {"command": "ls"}, turn_id="p1")
        t.tool_finished("c1", "ok")
        t.turn_completed("p1")
        return t.key


def test_healthy(home, claude_hooks, capsys):
    _thread_with_work(home)
    code, report = doctor(capsys)
    assert code == 0 and report["healthy"] is True, report
    assert by_check(report, "store.integrity")[0]["message"] == "PRAGMA integrity_check: ok"
    assert by_check(report, "store.version")[0]["data"]["version"] >= 1
    assert by_check(report, "disk")[0]["data"]["total_bytes"] > 0
    [hook] = [f for f in by_check(report, "hooks") if f["status"] == "ok"]
    assert "claude user hooks" in hook["message"]
    capsys.readouterr()
    assert cli(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("healthy") and "[ok] store.integrity" in out


def test_no_hooks_installed_is_a_problem(home, user_home, capsys):
    _thread_with_work(home)
    code, report = doctor(capsys)
    assert code == 1
    [f] = [f for f in by_check(report, "hooks") if f["status"] == "problem"]
    assert "continuation install --runtime" in f["suggestion"]


def test_codex_hooks_untrusted_then_trusted(home, user_home, capsys):
    from continuation.install import install
    from continuation.install.codex import codex_hook_hash, event_key_label

    install("codex", "user", project_dir=user_home, home=user_home, state_home=home,
            command=["/opt/bin/continuation"], env={})
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "hooks")
    assert f["status"] == "problem" and "not trusted by Codex" in f["message"]
    assert "/hooks" in f["suggestion"] or "trust" in f["suggestion"]
    hooks_json = user_home / ".codex" / "hooks.json"
    data = json.loads(hooks_json.read_text(encoding="utf-8"))
    lines = []
    for event, groups in data["hooks"].items():
        digest = codex_hook_hash(event, groups[0].get("matcher"), groups[0]["hooks"][0])
        lines += [f'[hooks.state."{hooks_json}:{event_key_label(event)}:0:0"]',
                  f'trusted_hash = "{digest}"', ""]
    (user_home / ".codex" / "config.toml").write_text("\n".join(lines), encoding="utf-8")
    code, report = doctor(capsys)
    assert code == 0, report
    assert "installed and trusted" in by_check(report, "hooks")[0]["message"]


def test_garbage_store_file(home, claude_hooks, capsys):
    home.mkdir(parents=True, exist_ok=True)
    (home / "store.sqlite3").write_bytes(b"this is not a database" * 100)
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "store")
    assert f["status"] == "problem" and "cannot be read" in f["message"]
    assert "continuation doctor --salvage" in f["suggestion"] and "aside" in f["suggestion"]
    capsys.readouterr()
    assert cli(["status"]) == 1  # other commands say to run the doctor, in one line
    assert "continuation doctor" in capsys.readouterr().err


def test_damaged_pages_fail_integrity_check(home, claude_hooks, capsys):
    key = _thread_with_work(home)
    with Engine(home) as e:
        t = e.get_thread(key)
        for i in range(300):  # enough rows for several b-tree pages
            t.claim("x" * 200, turn_id="p1")
    db = home / "store.sqlite3"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    raw = bytearray(db.read_bytes())
    for p in range(3, len(raw) // page - 1, 2):  # wreck every other page after the schema
        raw[p * page + 8: p * page + 64] = b"\xff" * 56
    db.write_bytes(bytes(raw))
    code, report = doctor(capsys)
    assert code == 1
    problems = [f for f in report["findings"] if f["status"] == "problem"
                and f["check"].startswith("store")]
    assert problems and "--salvage" in problems[0]["suggestion"]


def test_newer_schema_is_refused_with_advice(home, claude_hooks, capsys):
    _thread_with_work(home)
    con = sqlite3.connect(home / "store.sqlite3")
    con.execute("PRAGMA user_version=99")
    con.close()
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "store.version")
    assert f["status"] == "problem" and f["suggestion"] == "upgrade continuation"


def test_derived_tables_out_of_step_and_fix(home, claude_hooks, capsys):
    key = _thread_with_work(home)
    con = sqlite3.connect(home / "store.sqlite3")
    con.execute("UPDATE inputs SET state='pending', data=json_set(data, '$.state', 'pending')"
                " WHERE thread_key=?", (key,))
    con.commit()
    con.close()
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "store.derived")
    assert f["status"] == "problem" and "--fix" in f["suggestion"]
    code, report = doctor(capsys, "--fix")
    assert code == 0, report
    with Engine(home) as e:
        assert [r.state for r in e.get_thread(key).inputs()] == ["handled"]


def test_flipped_capsule_bytes_are_detected_and_the_previous_one_used(home, claude_hooks, capsys):
    key = _thread_with_work(home)
    with Engine(home) as e:
        t = e.get_thread(key)
        first = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        t.admit("second request", input_id="p2", turn_id="p2")
        second = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
    con = sqlite3.connect(home / "store.sqlite3")
    blob = bytearray(con.execute("SELECT capsule FROM checkpoints WHERE checkpoint_id=?",
                                 (second.checkpoint_id,)).fetchone()[0])
    blob[len(blob) // 2] ^= 0x01  # one flipped bit
    con.execute("UPDATE checkpoints SET capsule=? WHERE checkpoint_id=?", (bytes(blob), second.checkpoint_id))
    con.commit()
    con.close()
    with Engine(home) as e:
        loaded = checkpoints.load(e.get_thread(key))
    assert loaded.checkpoint.checkpoint_id == first.checkpoint_id
    assert len(loaded.problems) == 1 and "corrupt" in loaded.problems[0]
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "checkpoints")
    assert f["status"] == "warn" and second.checkpoint_id in f["message"]
    assert "previous valid checkpoint is used" in f["suggestion"]


def test_stale_temp_files_and_fix(home, claude_hooks, capsys):
    key = _thread_with_work(home)
    folder = home / "capsules" / key
    folder.mkdir(parents=True)
    old = folder / ".g000001.json.k3j4.tmp"
    old.write_bytes(b"half a capsu")
    fresh = folder / ".g000002.json.zz9.tmp"  # a writer may be busy with this one right now
    fresh.write_bytes(b"x")
    committed = folder / "g000001.json"
    committed.write_bytes(b"{}")
    past = time.time() - 3600
    os.utime(old, (past, past))
    code, report = doctor(capsys)
    assert code == 1
    [f] = by_check(report, "temps")
    assert f["status"] == "warn" and f["data"]["files"] == [str(old)]
    code, report = doctor(capsys, "--fix")
    assert not old.exists() and fresh.exists() and committed.exists()
    assert by_check(report, "temps")[0]["data"]["removed"] == [str(old)]


def test_held_workspace_lock_is_reported(home, claude_hooks, capsys):
    from filelock import FileLock

    _thread_with_work(home)
    lock_path = home / "workspaces" / "abc123" / "lock"
    lock_path.parent.mkdir(parents=True)
    lock = FileLock(str(lock_path))
    with lock:
        code, report = doctor(capsys)
        [f] = by_check(report, "locks")
        assert f["status"] == "info" and "abc123 is locked now" in f["message"]
    code, report = doctor(capsys)
    assert by_check(report, "locks")[0]["status"] == "ok"


def _git(repo, *args):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}).stdout


def test_orphaned_snapshot_refs_and_fix(home, claude_hooks, tmp_path, capsys):
    from continuation.workspace import take_snapshot

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n", encoding="utf-8")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "b.txt").write_text("untracked\n", encoding="utf-8")
    key = _thread_with_work(home, root=str(repo))
    take_snapshot(repo, key, 1, state_home=home)
    take_snapshot(repo, "ghost-thread", 1, state_home=home)  # its thread was deleted
    before = (_git(repo, "rev-parse", "HEAD"), (repo / ".git" / "index").read_bytes(),
              _git(repo, "status", "--porcelain"))
    code, report = doctor(capsys)
    assert code == 1
    [f] = [f for f in by_check(report, "refs") if f["status"] == "warn"]
    assert f["data"]["thread"] == "ghost-thread"
    assert f["data"]["refs"] == ["refs/continuation/ghost-thread/1"]
    code, report = doctor(capsys, "--fix")
    refs = _git(repo, "for-each-ref", "--format=%(refname)", "refs/continuation/")
    assert refs.split() == [f"refs/continuation/{key}/1"]
    after = (_git(repo, "rev-parse", "HEAD"), (repo / ".git" / "index").read_bytes(),
             _git(repo, "status", "--porcelain"))
    assert after == before
    code, report = doctor(capsys)
    assert code == 0, report


def test_no_store_yet(home, claude_hooks, capsys):
    code, report = doctor(capsys)
    assert by_check(report, "store")[0]["status"] == "info"
    assert code == 0


def test_interrupted_threads_are_mentioned_not_recorded(home, claude_hooks, capsys):
    p = subprocess.Popen(["python3", "-c", "pass"])
    p.wait()
    marker = {"pid": p.pid, "proc_start": None, "host": __import__("continuation.host.liveness",
                                                                 fromlist=["x"]).hostname()}
    with Engine(home) as e:
        t = e.thread("codex", "gone")
        t.admit("x", input_id="i1", turn_id="t1", session=marker)
    code, report = doctor(capsys)
    assert code == 0  # information, not a fault of the installation
    [f] = by_check(report, "sessions")
    assert f["status"] == "info" and f["data"]["threads"] == ["codex-gone"]
    with Engine(home) as e:
        assert [ev["type"] for ev in e.get_thread("codex-gone").events()] == ["input_admitted"]


def test_a_module_launcher_is_not_flagged_where_install_would_write_it_again(home, user_home, capsys,
                                                                            monkeypatch):
    """Where the package sits in a zip, `continuation install` writes `-m continuation` itself:
    the doctor does not suggest installing again for it, only for the slower script."""
    from continuation.install import core, install

    monkeypatch.setattr(core, "default_command", lambda: ["/usr/bin/python3", "-P", "-m", "continuation"])
    install("claude", "user", project_dir=user_home, home=user_home, state_home=home,
            command=["/usr/bin/python3", "-P", "-m", "continuation"])
    code, report = doctor(capsys)
    assert code == 0 and [f["status"] for f in by_check(report, "hooks")] == ["ok"], report
    install("claude", "user", project_dir=user_home, home=user_home, state_home=home,
            command=["/opt/bin/continuation"])
    code, report = doctor(capsys)
    [hint] = [f for f in by_check(report, "hooks") if f["status"] == "info"]
    assert "imports `re`" in hint["message"]


@pytest.mark.parametrize("launcher, cost", [(["/opt/bin/continuation"], "imports `re`"),
                                           (["/usr/bin/python3", "-P", "-m", "continuation"],
                                            "imports `runpy`")])
def test_hooks_started_through_a_slower_launcher_get_a_hint(home, user_home, capsys, launcher, cost):
    """Hooks an earlier install wrote with the `continuation` script or `-m continuation` still
    work; the doctor says what their launcher costs and that installing again gives the faster
    `<python> -P <package>/__main__.py` command."""
    from continuation.install import install

    install("claude", "user", project_dir=user_home, home=user_home, state_home=home,
            command=launcher)
    code, report = doctor(capsys)
    assert code == 0, report
    [hint] = [f for f in by_check(report, "hooks") if f["status"] == "info"]
    assert " ".join(launcher) in hint["message"] and cost in hint["message"]
    assert "continuation install --runtime claude --scope user" in hint["suggestion"]
    install("claude", "user", project_dir=user_home, home=user_home, state_home=home)
    code, report = doctor(capsys)
    assert code == 0 and [f["status"] for f in by_check(report, "hooks")] == ["ok"], report
