"""Forks: a new thread from a checkpoint with lineage, replaying to the parent's state there,
then evolving on its own (its own events, capsules and snapshot refs) in the same repository.
Also ``thread delete`` and ``gc``."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_rewind_support import HookSession, cli, cli_json
from workspace_repos import git, git_home, make_repo  # noqa: F401 (git_home is a fixture)

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine
from continuation.rewind.fork import fork_thread
from continuation.rewind.operation import rewind
from continuation.rewind.removal import collect_garbage, delete_thread


@pytest.fixture
def repo(tmp_path, git_home, home):
    return make_repo(tmp_path / "repo", {"README.md": "hello\n"})


def refs(repo, key) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", f"refs/continuation/{key}/").split()


def two_turns(s: HookSession) -> None:
    s.start()
    p1 = s.prompt("write the parser")
    s.write_file(p1, "parser.py", "def parse(): ...\n")
    s.stop(p1, "parser written")
    s.compact()
    p2 = s.prompt("write the printer")
    s.write_file(p2, "printer.py", "def show(): ...\n")
    s.tool(p2, "Bash", {"command": "./slow-migration"}, finish=False)
    s.stop(p2, "printer written")


def test_fork_replays_to_the_parent_state_and_gets_its_own_refs_and_capsules(home, repo):
    parent = HookSession(home, repo)
    two_turns(parent)
    with Engine(home) as e:
        pt = parent.thread(e)
        cp = cps.list_checkpoints(pt)[0]
        result = fork_thread(e, cp.checkpoint_id, name="try another printer")
        child = result.thread
        row = child.row
        assert row["forked_from"] == pt.key and row["forked_at_seq"] == result.forked_at_seq
        assert row["name"] == "try another printer" and row["runtime"] == "claude"
        # the same events up to the checkpoint, with the same sequence numbers
        copied = child.events(upto=result.forked_at_seq)
        assert copied == pt.events(upto=result.forked_at_seq)
        assert e.store.replay(child.key).snapshot() == e.store.derived_state(child.key).snapshot()
        assert {r.text: r.state for r in child.inputs()} == {"write the parser": "handled"}
        assert {r.text: r.state for r in pt.inputs()}["write the printer"] == "reconciling"
        first = cps.list_checkpoints(child)
        assert [c.reason for c in first] == ["fork"] and first[0].checkpoint_id != cp.checkpoint_id
        assert first[0].workspace["snapshot_ref"] == f"refs/continuation/{child.key}/{first[0].generation}"
        assert first[0].thread_key == child.key and not cps.verify(first[0])
        loaded = cps.load(child)
        fork_notes = [n for n in loaded.capsule.notices if n.title.startswith("fork:")]
        assert fork_notes and pt.key in fork_notes[0].lines[0]
        assert "was not restored" in fork_notes[0].lines[1]
        assert child.row["needs_context"] == 1
        assert [x["type"] for x in child.events()][-1] == "boundary"
    assert refs(repo, child.key) == [f"refs/continuation/{child.key}/{first[0].generation}"]
    assert all(r.startswith(f"refs/continuation/{pt.key}/") for r in refs(repo, pt.key))


def test_both_threads_work_concurrently_in_one_repository(home, repo):
    parent = HookSession(home, repo)
    two_turns(parent)
    with Engine(home) as e:
        pt = parent.thread(e)
        cp = cps.list_checkpoints(pt)[0]
        child_sid = fork_thread(e, cp.checkpoint_id).thread.row["session_id"]
        parent_before = len(pt.events())
    child = HookSession(home, repo, session_id=child_sid)

    def work(s: HookSession, tag: str) -> None:
        for i in range(4):
            p = s.prompt(f"{tag} step {i}")
            s.write_file(p, f"{tag}-{i}.txt", f"{tag} {i}\n")
            s.stop(p, f"{tag} step {i} done")
        s.compact()

    with ThreadPoolExecutor(2) as pool:
        for f in [pool.submit(work, parent, "parent"), pool.submit(work, child, "child")]:
            f.result()
    with Engine(home) as e:
        pt, ct = parent.thread(e), child.thread(e)
        assert ct.key != pt.key and ct.row["forked_from"] == pt.key
        p_inputs = {r.text: r.state for r in pt.inputs()}
        c_inputs = {r.text: r.state for r in ct.inputs()}
        assert {t for t in c_inputs if t.startswith("parent")} == set()
        assert {t for t in p_inputs if t.startswith("child")} == set()
        assert [c_inputs[f"child step {i}"] for i in range(4)] == ["handled"] * 4
        assert "write the printer" not in c_inputs
        assert len(pt.events()) > parent_before
        for t in (pt, ct):
            assert e.store.replay(t.key).snapshot() == e.store.derived_state(t.key).snapshot()
            for c in cps.list_checkpoints(t):
                assert c.thread_key == t.key and c.file_path is None  # the row is the capsule
                if c.workspace:
                    assert c.workspace["snapshot_ref"].startswith(f"refs/continuation/{t.key}/")
        p_cp, c_cp = cps.load(pt), cps.load(ct)
        assert "child step" not in p_cp.checkpoint.rendered
        assert "parent step" not in c_cp.checkpoint.rendered
    assert refs(repo, pt.key) and refs(repo, ct.key)
    assert not set(refs(repo, pt.key)) & set(refs(repo, ct.key))


def test_rewind_then_fork(home, repo):
    s = HookSession(home, repo)
    two_turns(s)
    with Engine(home) as e:
        t = s.thread(e)
        cp = cps.list_checkpoints(t)[0]
        rewound = rewind(e, cp.checkpoint_id, "both", reason="printer went wrong")
        assert not (repo / "printer.py").exists()
        fork = fork_thread(e, rewound.checkpoint.checkpoint_id, name="after rewind")
        ct = fork.thread
        assert {r.text: r.state for r in ct.inputs()} == {r.text: r.state for r in t.inputs()}
        assert {c.call_id: c.status for c in ct.tool_calls()} == {c.call_id: c.status for c in t.tool_calls()}
        # the rewind's summary is still due in the fork: no turn completed since the rewind
        notes = {n.title for n in cps.load(ct).capsule.notices}
        assert "rewind: the work after the checkpoint was undone" in notes
        assert any(title.startswith("fork:") for title in notes)
        # the two evolve independently from here
        ct.admit("a different printer", turn_id="ft1")
        assert "a different printer" not in {r.text for r in t.inputs()}


def test_fork_with_files_restores_the_shared_workspace(home, repo):
    s = HookSession(home, repo)
    two_turns(s)
    with Engine(home) as e:
        cp = cps.list_checkpoints(s.thread(e))[0]
        result = fork_thread(e, cp.checkpoint_id, restore_files=True)
        assert not (repo / "printer.py").exists() and (repo / "parser.py").exists()
        assert result.files["deleted"] == ["printer.py"]
        note = [n for n in cps.load(result.thread).capsule.notices if n.title.startswith("fork:")][0]
        assert "were restored" in note.lines[1] and result.files["safety_ref"] in note.lines[1]


def test_fork_cli_and_print_prompt_names_the_fork_session(home, repo):
    s = HookSession(home, repo)
    two_turns(s)
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    data = cli_json("fork", cp, "--name", "alt", "--print-prompt", home=home)
    sid = data["thread"]["session_id"]
    assert data["thread"]["name"] == "alt" and data["from_checkpoint"] == cp
    assert f"--session-id {sid}" in data["handoff"]["commands"]["claude"]
    listing = cli_json("checkpoints", "--thread", data["thread"]["thread_key"], home=home)
    assert listing["forked_from"] == data["parent"] and listing["forked_at_seq"] == data["forked_at_seq"]
    assert [c["reason"] for c in listing["checkpoints"]] == ["fork"]
    r = cli("checkpoints", "--thread", data["thread"]["thread_key"], home=home)
    assert f"fork of {data['parent']}".encode() in r.stdout
    r = cli("fork", cp, "--session-id", sid, home=home)
    assert r.returncode == 1 and b"exists already" in r.stderr


def test_thread_delete_removes_data_capsules_and_refs_and_leaves_the_fork(home, repo):
    s = HookSession(home, repo)
    two_turns(s)
    with Engine(home) as e:
        pt = s.thread(e)
        fork = fork_thread(e, cps.list_checkpoints(pt)[0].checkpoint_id)
        key, fork_key = pt.key, fork.thread.key
    for k in (key, fork_key):  # a spilled context of each
        (home / "contexts" / k).mkdir(parents=True, exist_ok=True)  # the work record's pages there too
        (home / "contexts" / k / "g000001.md").write_text("context")
    e2 = Engine(home)
    e2.store.end_sessions(key)
    e2.close()
    assert refs(repo, key)
    user_refs = git(repo, "for-each-ref", "refs/heads", "refs/tags")
    r = cli("thread", "delete", key, home=home)
    assert r.returncode == 1 and b"--yes" in r.stderr  # no terminal, no --yes: refused
    r = cli("thread", "delete", key, "--yes", "--json", home=home)
    assert r.returncode == 0, r.stderr.decode()
    report = json.loads(r.stdout)
    assert report["rows"]["events"] > 0 and report["refs_deleted"] >= 1
    assert report["forks"] == [fork_key]
    assert refs(repo, key) == [] and refs(repo, fork_key)
    assert not (home / "contexts" / key).exists() and (home / "contexts" / fork_key).is_dir()
    assert git(repo, "for-each-ref", "refs/heads", "refs/tags") == user_refs
    with Engine(home) as e:
        for table in ("events", "inputs", "turns", "tool_calls", "claims", "thread_meta",
                      "checkpoints", "sessions", "threads"):
            n = e.store.conn.execute(f"SELECT COUNT(*) FROM {table} WHERE thread_key=?", (key,)).fetchone()[0]
            assert n == 0, table
        assert e.get_thread(fork_key).row["forked_from"] == key  # lineage is kept as history
        assert len(e.get_thread(fork_key).inputs()) == 1


def test_thread_delete_refuses_a_live_session_without_force(home, repo):
    s = HookSession(home, repo)
    s.start()
    s.prompt("hello")
    with Engine(home) as e:
        key = s.thread(e).key
        from continuation.rewind.errors import RewindError

        with pytest.raises(RewindError, match="live session"):
            delete_thread(e, key)
        assert e.get_thread(key)
        delete_thread(e, key, force=True)
        assert e.store.threads() == []


def _four_compacted_steps(home, repo) -> HookSession:
    s = HookSession(home, repo)
    s.start()
    for i in range(4):
        p = s.prompt(f"step {i}")
        s.write_file(p, f"f{i}.txt", str(i))
        s.stop(p)
        s.compact()
    return s


def test_gc_deletes_refs_of_vanished_threads_and_prunes_old_ones(home, repo):
    s = _four_compacted_steps(home, repo)
    with Engine(home) as e:
        key = s.thread(e).key
        ghost = e.thread("claude", "ghost", workspace_root=str(repo))
        ghost.admit("x", turn_id="g")
        from continuation.boundary.crossing import commit_checkpoint

        commit_checkpoint(ghost, reason="manual")
        ghost_key = ghost.key
        (home / "contexts" / ghost_key).mkdir(parents=True)  # its spilled context
        (home / "contexts" / ghost_key / "g000001.md").write_text("context")
        # the thread's rows vanish without its refs (an older version, a crash mid-delete)
        with e.store.transaction() as c:
            for table in ("events", "inputs", "turns", "checkpoints", "threads"):
                c.execute(f"DELETE FROM {table} WHERE thread_key=?", (ghost_key,))
        assert refs(repo, ghost_key) and len(refs(repo, key)) == 4
        dry = collect_garbage(e, keep=2, dry_run=True)
        assert refs(repo, ghost_key) and len(refs(repo, key)) == 4
        assert len(dry.pruned_refs[str(repo)]) == 2
        report = collect_garbage(e, keep=2)
        assert report.orphan_refs[str(repo)] == [f"refs/continuation/{ghost_key}/1"]
        assert refs(repo, ghost_key) == []
        assert refs(repo, key) == [f"refs/continuation/{key}/3", f"refs/continuation/{key}/4"]
        assert str(home / "contexts" / ghost_key) in report.folders_removed
        with e.store.transaction() as c:  # a damaged workspace reference must not stop gc
            c.execute("UPDATE checkpoints SET workspace='{not json' WHERE generation=1")
    r = cli("gc", "--dry-run", home=home)
    assert r.returncode == 0 and b"nothing to collect" in r.stdout
    r = cli("gc", "--keep", "0", home=home)
    assert r.returncode == 1 and b"--keep" in r.stderr


def test_gc_and_doctor_never_delete_refs_another_state_home_owns(tmp_path, git_home):
    """Two state homes on one repository (found in review: each saw the other's refs as
    orphaned and deleted them)."""
    import os
    import subprocess
    import sys

    from continuation.boundary import crossing as boundary
    from continuation.workspace import list_snapshot_refs

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    home_a, home_b = tmp_path / "home-a", tmp_path / "home-b"
    with Engine(home_a) as e:
        t = e.thread("claude", "session-a", workspace_root=str(repo))
        t.admit("work", turn_id="p1")
        boundary.commit_checkpoint(t, reason="manual")
    with Engine(home_b) as e:
        t = e.thread("claude", "session-b", workspace_root=str(repo))
        t.admit("other work", turn_id="p1")
        boundary.commit_checkpoint(t, reason="manual")
    refs_before = {r.ref for r in list_snapshot_refs(repo, state_home=home_a)}
    assert len(refs_before) == 2
    env = dict(os.environ)
    for home in (home_a, home_b):
        env["CONTINUATION_HOME"] = str(home)
        for args in (("gc",), ("doctor", "--fix")):
            r = subprocess.run([sys.executable, "-m", "continuation", *args], env=env,
                               capture_output=True, timeout=120)
            assert b"Traceback" not in r.stderr
    assert {r.ref for r in list_snapshot_refs(repo, state_home=home_a)} == refs_before


def test_a_call_running_at_the_checkpoint_is_unknown_in_the_fork(home, repo):
    """The result of a call the parent's process ran can never reach the fork: there it waits
    for reconciliation, never for its result (nor is it listed as done)."""
    parent = HookSession(home, repo)
    parent.start()
    p1 = parent.prompt("migrate the database")
    parent.tool(p1, "Bash", {"command": "./migrate --step 1"})
    call = parent.tool(p1, "Bash", {"command": "./migrate --step 2"}, finish=False)
    parent.compact()  # the checkpoint holds the call in flight
    with Engine(home) as e:
        pt = parent.thread(e)
        cp = cps.list_checkpoints(pt)[-1]
        assert [c.status for c in pt.tool_calls() if c.call_id == call] == ["in_flight"]
        child = fork_thread(e, cp.checkpoint_id).thread
        assert [c.status for c in child.tool_calls() if c.call_id == call] == ["unknown"]
        assert {r.text: r.state for r in child.inputs()} == {"migrate the database": "reconciling"}
        rendered = cps.load(child, decode=False).rendered()
        assert "await_tool_result" not in rendered and "reconcile" in rendered
        # the parent's own record is untouched
        assert [c.status for c in pt.tool_calls() if c.call_id == call] == ["in_flight"]
    listed = cli_json("reconcile", "--thread", child.key, "--json", home=home)
    assert call in json.dumps(listed)


def test_checkpoints_say_pruned_for_snapshots_gc_removed(home, repo):
    _four_compacted_steps(home, repo)
    before = cli_json("checkpoints", "--json", home=home)["checkpoints"]
    assert [c["pruned"] for c in before] == [False] * 4
    assert cli("gc", "--keep", "2", home=home).returncode == 0
    after = {c["generation"]: c for c in cli_json("checkpoints", "--json", home=home)["checkpoints"]}
    assert [(g, after[g]["pruned"], after[g]["snapshot_pruned"], after[g]["capsule_pruned"])
            for g in sorted(after)] == [(1, True, True, False), (2, True, True, False),
                                        (3, False, False, False), (4, False, False, False)]
