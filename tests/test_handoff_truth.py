"""The handoff tells the truth on failed calls mid-turn, after a
reconciliation decision, with reused call ids, and about a killed runtime."""
from __future__ import annotations

import json

from continuation.boundary import checkpoints
from continuation import hooks
from continuation.session.engine import Engine


def feed(runtime: str, payloads) -> list[tuple[str, int]]:
    return [hooks.run(runtime, json.dumps(p).encode()) for p in payloads]


def codex_rollout(path, outputs) -> None:
    """A Codex rollout tail: one function_call_output per (call id, exit code)."""
    rows = [{"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": call,
        "output": f"Exit code: {code}\nWall time: 0.1 seconds\nOutput:\nx\n"}}
        for call, code in outputs]
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))


def codex_call(base, call_id, command, output="") -> list[dict]:
    return [{**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": command}, "tool_use_id": call_id},
            {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
             "tool_input": {"command": command}, "tool_use_id": call_id,
             "tool_response": output}]


# -- item 2: failed calls are not shown as ok mid-turn ----------------------------------------

def _finished(cap) -> dict:
    """Command -> (status, exit code) of the finished calls in the capsule's work ledger."""
    return {w.call.removeprefix("$ "): (w.status, w.exit_code) for w in cap.work_done}


def _capsule(home, session):
    with Engine(home) as e:
        t = e.find_thread("codex", session)
        return checkpoints.load(t).capsule


def test_codex_compaction_mid_turn_settles_exit_codes_before_the_checkpoint(home, tmp_path):
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    base = {"session_id": "mid", "turn_id": "t1", "transcript_path": str(rollout),
            "cwd": str(tmp_path)}
    feed("codex", [{**base, "hook_event_name": "UserPromptSubmit", "prompt": "check things"}]
         + codex_call(base, "c1", "ls /nonexistent", "ls: cannot access '/nonexistent'")
         + codex_call(base, "c2", "exit 3") + codex_call(base, "c3", "true"))
    codex_rollout(rollout, [("c1", 2), ("c2", 3), ("c3", 0)])
    feed("codex", [{**base, "hook_event_name": "PreCompact", "trigger": "auto"}])
    cap = _capsule(home, "mid")
    assert not cap.tool_calls  # every call finished: they are in the work ledger
    assert _finished(cap) == {"ls /nonexistent": ("error", 2), "exit 3": ("error", 3), "true": ("ok", 0)}
    facts = [f.text for f in cap.runtime_facts if f.kind == "tool_finished"]
    assert facts == ["tool call c1 finished: error exit 2", "tool call c2 finished: error exit 3",
                     "tool call c3 finished: ok exit 0"]
    assert cap.cursor.last_runtime_outcome == "ok, exit 0"


def test_facts_follow_the_call_record_after_stop(home, tmp_path):
    """The exit code arrives after the tool_finished fact (at Stop, from the rollout): the next
    checkpoint's facts and cursor say what the call list says, not the earlier `ok`."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()
    base = {"session_id": "stop", "turn_id": "t1", "transcript_path": str(rollout)}
    feed("codex", [{**base, "hook_event_name": "UserPromptSubmit", "prompt": "run it"}]
         + codex_call(base, "c1", "exit 3"))
    codex_rollout(rollout, [("c1", 3)])
    feed("codex", [{**base, "hook_event_name": "Stop", "last_assistant_message": "ran it"},
                   {**base, "hook_event_name": "PreCompact", "trigger": "manual"}])
    cap = _capsule(home, "stop")
    assert _finished(cap) == {"exit 3": ("error", 3)}
    assert [f.text for f in cap.runtime_facts if f.kind == "tool_finished"] == [
        "tool call c1 finished: error exit 3"]
    assert "ok" not in " ".join(f.text for f in cap.runtime_facts if f.kind == "tool_finished")


# -- item 4: a call id reused in a later turn is a new call -----------------------------------

def _dead_marker() -> dict:
    import subprocess
    import sys

    from continuation.host import liveness

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return {"pid": p.pid, "proc_start": "12345", "host": liveness.hostname()}


def test_a_call_id_reused_in_a_later_turn_is_recorded_and_reconciled_after_a_crash(engine):
    from continuation.recovery import interrupted, reconcile

    marker = _dead_marker()
    t = engine.thread("codex", "reuse")
    t.admit("list the files", turn_id="t1", session=marker)
    t.tool_started("call_0_0", "Bash", {"command": "ls"}, turn_id="t1", session=marker)
    t.tool_finished("call_0_0", "ok", turn_id="t1", session=marker)
    t.turn_completed("t1", session=marker)
    # a new process of the provider numbers its calls from 0 again
    t.admit("deploy to staging", turn_id="t2", session=marker)
    started = t.tool_started("call_0_0", "Bash", {"command": "./deploy staging"}, turn_id="t2",
                             session=marker)
    assert started.seq is not None, "the second call's start was dropped as a duplicate"
    calls = {c.call_id: (c.turn_id, c.status, c.runtime_call_id) for c in t.tool_calls()}
    assert calls == {"call_0_0": ("t1", "ok", None),
                     "call_0_0@t2": ("t2", "in_flight", "call_0_0")}
    # kill -9: recover finds the deploy's unknown outcome; the input waits for reconciliation
    item = interrupted.examine(t)
    assert interrupted.record_crash(t, item)
    assert {r.text: r.state for r in t.inputs()} == {"list the files": "handled",
                                                     "deploy to staging": "reconciling"}
    [waiting] = reconcile.pending(t)
    assert waiting.call_id == "call_0_0@t2" and waiting.args == {"command": "./deploy staging"}
    assert engine.store.derived_state(t.key).snapshot() == engine.store.replay(t.key).snapshot()


def test_outcomes_of_a_reused_id_go_to_the_call_of_their_turn(engine):
    t = engine.thread("codex", "reuse2")
    for turn, cmd in (("t1", "ls"), ("t2", "make")):
        t.admit(f"do {cmd}", turn_id=turn)
        t.tool_started("call_0", "Bash", {"command": cmd}, turn_id=turn)
        t.tool_finished("call_0", "error" if turn == "t2" else "ok", turn_id=turn)
        t.turn_completed(turn)
    calls = {c.call_id: (c.args["command"], c.status) for c in t.tool_calls()}
    assert calls == {"call_0": ("ls", "ok"), "call_0@t2": ("make", "error")}
    # an outcome without a recorded start, reusing the id in a third turn, is not dropped
    t.admit("do test", turn_id="t3")
    assert t.tool_finished("call_0", "ok", turn_id="t3").seq is not None
    assert "call_0@t3" in {c.call_id for c in t.tool_calls()}
    # a late outcome of a call still open keeps going to that call
    t.admit("do slow", turn_id="t4")
    t.tool_started("slow_1", "Bash", {"command": "sleep 9"}, turn_id="t4")
    t.admit("next", turn_id="t5")
    t.tool_finished("slow_1", "ok", turn_id="t5")
    assert {c.call_id: c.status for c in t.tool_calls()}["slow_1"] == "ok"
    assert engine.store.derived_state(t.key).snapshot() == engine.store.replay(t.key).snapshot()


def test_codex_stop_reads_a_reused_ids_exit_code_from_its_own_turn(home, tmp_path):
    """The rollout holds `call_0` twice (two turns): the second call gets the second output's
    exit code, and an open reused call is never settled by the earlier turn's output."""
    rollout = tmp_path / "rollout.jsonl"
    rollout.touch()

    def turn_marker(turn):
        with rollout.open("a") as fh:
            fh.write(json.dumps({"type": "event_msg", "payload": {"type": "task_started",
                                                                  "turn_id": turn}}) + "\n")

    base1 = {"session_id": "r", "turn_id": "t1", "transcript_path": str(rollout)}
    base2 = {**base1, "turn_id": "t2"}
    turn_marker("t1")
    feed("codex", [{**base1, "hook_event_name": "UserPromptSubmit", "prompt": "one"}]
         + codex_call(base1, "call_0", "true"))
    codex_rollout(rollout, [("call_0", 0)])
    feed("codex", [{**base1, "hook_event_name": "Stop", "last_assistant_message": "ok"}])
    turn_marker("t2")
    feed("codex", [{**base2, "hook_event_name": "UserPromptSubmit", "prompt": "two"}]
         + codex_call(base2, "call_0", "exit 4"))
    codex_rollout(rollout, [("call_0", 4)])
    turn_marker("t3")
    feed("codex", [{**base2, "hook_event_name": "Stop", "last_assistant_message": "ok"},
                   {**base1, "turn_id": "t3", "hook_event_name": "UserPromptSubmit",
                    "prompt": "three"},
                   {**base1, "turn_id": "t3", "hook_event_name": "PreToolUse",
                    "tool_name": "Bash", "tool_input": {"command": "deploy"},
                    "tool_use_id": "call_0"},
                   {**base1, "turn_id": "t3", "hook_event_name": "Stop",
                    "last_assistant_message": "deployed"}])
    with Engine(home) as e:
        t = e.find_thread("codex", "r")
        calls = {c.call_id: (c.status, c.outcome.get("exit_code")) for c in t.tool_calls()}
        assert calls == {"call_0": ("ok", 0), "call_0@t2": ("error", 4),
                         "call_0@t3": ("unknown", None)}
        assert {r.text: r.state for r in t.inputs()}["three"] == "reconciling"


# -- item 3: a reconciliation decision reaches the model ---------------------------------------

def _crashed_deploy(engine, session: str):
    """A Codex thread whose runtime died inside `./deploy staging` (recorded as a crash)."""
    from continuation.recovery import interrupted

    t = engine.thread("codex", session)
    marker = _dead_marker()
    t.admit("deploy the release to staging, then post the link", turn_id="t1", session=marker)
    t.tool_started("c1", "Bash", {"command": "./deploy staging"}, turn_id="t1", session=marker)
    assert interrupted.record_crash(t, interrupted.examine(t))
    return t


def _context(answer: str) -> str:
    data = json.loads(answer)
    return (data.get("hookSpecificOutput") or {}).get("additionalContext") or ""


def test_not_applied_decision_is_delivered_at_the_next_resume(engine):
    from continuation.recovery import reconcile

    t = _crashed_deploy(engine, "na-resume")
    [before] = t.inputs()
    reconcile.decide(t, "c1", "not_applied")
    [rec] = t.inputs()
    assert rec.state == "pending" and rec.awaits_delivery
    (answer, code), = feed("codex", [{"session_id": "na-resume", "hook_event_name": "SessionStart",
                                      "source": "resume"}])
    text = _context(answer)
    assert code == 0 and before.input_id in text, answer
    assert "not applied: it did not take effect; its work is still to do" in text
    [rec] = t.inputs()
    assert not rec.awaits_delivery


def test_an_unrelated_prompt_after_a_decision_carries_it_and_only_then_may_decide(engine):
    from continuation.recovery import reconcile

    t = _crashed_deploy(engine, "na-prompt")
    reconcile.decide(t, "c1", "not_applied")
    base = {"session_id": "na-prompt", "turn_id": "t2"}
    (answer, _), = feed("codex", [{**base, "hook_event_name": "UserPromptSubmit",
                                   "prompt": "what is the time?"}])
    text = _context(answer)
    assert "deploy the release to staging" in text and "not applied" in text, answer
    feed("codex", [{**base, "hook_event_name": "Stop", "last_assistant_message": "12:00"}])
    # the model received the pending state and completed a clean turn after it: decided
    assert {r.text: r.state for r in t.inputs()}["deploy the release to staging, then post "
                                                   "the link"] == "handled"


def test_a_clean_turn_does_not_decide_an_input_whose_state_never_reached_the_model(engine):
    """No context was delivered after the decision (a turn recorded without its prompt hook):
    an unrelated turn completing says nothing about the reopened input."""
    from continuation.recovery import reconcile

    t = _crashed_deploy(engine, "na-unseen")
    reconcile.decide(t, "c1", "not_applied")
    t.admit("what is the time?", turn_id="t2")
    feed("codex", [{"session_id": "na-unseen", "turn_id": "t2", "hook_event_name": "Stop",
                    "last_assistant_message": "12:00"}])
    states = {r.text: r.state for r in t.inputs()}
    assert states == {"deploy the release to staging, then post the link": "pending",
                      "what is the time?": "handled"}


def test_applied_decision_says_the_call_took_effect(engine):
    from continuation.recovery import reconcile

    t = _crashed_deploy(engine, "applied")
    reconcile.decide(t, "c1", "applied")
    (answer, _), = feed("codex", [{"session_id": "applied", "hook_event_name": "SessionStart",
                                   "source": "resume"}])
    text = _context(answer)
    assert "c1: Bash" in text and "applied: it took effect; do not run it again" in text, text
    assert "reconciled by the user: applied" in text  # the cursor is the settled call
    assert "Continue it from after them and do only what remains of it" in text


# -- item 8: status says when the runtime was killed --------------------------------------------

def _cli_json(*argv) -> dict:
    import contextlib
    import io

    from continuation.commands import run as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli(list(argv)) == 0
    return json.loads(out.getvalue())


def _cli_text(*argv) -> str:
    import contextlib
    import io

    from continuation.commands import run as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli(list(argv)) == 0
    return out.getvalue()


def test_status_and_inputs_show_a_killed_runtime(engine):
    import os

    from continuation.recovery import interrupted
    from continuation.host import liveness

    killed = engine.thread("codex", "killed")
    killed.admit("build the docs", turn_id="t1", session=_dead_marker())
    running = engine.thread("codex", "running")
    running.admit("lint", turn_id="t1", session=liveness.marker(os.getpid()))
    ended = engine.thread("codex", "ended")
    ended.admit("test", turn_id="t1", session=_dead_marker())
    ended.turn_completed("t1")
    engine.store.end_sessions(ended.key)

    report = {t["thread"]["session_id"]: t for t in _cli_json("status", "--json")["threads"]}
    assert {k: (v["thread"]["status"], v["runtime"]["verdict"]) for k, v in report.items()} == {
        "killed": ("killed", "killed"), "running": ("running", "running"),
        "ended": ("ended", "ended")}
    assert "continuation recover" in report["killed"]["runtime"]["detail"]
    text = _cli_text("status", "--thread", "killed")
    assert "runtime: killed - the owner (pid" in text and "not being worked on" in text
    listed = _cli_json("inputs", "--thread", "killed", "--json")
    assert listed["runtime"]["verdict"] == "killed"
    assert [i["state"] for i in listed["inputs"]] == ["pending"]
    shown = _cli_text("inputs", "--thread", "killed").splitlines()
    assert shown[0] == "thread codex-killed" and shown[1].startswith("runtime: killed")

    # status records nothing; after `recover` records the crash it says so
    assert [e["type"] for e in killed.events()] == ["input_admitted"]
    assert interrupted.record_crash(killed, interrupted.examine(killed))
    again = _cli_json("inputs", "--thread", "killed", "--json")
    assert again["runtime"]["verdict"] == "crashed"
    assert [i["state"] for i in again["inputs"]] == ["interrupted"]


def test_importing_a_rollout_that_reuses_a_call_id_keeps_both_calls(home, tmp_path):
    from continuation.importers import import_transcript

    rows = [{"type": "session_meta", "payload": {"id": "sess-reuse", "cwd": str(tmp_path)}}]
    for n, (cmd, code) in enumerate([("ls", 0), ("make", 2)]):
        turn = f"turn-{n}"
        rows += [
            {"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn}},
            {"type": "turn_context", "payload": {"turn_id": turn, "cwd": str(tmp_path)}},
            {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": f"run {cmd}"}]}},
            {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                                  "arguments": json.dumps({"cmd": cmd}),
                                                  "call_id": "call_0"}},
            {"type": "response_item", "payload": {"type": "function_call_output",
                                                  "call_id": "call_0",
                                                  "output": f"Process exited with code {code}\n"}},
            {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": turn}}]
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Engine(home) as e:
        report = import_transcript("codex", rollout, engine=e)
        assert report.tool_calls_paired == 2 and not report.tool_calls_unpaired
        [t] = e.threads()
        calls = {c.call_id: (c.turn_id, c.args.get("command"), c.status,
                             c.outcome.get("exit_code")) for c in t.tool_calls()}
        assert calls == {"call_0": ("turn-0", "ls", "ok", 0),
                         "call_0@turn-1": ("turn-1", "make", "error", 2)}
        before = t.row["last_seq"]
        import_transcript("codex", rollout, engine=e)  # nothing twice
        assert t.row["last_seq"] == before


def test_a_rewind_summary_lists_both_calls_of_a_reused_id():
    from continuation.session.rewind_notes import recovery_notices

    log = [{"seq": 1, "type": "input_admitted", "data": {"input_id": "i1", "text": "a",
                                                         "turn_id": "t1"}}]
    for seq, (turn, cmd, status) in enumerate([("t1", "ls docs", "ok"),
                                               ("t2", "rm -rf build", "error")], 2):
        log += [{"seq": seq * 10, "type": "tool_started", "data": {
                    "call_id": "call_0", "turn_id": turn, "tool": "Bash", "args": {"command": cmd}}},
                {"seq": seq * 10 + 1, "type": "tool_finished", "data": {
                    "call_id": "call_0", "turn_id": turn, "status": status}}]
    log.append({"seq": 40, "type": "rolled_back", "data": {"to_seq": 1}})
    text = "\n".join(line for n in recovery_notices(log, thread_key="t") for line in n.lines)
    assert "ls docs" in text and "rm -rf build" in text, text


def test_reconcile_by_a_reused_runtime_id_names_the_waiting_call(engine, capsys):
    from continuation.commands import run as cli
    from continuation.recovery import interrupted

    marker = _dead_marker()
    t = engine.thread("codex", "reuse-cli")
    t.admit("list", turn_id="t1", session=marker)
    t.tool_started("call_0", "Bash", {"command": "ls"}, turn_id="t1", session=marker)
    t.tool_finished("call_0", "ok", turn_id="t1", session=marker)
    t.turn_completed("t1", session=marker)
    t.admit("deploy", turn_id="t2", session=marker)
    t.tool_started("call_0", "Bash", {"command": "./deploy"}, turn_id="t2", session=marker)
    assert interrupted.record_crash(t, interrupted.examine(t))
    assert cli(["reconcile", "call_0", "--thread", "reuse-cli", "--applied"]) != 0
    err = capsys.readouterr().err
    assert "already has an outcome (ok)" in err and "call_0@t2" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert cli(["reconcile", "call_0@t2", "--thread", "reuse-cli", "--applied"]) == 0
    assert [c.status for c in t.tool_calls()] == ["ok", "reconciled"]
