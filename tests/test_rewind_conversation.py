"""Rewinding the conversation (and both): threads driven through the real hook handler in a
temporary git repository, then rewound with the API and the command line."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_rewind_support import HookSession, cli, cli_json, store_fingerprint
from workspace_repos import git, git_home, make_repo  # noqa: F401 (git_home is a fixture)

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine
from continuation.rewind.operation import plan_rewind, rewind
from continuation.session.rewind_notes import TITLE_CLAIMS, TITLE_CORE, TITLE_TRIED

ROOT = str(Path(cps.__file__).resolve().parents[1])


@pytest.fixture
def repo(tmp_path, git_home, home):
    return make_repo(tmp_path / "repo", {"README.md": "hello\n"})


@pytest.fixture
def session(home, repo):
    s = HookSession(home, repo)
    s.start()
    return s


def states(thread) -> dict[str, str]:
    return {r.text: r.state for r in thread.inputs()}


def newest_capsule(thread):
    loaded = cps.load(thread)
    return loaded.checkpoint, loaded.capsule


def notice(capsule, title):
    found = [n for n in capsule.notices if n.title == title]
    return "\n".join(found[0].lines) if found else None


def first_turn_and_compaction(s: HookSession) -> None:
    p1 = s.prompt("create notes.txt")
    s.write_file(p1, "notes.txt", "one\n")
    s.stop(p1, "created notes.txt")
    s.compact()


def test_rewind_across_a_compaction_boundary_keeps_the_first_turn_and_the_boundary(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("now rewrite everything in rust")
    session.tool(p2, "Bash", {"command": "cargo build"}, exit_code=101, stderr="error[E0425]")
    session.stop(p2, "Rewritten in Rust, all good")
    with Engine(home) as e:
        t = session.thread(e)
        [compact_cp] = cps.list_checkpoints(t)
        assert compact_cp.reason == "manual"
        result = rewind(e, compact_cp.checkpoint_id, "conversation", reason="rust was a bad idea")
        assert states(t) == {"create notes.txt": "handled", "now rewrite everything in rust": "rolled_back"}
        hidden = {c.tool: c.status for c in t.tool_calls()}
        assert hidden == {"Write": "ok", "Bash": "rolled_back"}
        # the log stays append-only: the rollback is one more fact
        kinds = [ev["type"] for ev in t.events()]
        assert kinds.count("rolled_back") == 1 and "tool_started" in kinds[result.plan.to_seq:]
        cp, capsule = newest_capsule(t)
        assert cp.reason == "rewind" and cp.checkpoint_id == result.checkpoint.checkpoint_id
        facts = [f.kind for f in capsule.runtime_facts]
        assert "boundary" in facts, "the compaction before the rewound turn survives"
        completed = [f.text for f in capsule.runtime_facts if f.kind == "turn_completed"]
        assert len(completed) == 1 and p2 not in completed[0], "the later turn does not survive"
        assert all(p2 not in f.text and "error" not in f.text for f in capsule.runtime_facts)
        assert [c.text for c in capsule.assistant_claims] == ["created notes.txt", "Summary: work so far."]
        assert capsule.cursor.last_completed_step.startswith("turn ")
        assert t.row["needs_context"] == 1
        core = notice(capsule, TITLE_CORE)
        assert "UNDONE" in core and "rust was a bad idea" in core and "cargo build" in core
        assert "Workspace files were NOT restored" in core
        assert "claim from the discarded branch" in notice(capsule, TITLE_CLAIMS)
        assert "Rewritten in Rust" in notice(capsule, TITLE_CLAIMS)
        last = t.row["last_seq"]
        # the live state equals a pure replay of the log
        assert e.store.replay(t.key).snapshot() == e.store.derived_state(t.key).snapshot()
    # the next prompt in the same session gets the rewound context (needs_context)
    answer = session.send("UserPromptSubmit", prompt_id="p-retry", prompt="try again in python")
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "rewind: the work after the checkpoint was undone" in context
    with Engine(home) as e:
        t = session.thread(e)
        assert t.row["needs_context"] == 0 and t.row["last_seq"] > last


def test_summary_survives_later_checkpoints_until_a_turn_completes(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("break things")
    session.stop(p2, "broke things")
    with Engine(home) as e:
        cp = cps.list_checkpoints(session.thread(e))[0]
        rewind(e, cp.checkpoint_id, "conversation", reason="undo the breakage")
    retry = session.prompt("fix things instead")
    session.compact()  # a checkpoint before the retry's turn completes: the summary is still due
    with Engine(home) as e:
        _, capsule = newest_capsule(session.thread(e))
        assert "undo the breakage" in notice(capsule, TITLE_CORE)
    session.stop(retry, "fixed")
    session.compact()
    with Engine(home) as e:
        _, capsule = newest_capsule(session.thread(e))
        assert notice(capsule, TITLE_CORE) is None and notice(capsule, TITLE_TRIED) is None
        assert states(session.thread(e))["fix things instead"] == "handled"


def test_rewind_twice(home, session):
    first_turn_and_compaction(session)  # checkpoint A
    p2 = session.prompt("step two")
    session.write_file(p2, "two.txt", "2\n")
    session.stop(p2, "step two done")
    session.compact()  # checkpoint B
    p3 = session.prompt("step three")
    session.write_file(p3, "three.txt", "3\n")
    session.stop(p3, "step three done")
    with Engine(home) as e:
        t = session.thread(e)
        a, b = cps.list_checkpoints(t)[:2]
        rewind(e, b.checkpoint_id, "both", reason="three was wrong")
        assert states(t) == {"create notes.txt": "handled", "step two": "handled", "step three": "rolled_back"}
        assert not (session.repo / "three.txt").exists() and (session.repo / "two.txt").exists()
    p4 = session.prompt("step three, take two")
    session.stop(p4, "take two done")
    with Engine(home) as e:
        t = session.thread(e)
        second = rewind(e, a.checkpoint_id, "both", reason="start over from the first turn")
        assert states(t) == {"create notes.txt": "handled", "step two": "rolled_back",
                             "step three": "rolled_back", "step three, take two": "rolled_back"}
        assert not (session.repo / "two.txt").exists() and (session.repo / "notes.txt").exists()
        _, capsule = newest_capsule(t)
        tried = notice(capsule, TITLE_TRIED)
        # the second rewind's summary lists the live branch it discarded
        assert "step two" in tried and "step three, take two" in tried
        assert "three was wrong" not in notice(capsule, TITLE_CORE)
        assert "start over" in notice(capsule, TITLE_CORE)
        rollbacks = [ev for ev in t.events() if ev["type"] == "rolled_back"]
        assert [r["data"]["checkpoint_id"] for r in rollbacks] == [b.checkpoint_id, a.checkpoint_id]
        assert rollbacks[-1]["data"]["files"]["safety_ref"] == second.files["safety_ref"]
        assert e.store.replay(t.key).states() == e.store.derived_state(t.key).states()


def test_unknown_outcome_tool_calls_stay_visible_in_the_summary(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("deploy to staging")
    session.tool(p2, "Bash", {"command": "./deploy.sh staging"}, finish=False)
    session.send("SessionEnd", reason="other")  # the session died mid-call
    with Engine(home) as e:
        t = session.thread(e)
        assert states(t)["deploy to staging"] in ("reconciling", "interrupted")
        cp = cps.list_checkpoints(t)[0]
        plan = plan_rewind(e, cp.checkpoint_id, "conversation", reason="wrong target")
        preview = "\n".join(line for n in plan.notices for line in n.lines)
        assert "./deploy.sh staging" in preview and "NO OUTCOME RECORDED" in preview
        rewind(e, cp.checkpoint_id, "conversation", reason="wrong target")
        _, capsule = newest_capsule(t)
        core = notice(capsule, TITLE_CORE)
        assert "no recorded outcome" in core and "./deploy.sh staging" in core
        assert "not undone by a rewind" in core


def test_failing_checks_are_listed_with_their_first_error_line(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("make the tests pass")
    session.tool(p2, "Bash", {"command": "pytest -q"}, exit_code=1, stderr="E   assert 1 == 2\n1 failed")
    session.tool(p2, "Bash", {"command": "ruff check"}, exit_code=0)
    session.stop(p2, "tests pass now")
    with Engine(home) as e:
        cp = cps.list_checkpoints(session.thread(e))[0]
        rewind(e, cp.checkpoint_id, "conversation")
        _, capsule = newest_capsule(session.thread(e))
        core = notice(capsule, TITLE_CORE)
        assert "Failing checks" in core and "pytest -q` -> error, exit 1: E assert 1 == 2" in core
        assert "ruff check" not in core.split("Failing checks")[1]
        assert "ruff check` -> ok, exit 0" in notice(capsule, TITLE_TRIED)
        assert "The user gave no reason." in core


def _everything(home, repo) -> dict:
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
             if p.is_file() and ".git" not in p.parts}
    return {"store": store_fingerprint(home), "refs": git(repo, "for-each-ref"),
            "files": files, "status": git(repo, "status", "--porcelain", "--untracked-files=all")}


@pytest.mark.parametrize("mode", ["--conversation", "--files", "--both"])
def test_dry_run_changes_nothing(home, session, mode):
    first_turn_and_compaction(session)
    p2 = session.prompt("more work")
    session.write_file(p2, "more.txt", "more\n")
    (session.repo / "notes.txt").write_text("changed\n", encoding="utf-8")
    session.stop(p2, "more done")
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    before = _everything(home, session.repo)
    r = cli("rewind", cp, mode, "--dry-run", "--reason", "just looking", home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert "nothing was changed" in out
    if mode != "--conversation":
        assert "delete    more.txt" in out and "modify    notes.txt" in out
    if mode != "--files":
        assert "1 input(s) become rolled_back" in out
    r = cli("rewind", cp, mode, "--dry-run", "--json", home=home)
    assert r.returncode == 0 and json.loads(r.stdout)["dry_run"] is True
    assert _everything(home, session.repo) == before


def test_rewind_cli_both_with_print_prompt(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("add a feature")
    session.write_file(p2, "feature.py", "x = 1\n")
    session.stop(p2, "feature added")
    session.compact()
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    r = cli("rewind", cp[:8], "--both", "--reason", "feature not wanted", "--print-prompt", home=home)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert not (session.repo / "feature.py").exists()
    assert "claude \"$(cat " in out and "codex \"$(cat " in out and "claude -p < " in out
    assert "CONTINUATION-CHECKPOINT" in out and "feature not wanted" in out
    data = cli_json("checkpoints", home=home)["checkpoints"]
    assert [c["reason"] for c in data] == ["manual", "manual", "rewind"]
    assert data[0]["files"] == ["notes.txt"]  # the first: its dirty summary against HEAD
    # later ones: the difference of the two snapshot trees (added, then deleted again)
    assert [(c["files_changed"], c["files"]) for c in data[1:]] == [(1, ["feature.py"])] * 2


@pytest.mark.parametrize("args, message", [
    (("rewind", "cp-nope", "--conversation"), "no checkpoint"),
    (("rewind", "cp-", "--files"), "matches"),
    (("restore", "cp-nope"), "no checkpoint"),
    (("fork", "cp-nope"), "no checkpoint"),
    (("thread", "delete", "nope", "--yes"), "no thread"),
])
def test_user_errors_are_one_line(home, session, args, message):
    first_turn_and_compaction(session)
    p = session.prompt("again")
    session.stop(p)
    session.compact()
    r = cli(*args, home=home)
    err = r.stderr.decode().strip()
    assert r.returncode == 1 and message in err and "\n" not in err and "Traceback" not in err


def test_rewind_needs_a_mode(home):
    r = cli("rewind", "cp-1", home=home)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    r = cli("rewind", "cp-1", "--files", "--both", home=home)
    assert r.returncode == 2


def test_files_rewind_of_a_checkpoint_without_snapshot_is_refused(home, tmp_path):
    with Engine(home) as e:
        t = e.thread("codex", "no-workspace")
        t.admit("hello", turn_id="t1")
        from continuation.boundary.crossing import commit_checkpoint

        cp = commit_checkpoint(t, reason="manual")
        t.turn_completed("t1")
    r = cli("rewind", cp.checkpoint_id, "--files", home=home)
    assert r.returncode == 1 and b"has no workspace snapshot" in r.stderr
    r = cli("rewind", cp.checkpoint_id, "--conversation", home=home)
    assert r.returncode == 0, r.stderr.decode()
    with Engine(home) as e:
        assert [x.state for x in e.get_thread("no-workspace").inputs()] == ["pending"]


def test_files_only_rewind_tells_the_next_context_the_files_changed_under_it(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("edit notes")
    session.tool(p2, "Edit", {"file_path": str(session.repo / "notes.txt")}, exit_code=None,
                 write={"notes.txt": "edited\n"})
    session.stop(p2, "edited")
    with Engine(home) as e:
        t = session.thread(e)
        cp = cps.list_checkpoints(t)[0]
        rewind(e, cp.checkpoint_id, "files", reason="keep the talk, drop the edit")
        assert (session.repo / "notes.txt").read_text() == "one\n"
        assert states(t)["edit notes"] == "handled", "the conversation is not rewound"
        _, capsule = newest_capsule(t)
        files = [n for n in capsule.notices if n.title.startswith("rewind: workspace files")]
        assert files and "NOT rewound" in "\n".join(files[0].lines)
        assert "notes.txt" in "\n".join(files[0].lines)


def test_a_resumed_session_after_a_rewind_gets_the_rewound_context(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("delete the database")
    session.tool(p2, "Bash", {"command": "dropdb prod"}, exit_code=0)
    session.stop(p2, "database deleted")
    session.send("SessionEnd", reason="other")
    with Engine(home) as e:
        cp = cps.list_checkpoints(session.thread(e))[0]
        rewind(e, cp.checkpoint_id, "conversation", reason="that was the wrong database")
    answer = session.start("resume")
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "that was the wrong database" in context and "dropdb prod" in context
    assert "claim from the discarded branch" in context
    with Engine(home) as e:
        t = session.thread(e)
        assert t.row["needs_context"] == 0
        # delivery reused the rewind checkpoint: nothing but bookkeeping happened since
        assert [c.reason for c in cps.list_checkpoints(t)] == ["manual", "rewind"]


def test_both_in_a_folder_outside_git_uses_the_shadow_repository(home, tmp_path, git_home):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "data.txt").write_text("original\n", encoding="utf-8")
    s = HookSession(home, folder)
    s.start()
    first_turn_and_compaction(s)
    p2 = s.prompt("mangle the data")
    s.tool(p2, "Edit", {"file_path": str(folder / "data.txt")}, exit_code=None,
           write={"data.txt": "mangled\n"})
    s.write_file(p2, "extra.txt", "x\n")
    s.stop(p2)
    with Engine(home) as e:
        t = s.thread(e)
        cp = cps.list_checkpoints(t)[0]
        assert cp.workspace["kind"] == "shadow"
        result = rewind(e, cp.checkpoint_id, "both", reason="keep the data")
        assert (folder / "data.txt").read_text() == "original\n" and not (folder / "extra.txt").exists()
        assert result.files["restored"] == ["data.txt"] and result.files["deleted"] == ["extra.txt"]
        assert not (folder / ".git").exists()


def test_codex_thread_rewind_and_handoff_put_codex_first(home, repo):
    s = HookSession(home, repo, runtime="codex")
    s.start()
    s.send("UserPromptSubmit", turn_id="turn-1", prompt="first request")
    s.send("Stop", turn_id="turn-1", last_assistant_message="first done")
    s.send("PreCompact", turn_id="turn-1", trigger="auto")
    s.send("UserPromptSubmit", turn_id="turn-2", prompt="second request")
    s.send("PreToolUse", turn_id="turn-2", tool_name="shell", tool_input={"command": "make"},
           tool_use_id="call-1")
    s.send("Stop", turn_id="turn-2", last_assistant_message="second done")
    cp = cli_json("checkpoints", home=home)["checkpoints"][0]["checkpoint_id"]
    data = cli_json("rewind", cp, "--conversation", "--print-prompt", home=home)
    commands = list(data["handoff"]["commands"])
    assert commands[0] == "codex" and "codex exec" in commands
    with Engine(home) as e:
        t = s.thread(e)
        assert {r.text: r.state for r in t.inputs()} == {"first request": "handled",
                                                         "second request": "rolled_back"}
    text = open(data["handoff"]["path"], encoding="utf-8").read()
    assert text == data["handoff"]["text"] and "make" in text


def test_thread_command_without_action_shows_usage(home):
    r = cli("thread", home=home)
    assert r.returncode == 2 and b"delete" in r.stdout


def test_a_late_stop_of_the_discarded_turn_does_not_end_the_summary(home, session):
    first_turn_and_compaction(session)
    p2 = session.prompt("long refactor")
    session.tool(p2, "Bash", {"command": "sed -i s/a/b/ *.py"}, exit_code=0)
    with Engine(home) as e:  # the user rewinds while the turn still runs
        cp = cps.list_checkpoints(session.thread(e))[0]
        rewind(e, cp.checkpoint_id, "conversation", reason="stop that refactor")
    session.stop(p2, "refactor finished")  # the old turn's Stop arrives afterwards
    session.compact()
    with Engine(home) as e:
        t = session.thread(e)
        assert {r.text: r.state for r in t.inputs()}["long refactor"] == "rolled_back"
        assert "stop that refactor" in notice(newest_capsule(t)[1], TITLE_CORE)
    retry = session.prompt("smaller refactor")
    session.stop(retry, "smaller one done")
    session.compact()
    with Engine(home) as e:
        assert notice(newest_capsule(session.thread(e))[1], TITLE_CORE) is None


def test_a_rewind_warms_the_capsule_stack_in_a_thread_and_the_summary_waits_for_it(monkeypatch):
    """``rewind`` imports pydantic and the capsule models in a daemon thread while
    git scans the work tree; the main thread's first use of them (the recovery summary) waits
    for that thread, so the two never import the same modules at once."""
    import threading
    import time as _time

    from continuation.rewind import operation

    order = []

    def slow_warm_up(models):
        order.append(threading.current_thread().name)
        _time.sleep(0.2)
        order.append("warmed")

    monkeypatch.setattr(operation, "_warm_up", slow_warm_up)
    monkeypatch.setattr(operation, "_warming", None)
    operation.warm_up_in_background()
    summary = operation._summary()
    order.append("summary used")
    assert order == ["continuation-warm-up", "warmed", "summary used"]
    assert callable(summary.notices_of)


@pytest.mark.parametrize("models", [False, True], ids=["a-worker-builds", "built-in-process"])
def test_the_warm_up_imports_what_the_rewinds_checkpoint_gathers_with(models):
    """The warm-up thread imports the modules the checkpoint's source is gathered with (and
    the capsule models only when no capsule worker builds it): they load while git scans,
    not after the restore."""
    import subprocess
    import sys

    watched = ("continuation.boundary.capsule_source", "capsule.claim_check",
               "continuation.recovery.notices", "continuation.boundary.crossing", "pydantic")
    code = ("import sys\nfrom continuation.rewind import operation\n"
            f"before = [m for m in {watched!r} if m in sys.modules]\n"
            f"operation._warm_up({models})\n"
            f"print(before, [m for m in {watched!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": ROOT}).stdout.strip()
    before, after = out.split("] [")
    assert "capsule_source" not in before and "pydantic" not in before  # the test is real
    assert all(m in after for m in watched[:4])
    assert ("pydantic" in after) is models



def test_the_warm_up_compiles_the_claim_patterns_the_gathering_uses(monkeypatch):
    """The checkpoint's gathering after the restore checks the claims: their patterns (~2 ms
    to compile) are compiled by the warm-up thread while git scans."""
    from capsule import claim_check

    from continuation.rewind import operation

    compiled = []
    monkeypatch.setattr(claim_check, "compile_claim_patterns", lambda: compiled.append(True))
    operation._warm_up(False)
    assert compiled == [True]


def test_a_rewinds_warm_up_starts_when_the_plan_scans_the_work_tree(monkeypatch):
    """The warm-up thread starts from the plan's ``while_scanning`` (git's scan of the work
    tree), not before the plan's own work; a plan without warm-up starts none."""
    from types import SimpleNamespace

    import continuation.workspace as workspace
    import continuation.session.workspace_link as workspace_link
    from continuation.rewind import operation

    calls = []

    def plan_restore(ref, *, state_home, session_created, while_scanning=None, at_once=False,
                     **edits):
        calls.append(("plan", at_once))
        if while_scanning is not None:
            while_scanning()
        return "the plan"

    monkeypatch.setattr(operation, "warm_up_in_background", lambda models: calls.append(models))
    monkeypatch.setattr(workspace, "plan_restore", plan_restore)
    monkeypatch.setattr(operation, "workspace_ref", lambda cp: "ref")
    monkeypatch.setattr(workspace_link, "session_created_paths", lambda thread, after_seq: [])
    monkeypatch.setattr(workspace_link, "session_written_paths", lambda thread, after_seq: [])
    monkeypatch.setattr(workspace_link, "agent_call_windows", lambda thread, seq, since: [])
    engine, cp = SimpleNamespace(home="home"), SimpleNamespace(seq=1, created_at=0.0)
    assert operation.plan_files(engine, None, cp, warm_up=True, models=False) == "the plan"
    assert calls == [("plan", False), False]
    calls.clear()
    operation.plan_files(engine, None, cp)
    assert calls == [("plan", False)]
    calls.clear()
    operation.plan_files(engine, None, cp, warm_up=True, at_once=True)  # (the API, --yes)
    assert calls == [("plan", True), True]
