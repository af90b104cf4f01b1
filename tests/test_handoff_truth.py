"""Issue 12 (items 2, 3, 4, 8): the handoff tells the truth on failed calls mid-turn, after a
reconciliation decision, with reused call ids, and about a killed runtime."""
from __future__ import annotations

import json

from continuation import checkpoints, hooks
from continuation.engine import Engine


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
    calls = {c.call_id: (c.status, c.exit_code) for c in cap.tool_calls}
    assert calls == {"c1": ("error", 2), "c2": ("error", 3), "c3": ("ok", 0)}
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
    assert [(c.status, c.exit_code) for c in cap.tool_calls] == [("error", 3)]
    assert [f.text for f in cap.runtime_facts if f.kind == "tool_finished"] == [
        "tool call c1 finished: error exit 3"]
    assert "ok" not in " ".join(f.text for f in cap.runtime_facts if f.kind == "tool_finished")
