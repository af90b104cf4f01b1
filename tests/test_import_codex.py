"""``continuation import codex``: the real Codex CLI 0.171.0 rollout and synthetic rollouts."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from continuation.session.engine import Engine
from import_helpers import (PROJECT_TRANSCRIPTS, replay_hooks, run_import, snapshot, states,
                            thread_of)
from statemachine.ids import derived_input_id

SESSION = "01a226b0-e445-74a1-b671-074faf6bd457"


@pytest.fixture
def rollout(shared_fixtures):
    [path] = (shared_fixtures / "codex").glob("rollout-*.jsonl")
    return path


def test_real_rollout_states_and_repeated_command(home, rollout):
    report = run_import(home, "codex", rollout, session_over=True)
    assert states(home, "codex", SESSION) == {
        "append a line to notes.txt": "handled",
        # its turn never completed: the run was killed after 46 executions
        "append a second line": "interrupted",
        # its tool call started and never finished
        "slow task: wait for the build": "reconciling",
    }
    assert report.inputs_seen == 3 and report.inputs_admitted == 3
    # contextual fragments (environment context, developer instructions) are not inputs
    assert report.skipped_by_type["message:user(context)"] >= 1
    # the report states the repeated command and its count
    [repeat] = report.repeated_tool_calls
    assert repeat["tool"] == "Bash" and json.loads(repeat["args_text"]) == {
        "command": "echo line >> notes.txt"}
    assert repeat["count"] == 46 and repeat["repeats"] == 45
    assert repeat["inputs"] == "append a second line"
    assert report.repeated_tool_calls_total == 45
    assert "ran 46 times" in report.render()
    assert report.tool_calls_seen == 48 and report.tool_calls_paired == 47
    assert report.tool_calls_unpaired == ["call_94"]
    assert report.compactions == 46
    assert report.malformed == [] and report.unknown_types == Counter()
    with Engine(home) as e:
        t = thread_of(e, "codex", SESSION)
        calls = {c.call_id: c for c in t.tool_calls()}
        assert calls["call_94"].status == "unknown" and calls["call_94"].args == {"command": "sleep 30"}
        assert sum(c.args.get("command") == "echo line >> notes.txt" for c in calls.values()) == 47
        events = t.events()
        assert {ev["source"] for ev in events} == {"import:codex"}
        assert sum(ev["type"] == "boundary" for ev in events) == 46
        # the first turn's final message is a claim, never authority
        assert [c["text"] for c in t.claims()] == ["done with: append a line to notes.txt"]
        # the turns that never completed were cut crash-style, each with its reason
        aborted = [ev["data"] for ev in events if ev["type"] == "turn_aborted"]
        assert len(aborted) == 2 and all(a["reason"].startswith("crashed:") for a in aborted)
        # ids are the hooks' ids: hash of (thread, turn, ordinal, text)
        ids = {r.text: r.input_id for r in t.inputs()}
        assert ids["append a line to notes.txt"] == derived_input_id(
            t.key, "01a226b0-e469-7171-8688-aab4c4500639", 0, "append a line to notes.txt")


def test_reimport_changes_nothing(home, rollout):
    run_import(home, "codex", rollout, session_over=True)
    before = snapshot(home, "codex", SESSION)
    again = run_import(home, "codex", rollout, session_over=True)
    assert snapshot(home, "codex", SESSION) == before
    assert again.inputs_admitted == 0 and again.duplicates == 3 and again.resumed
    assert sum(again.events_written.values()) == 0


def test_reimport_without_cursor_changes_nothing(home, rollout, tmp_path):
    """A copy of the file at another path has no cursor: every op goes through the merge
    checks, and still nothing is written twice."""
    run_import(home, "codex", rollout, session_over=True)
    before = snapshot(home, "codex", SESSION)
    copy = tmp_path / "rollout-copy.jsonl"
    copy.write_bytes(rollout.read_bytes())
    again = run_import(home, "codex", copy, session_over=True)
    after = snapshot(home, "codex", SESSION)
    assert not again.resumed and again.inputs_admitted == 0 and again.duplicates == 3
    assert after["inputs"] == before["inputs"] and after["calls"] == before["calls"]
    assert after["claims"] == before["claims"]
    # only the new file's cursor was added
    assert after["types"] - before["types"] == Counter({"transcript_imported": 1})


def test_live_session_leaves_the_last_turn_open(home, rollout):
    run_import(home, "codex", rollout, session_over=False)
    got = states(home, "codex", SESSION)
    # the mid-file cut is certain (a new turn started); the last turn may still be running
    assert got["append a second line"] == "interrupted"
    assert got["slow task: wait for the build"] == "pending"
    # once the session is over, a later import cuts it
    run_import(home, "codex", rollout, session_over=True)
    assert states(home, "codex", SESSION)["slow task: wait for the build"] == "reconciling"


def test_import_after_hook_replay_admits_nothing_twice(home, shared_fixtures, rollout):
    replay_hooks("codex", shared_fixtures / "codex" / "hook-payloads.jsonl")
    hooked = snapshot(home, "codex", SESSION)
    assert len(hooked["inputs"]) == 3
    report = run_import(home, "codex", rollout, session_over=True)
    merged = snapshot(home, "codex", SESSION)
    assert report.inputs_admitted == 0 and report.duplicates == 3
    assert [i for i, _ in merged["inputs"]] == [i for i, _ in hooked["inputs"]]
    assert [c for c, _ in merged["calls"]] == [c for c, _ in hooked["calls"]]
    assert merged["claims"] == hooked["claims"]  # the Stop claim is not repeated
    new = merged["types"] - hooked["types"]
    # no input, call, claim or boundary was written again: only cuts of turns the hooks left
    # running (the hooks cut the second turn themselves when the third prompt came) and the cursor
    with Engine(home) as e:
        t = thread_of(e, "codex", SESSION)
        hooked_running = {r.turn_id for r in t.inputs()} - {
            ev["data"]["turn_id"] for ev in t.events()
            if ev["type"] in ("turn_aborted", "turn_completed") and ev["source"] == "hook:codex"}
        carried = {r.text: r.turn_id for r in t.inputs()}
    assert new == Counter({"turn_aborted": len(hooked_running), "transcript_imported": 1})
    # the hooks carry an input cut by the next prompt into that turn: it shares its fate
    second = ("reconciling" if carried["append a second line"] == carried[
        "slow task: wait for the build"] else "interrupted")
    assert states(home, "codex", SESSION) == {
        "append a line to notes.txt": "handled",
        "append a second line": second,
        "slow task: wait for the build": "reconciling",
    }


def test_synthetic_steering_abort_rollback_plan(home):
    path = PROJECT_TRANSCRIPTS / "codex_steer_abort_rollback.jsonl"
    report = run_import(home, "codex", path, session_over=True)
    assert states(home, "codex", "synth-codex-1") == {
        "make a plan": "handled",
        "also add tests": "handled",  # steered into the same turn: its own input
        "delete the build folder": "reconciling",  # aborted with rm -rf in flight
        "write a haiku": "rolled_back",  # thread_rolled_back num_turns=1
    }
    assert report.rollbacks == 1 and report.interrupts == 1 and report.compactions == 1
    assert report.unknown_types == Counter({"hologram_state": 1})
    # environment context, AGENTS.md and the <turn_aborted> marker are not inputs
    assert report.skipped_by_type["message:user(context)"] == 3
    assert report.inputs_seen == 4
    with Engine(home) as e:
        t = thread_of(e, "codex", "synth-codex-1")
        ids = {r.text: r.input_id for r in t.inputs()}
        assert ids["also add tests"] == derived_input_id(t.key, "t1", 1, "also add tests")
        plan = t.meta()["plan_updated"]
        assert plan["tool"] == "update_plan" and plan["items"][0]["step"] == "write code"
        [rb] = [ev["data"] for ev in t.events() if ev["type"] == "rolled_back"]
        assert rb["input_ids"] == [ids["write a haiku"]]


def test_cli_json_and_missing_file(home, rollout, capsys):
    from continuation.commands import run

    assert run(["import", "codex", str(rollout), "--json", "--session-over"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs_admitted"] == 3 and data["repeated_tool_calls_total"] == 45
    assert data["repeated_tool_calls"][0]["count"] == 46
    assert run(["import", "codex", str(rollout)]) == 0
    out = capsys.readouterr().out
    assert "0 admitted" in out and "ran 46 times" in out
    assert run(["import", "codex", str(rollout) + ".missing"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_early_rollout_format_without_turns(home, tmp_path):
    """An early (2025) rollout: a bare meta line, bare response items, no turn ids and no task
    events. Turns are numbered by the importer; a reply followed by a new message ends one."""
    records = [
        {"id": "early-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<user_instructions>\nbe brief\n</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "function_call", "name": "shell", "call_id": "s1",
         "arguments": json.dumps({"command": ["bash", "-lc", "ls"]})},
        {"type": "function_call_output", "call_id": "s1",
         "output": json.dumps({"output": "a\nb", "metadata": {"exit_code": 0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a, b"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "delete b"}]},
        {"type": "function_call", "name": "shell", "call_id": "s2",
         "arguments": json.dumps({"command": ["bash", "-lc", "rm b"]})},
    ]
    path = tmp_path / "rollout-early.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    report = run_import(home, "codex", path, session_over=True)
    assert report.session_id == "early-1"
    assert states(home, "codex", "early-1") == {"list files": "handled",
                                                "delete b": "reconciling"}
    with Engine(home) as e:
        calls = {c.call_id: c for c in thread_of(e, "codex", "early-1").tool_calls()}
        assert calls["s1"].tool == "Bash" and calls["s1"].args == {"command": "ls"}
        assert calls["s1"].status == "ok" and calls["s2"].status == "unknown"


def test_hooks_installed_mid_session_then_import(home, shared_fixtures, rollout):
    """Hooks saw only the first run; the import fills in the rest with the same ids."""
    from continuation import hooks

    lines = (shared_fixtures / "codex" / "hook-payloads.jsonl").read_bytes().splitlines()
    for line in lines[:5]:  # SessionStart .. Stop of "append a line to notes.txt"
        assert hooks.run("codex", line)[1] == 0
    hooked = snapshot(home, "codex", SESSION)
    assert len(hooked["inputs"]) == 1
    report = run_import(home, "codex", rollout, session_over=True)
    assert report.duplicates == 1 and report.inputs_admitted == 2
    merged = snapshot(home, "codex", SESSION)
    assert hooked["inputs"][0][0] in [i for i, _ in merged["inputs"]] and len(merged["inputs"]) == 3
    assert merged["claims"] == hooked["claims"]  # the first turn's claim came from Stop
    assert states(home, "codex", SESSION) == {
        "append a line to notes.txt": "handled",
        "append a second line": "interrupted",
        "slow task: wait for the build": "reconciling",
    }


def test_cli_subprocess_exit_codes(home, rollout, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    ok = subprocess.run([sys.executable, "-m", "continuation", "import", "codex", str(rollout),
                         "--session-over"], capture_output=True, env=env, timeout=120)
    assert ok.returncode == 0 and b"ran 46 times" in ok.stdout and ok.stderr == b""
    bad = subprocess.run([sys.executable, "-m", "continuation", "import", "codex",
                          str(tmp_path / "missing.jsonl")], capture_output=True, env=env, timeout=120)
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.decode().count("\n") == 1 and b"Traceback" not in bad.stderr


def test_subagent_turn_does_not_cut_its_parent(home, tmp_path):
    def started(turn, parent=None):
        return {"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn,
                "turn_attribution": {"turn_id": turn, "parent_turn_id": parent}}}

    def user(turn, text, provenance="user"):
        return {"type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}],
            "internal_chat_message_metadata_passthrough": {
                "turn_id": turn, "content_item_metadata": [{"provenance": {"type": provenance}}]}}}

    records = [
        {"type": "session_meta", "payload": {"id": "synth-agents", "cwd": "/tmp/x"}},
        started("parent"), user("parent", "survey the repo"),
        started("child", parent="parent"), user("child", "list the modules", provenance="agent"),
        {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "child"}},
        {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "parent",
                                          "last_agent_message": "surveyed"}},
    ]
    path = tmp_path / "rollout-agents.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    report = run_import(home, "codex", path, session_over=True)
    # the sub-agent's instructions come from the model, not the user: not an input
    assert states(home, "codex", "synth-agents") == {"survey the repo": "handled"}
    assert report.cut_turns == []


def test_concurrent_imports_write_each_fact_once(home, rollout):
    import os
    import subprocess
    import sys

    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    cmd = [sys.executable, "-m", "continuation", "import", "codex", str(rollout), "--session-over"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Engine(home) as e:
        t = thread_of(e, "codex", SESSION)
        types = Counter(ev["type"] for ev in t.events())
    assert types["input_admitted"] == 3 and types["tool_started"] == 48
    assert types["tool_finished"] == 47 and types["boundary"] == 46
    assert types["assistant_claim"] == 1 and types["turn_aborted"] == 2
