"""The recovery loop through the Python API: its policies, its limits, its facts.

The workspace is a git repository whose check passes while ``app.txt`` says ``good``; an
agent's edit is played by the test (it writes the file between ``tool_intent`` and
``tool_outcome``, as a harness would run the tool).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from continuation.api import open_thread
from continuation.guard.config import GuardConfig
from continuation.session.guard_notes import GUARD_DELIVERED, GUARD_RAN, GUARD_VERDICT
from workspace_repos import git_home, make_repo  # noqa: F401  (fixture)

CHECK = "grep -q good app.txt || { echo 'FAILED test_app: app.txt lost its good line'; exit 1; }"


@pytest.fixture
def ws(tmp_path, git_home, monkeypatch):
    monkeypatch.setenv("CONTINUATION_HOME", str(git_home))
    remote = tmp_path / "remote.log"  # what an outside effect leaves: a file no rewind touches
    root = make_repo(tmp_path / "ws", {
        "app.txt": "good\n", "notes.md": "the user's notes\n",
        "deploy.sh": f"#!/bin/sh\necho deployed >> {remote}\n"})
    return root


class Agent:
    """Plays a harness: each call does its work between intent and outcome."""

    def __init__(self, thread, root):
        self.t = thread
        self.root = root
        self.n = 0

    def edit(self, name: str, text: str):
        self.n += 1
        path = self.root / name
        self.t.tool_intent(f"c{self.n}", "Edit", {"file_path": str(path), "new_string": text})
        path.write_text(text, encoding="utf-8")
        return self.t.tool_outcome(f"c{self.n}", ok=True)

    def shell(self, command: str):
        self.n += 1
        self.t.tool_intent(f"c{self.n}", "Bash", {"command": command})
        done = subprocess.run(command, shell=True, cwd=self.root, capture_output=True, text=True)
        return self.t.tool_outcome(f"c{self.n}", ok=done.returncode == 0,
                                   output=done.stdout + done.stderr, exit_code=done.returncode)


def _events(thread, etype):
    return [e["data"] for e in thread._thread.events() if e["type"] == etype]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "continuation", *args], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())


def test_report_then_an_automatic_rewind_that_names_everything(ws):
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=2)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("improve the app")
        assert [v["action"] for v in _events(t, GUARD_VERDICT)] == ["pass"]  # the baseline
        assert a.edit("app.txt", "good and better\n").action == "pass"
        good = t.guard_status()["good_checkpoint"]
        first = a.edit("app.txt", "broken\n")
        assert (first.action, first.continues, first.failures_in_row) == ("report", False, 1)
        assert "FAILED test_app" in first.message and good in first.message
        assert (ws / "app.txt").read_text() == "broken\n"  # a report changes nothing
        second = a.shell("sh deploy.sh")
        assert second.action == "rewind" and second.checkpoint_id == good
        assert (ws / "app.txt").read_text() == "good and better\n"
        text = second.message
        for said in ("failed 2 time(s) in a row", "What was tried", "Edit `", "FAILED test_app",
                     "app.txt (restored)", "sh deploy.sh", "OUTSIDE the workspace",
                     "What to do differently", "1 of 3"):
            assert said in text, said
        assert "restore --undo" in second.user_message
        # the deploy ran once: the loop runs nothing but the check
        assert (ws.parent / "remote.log").read_text() == "deployed\n"
        verdicts = _events(t, GUARD_VERDICT)
        assert [v["action"] for v in verdicts] == ["pass", "pass", "report", "rewind"]
        restored = [e for e in _events(t, "workspace_restored") if e.get("by") == "guard"]
        assert len(restored) == 1 and restored[0]["checkpoint_id"] == good
        assert restored[0]["restored"] == ["app.txt"] and restored[0]["safety_ref"]
        delivered = _events(t, GUARD_DELIVERED)
        assert [d["action"] for d in delivered] == ["report", "rewind"]
        assert all(d["via"] == "api" and d["chars"] > 100 for d in delivered)
        assert len(_events(t, GUARD_RAN)) == 4
        # the files the rewind put back are checked once more at the turn's end: they pass
        ended = t.turn_completed("done")
        assert (ended.action, ended.message) == ("pass", None)
        assert [i.state for i in t.inputs()] == ["handled"]


def test_the_users_own_edits_survive_an_automatic_rewind(ws):
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "good 1\n")
        # the user edits a tracked file and adds one, outside every agent call
        (ws / "notes.md").write_text("the user's notes, edited\n")
        (ws / "mine.txt").write_text("mine\n")
        past = time.time() - 60
        for name in ("notes.md", "mine.txt"):
            os.utime(ws / name, (past, past))
        out = a.edit("app.txt", "oops\n")
        assert out.action == "rewind"
        assert (ws / "app.txt").read_text() == "good 1\n"
        assert (ws / "notes.md").read_text() == "the user's notes, edited\n"
        assert (ws / "mine.txt").read_text() == "mine\n"
        assert "notes.md" in out.message and "mine.txt" in out.message
        assert "user's own edits" in out.message


def test_the_budget_of_automatic_rewinds_ends_in_a_halt(ws):
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1, rewinds_per_input=2)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "good 1\n")
        assert [a.edit("app.txt", f"bad {i}\n").action for i in range(3)] == ["rewind", "rewind", "halt"]
        halted = _events(t, GUARD_VERDICT)[-1]
        assert halted["action"] == "halt" and "budget of 2 automatic rewind" in halted["why"]
        assert (ws / "app.txt").read_text() == "bad 2\n"  # the halt leaves the files to the user
        assert [i.state for i in t.inputs()] == ["interrupted"]  # the turn was ended
        # a new request has a budget of its own
        t.admit("try again")
        a.edit("app.txt", "good again\n")
        assert a.edit("app.txt", "bad again\n").action == "rewind"


def test_a_fatal_exit_code_rewinds_at_once(ws):
    guard = GuardConfig("test -f app.txt || exit 9; grep -q good app.txt", when="change",
                        failures_before_rewind=5, fatal_exit_codes=[9])
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("clean up")
        out = a.shell("rm app.txt")
        assert out.action == "rewind" and "fatal" in out.message
        assert (ws / "app.txt").read_text() == "good\n"
        assert "app.txt (re-created)" in out.message


def test_policy_report_sends_the_turn_back_then_stops_at_its_budget(ws):
    guard = GuardConfig(CHECK, policy="report", reports_per_input=2)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        assert a.edit("app.txt", "bad\n") is None  # "turn": nothing runs after a call
        first = t.turn_completed("done")
        assert (first.action, first.continues) == ("report", True)
        assert "Your turn is not over" in first.message
        assert [i.state for i in t.inputs()] == ["pending"]  # the turn goes on
        assert t.turn_completed("done").continues  # no change since: judged again, no rerun
        last = t.turn_completed("done")
        assert last.action == "halt" and not last.continues and last.stops
        assert (ws / "app.txt").read_text() == "bad\n"  # report never touches the files
        assert len(_events(t, GUARD_RAN)) == 2  # the baseline and one run
        assert [i.state for i in t.inputs()] == ["interrupted"]


def test_policy_halt_stops_at_the_first_failure(ws):
    with open_thread("s", workspace=ws, guard=GuardConfig(CHECK, policy="halt")) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "bad\n")
        out = t.turn_completed()
        assert out.stops and "The agent was stopped" in out.user_message
        assert "continuation rewind" in out.user_message and out.checkpoint_id in out.user_message


def test_a_turn_that_changed_nothing_is_not_checked_again(ws):
    with open_thread("s", workspace=ws, guard=GuardConfig(CHECK)) as t:
        a = Agent(t, ws)
        t.admit("look around")
        a.shell("cat app.txt")
        assert t.turn_completed() is None
        assert len(_events(t, GUARD_RAN)) == 1  # the baseline only


def test_a_check_failing_before_the_agent_started_is_not_its_fault(ws):
    (ws / "app.txt").write_text("broken before\n")
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        assert _events(t, GUARD_VERDICT)[0]["action"] == "none"
        out = a.edit("other.txt", "x\n")
        # no passing state to rewind to: reported, never rewound
        assert out.action == "report" and "no passing state" in out.message
        assert (ws / "other.txt").exists()


def test_a_check_that_cannot_run_is_the_users_to_fix(ws):
    with open_thread("s", workspace=ws, guard=GuardConfig("no-such-check-command")) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "bad\n")
        out = t.turn_completed()
        assert out.action == "error" and not out.continues and "could not run" in out.user_message
        assert [i.state for i in t.inputs()] == ["handled"]


def test_restore_undo_takes_an_automatic_rewind_back(ws):
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        assert a.edit("app.txt", "bad\n").action == "rewind"
        key = t.key
    assert (ws / "app.txt").read_text() == "good\n"
    done = _cli("restore", "--undo", "--thread", key, "--yes")
    assert done.returncode == 0, done.stderr
    assert (ws / "app.txt").read_text() == "bad\n"


def test_status_events_and_the_next_capsule_show_the_loop(ws):
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=3)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "bad\n")
        key = t.key
        t.checkpoint()
        text = t.context().text()
    assert "## guard (the project's check, run by the recovery loop)" in text
    assert "verdict=fail action=report" in text and "failures_in_row=1" in text
    assert "guard: the project's check is failing" in text and "FAILED test_app" in text
    events = _cli("events", "--thread", key, "--json")
    types = [e["type"] for e in json.loads(events.stdout)["events"]]
    assert {GUARD_RAN, GUARD_VERDICT, GUARD_DELIVERED} <= set(types)
    status = _cli("status", "--thread", key, "--json")
    assert json.loads(status.stdout)["threads"][0]["guard"]["verdict"] == "fail"
    assert "guard: " in _cli("status", "--thread", key).stdout


def test_a_workspace_guard_file_is_read_and_false_turns_it_off(ws):
    from continuation.guard.config import write

    write(str(ws), GuardConfig(CHECK, policy="halt"))
    with open_thread("s1", workspace=ws) as t:
        assert t.guard is not None and t.guard.policy == "halt"
    with open_thread("s2", workspace=ws, guard=False) as t:
        assert t.guard is None
        Agent(t, ws).edit("app.txt", "bad\n")
        assert t.turn_completed() is None


def test_a_failure_of_an_earlier_turn_is_checked_again_not_judged_stale(ws):
    """The check failed and the agent was stopped; the user fixed the files by hand (no call
    of the agent's). The next turn's end runs the check again: it passes, and the turn is not
    stopped on the old output (every later turn was, before)."""
    with open_thread("s", workspace=ws, guard=GuardConfig(CHECK, policy="halt")) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "bad\n")
        assert t.turn_completed().stops
        (ws / "app.txt").write_text("good, fixed by the user\n")
        t.admit("I fixed it by hand; what was wrong?")
        ended = t.turn_completed("the good line was gone")
        assert ended is not None and ended.action == "pass" and not ended.stops
        assert [i.state for i in t.inputs()][-1] == "handled"
        assert len(_events(t, GUARD_RAN)) == 3


def test_a_rewind_cut_short_after_its_verdict_is_checked_again(ws, monkeypatch):
    """The hook ends (the runtime's SIGKILL) between the rewind's verdict and the restore: the
    log says rewind, the files were never put back. The next turn runs the check instead of
    trusting the verdict, and the failure is handled (here: rewound)."""
    from continuation.guard import loop

    guard = GuardConfig(CHECK, failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("app.txt", "bad\n")
        real = loop.Loop._rewind

        def killed(self, *args):
            raise KeyboardInterrupt  # as a kill: nothing after it runs

        monkeypatch.setattr(loop.Loop, "_rewind", killed)
        with pytest.raises(KeyboardInterrupt):
            t.turn_completed()
        monkeypatch.setattr(loop.Loop, "_rewind", real)
        assert _events(t, GUARD_VERDICT)[-1]["action"] == "rewind"
        assert (ws / "app.txt").read_text() == "bad\n"
    with open_thread("s", workspace=ws, guard=guard) as t:
        t.admit("go on")
        ended = t.turn_completed()
        assert ended is not None and ended.action == "rewind"
        assert (ws / "app.txt").read_text() == "good\n"


def test_a_turn_with_no_recorded_input_still_has_a_rewind_budget(ws):
    """Calls of a turn whose input was never recorded (a runtime's own prompt, a prompt hook
    that did not run) count their automatic rewinds per turn: the budget holds."""
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1, rewinds_per_input=2)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        t.turn_completed()
        assert t._current_turn() is None
        actions = [a.edit("app.txt", f"bad {i}\n").action for i in range(4)]
        assert actions == ["rewind", "rewind", "halt", "halt"]
        assert _events(t, GUARD_VERDICT)[-1]["scope"] == "thread"


@pytest.mark.parametrize("policy", ["none", "metadata"])
def test_checkpoints_without_file_contents_are_reported_not_rewound(ws, monkeypatch, policy):
    """A workspace whose checkpoints store no file contents (policy none or metadata, a folder
    outside git too large to snapshot): the loop cannot rewind, so it reports, and never
    stops the agent on a rewind it could not do nor tells it to run one."""
    monkeypatch.setenv("CONTINUATION_WORKSPACE_POLICY", policy)
    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        out = a.edit("app.txt", "bad\n")
        assert (out.action, out.stops) == ("report", False)
        assert "cannot be put back" in out.message and "nothing is put back" in out.message
        assert (ws / "app.txt").read_text() == "bad\n"
        assert "automatic rewind failed" not in json.dumps(_events(t, GUARD_VERDICT))


def test_a_rewind_that_fails_after_the_files_moved_is_still_undone(ws, monkeypatch):
    """The rewind fails (or its hook is ended) after the files were put back: the fact that
    names the safety snapshot is already recorded, so `restore --undo` brings the agent's
    work back; the agent is stopped and told the rewind failed."""
    from continuation.rewind import operation

    restored, real_restore, real_summary = [], operation.restore_files_with_tree, operation._summary

    def restore(*args, **kwargs):
        restored.append(True)
        return real_restore(*args, **kwargs)

    def broken():
        if restored:
            raise RuntimeError("the capsule stack could not load")
        return real_summary()

    guard = GuardConfig(CHECK, when="change", failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        monkeypatch.setattr(operation, "_summary", broken)
        monkeypatch.setattr(operation, "restore_files_with_tree", restore)
        out = a.edit("app.txt", "bad\n")
        assert out.action == "halt" and "automatic rewind failed" in out.message
        key = t.key
    assert (ws / "app.txt").read_text() == "good\n"
    done = _cli("restore", "--undo", "--thread", key, "--yes")
    assert done.returncode == 0, done.stderr
    assert (ws / "app.txt").read_text() == "bad\n"


def test_files_a_rewind_cannot_restore_are_named_not_said_undone(ws, monkeypatch):
    """A changed file the checkpoint could not store (over the size cap when it was taken) is
    skipped by the rewind: the summary names it as not put back, instead of letting the model
    believe every effect of its calls was undone."""
    (ws / "data.bin").write_bytes(b"the user's data " * 100)  # changed, not committed
    monkeypatch.setenv("CONTINUATION_WORKSPACE_SIZE_CAP", "200")
    guard = GuardConfig(CHECK, failures_before_rewind=1)
    with open_thread("s", workspace=ws, guard=guard) as t:
        a = Agent(t, ws)
        t.admit("work")
        a.edit("data.bin", "agent data " * 100)
        a.edit("app.txt", "bad\n")
        out = t.turn_completed()
        assert out.action == "rewind" and (ws / "app.txt").read_text() == "good\n"
        assert "NOT put back" in out.message and "data.bin (over the size cap" in out.message
        assert "except on the files named NOT put back" in out.message
        assert (ws / "data.bin").read_text() == "agent data " * 100
