"""``continuation import gemini FILE``: a session file shaped like Gemini CLI 0.61.0's (the e2e test
imports the real one and compares ids with the hooks')."""
from __future__ import annotations

import json
from pathlib import Path

from continuation import hooks
from continuation.session.engine import Engine
from continuation.importers import import_transcript
from statemachine.ids import derived_input_id

SID = "fb495f49-74a5-499e-a379-d8e478328287"
CONTEXT = {"id": "ctx", "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI."}]}


def call(cid: str, command: str, status: str | None, output: str = "Output: (empty)") -> dict:
    c = {"id": cid, "name": "run_shell_command", "args": {"command": command}}
    if status:
        c.update(status=status, result=[{"functionResponse": {"id": cid, "name": "run_shell_command",
                                                              "response": {"output": output}}}])
    return c


def session_file(path: Path) -> Path:
    meta = {"sessionId": SID, "projectHash": "ab", "startTime": "t", "lastUpdated": "t", "kind": "main"}
    records = [
        meta, {"$set": {"messages": [CONTEXT], "lastUpdated": "t"}},
        {"id": "u1", "type": "user", "content": [
            {"text": "<hook_context>from SessionStart</hook_context>\n\nappend a line"},
            {"text": "<hook_context>from BeforeAgent</hook_context>"}]},
        {"id": "g1", "type": "gemini", "content": "", "tokens": {"input": 10}},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [call("c-1", "echo line >> notes.txt", "success")]},
        {"id": "r1", "type": "user", "content": [{"functionResponse": {"id": "c-1", "name": "run_shell_command"}}]},
        {"id": "g2", "type": "gemini", "content": "done"},
        # a second process resumes the session
        meta, {"$set": {"messages": [CONTEXT], "lastUpdated": "t"}}, {"$set": {"sessionId": SID}},
        {"$set": {"messages": [CONTEXT, {"id": "u1", "type": "user", "content": [{"text": "append a line"}]}]}},
        {"id": "u2", "type": "user", "content": [{"text": "run the check"}]},
        {"id": "g3", "type": "gemini", "content": "", "toolCalls": [call("c-2", "sh check.sh", "success",
                                                                         "Output: bad\nExit Code: 3")]},
        {"id": "r2", "type": "user", "content": [{"functionResponse": {"id": "c-2"}}]},
        # the chat restarts with a compressed history: new ids, the summary as a user message
        {"$set": {"sessionId": SID}},
        {"$set": {"messages": [CONTEXT, {"id": "n1", "type": "user", "content": [{"text": "<state_snapshot>s"}]},
                               {"id": "n2", "type": "user", "content": [{"text": "run the check"}]}]}},
        {"id": "g4", "type": "gemini", "content": "", "toolCalls": [call("c-3", "ls", None)]},
        {"id": "i1", "type": "info", "content": "Request cancelled."},
        # a resume in another minute: no metadata line here, the compressed history listed again
        {"$set": {"sessionId": SID}},
        {"$set": {"messages": [CONTEXT, {"id": "n1", "type": "user", "content": [{"text": "<state_snapshot>s"}]}]}},
        {"id": "u3", "type": "user", "content": [{"text": "and now?"}]},
        {"id": "g5", "type": "gemini", "content": "all done"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_import_reads_prompts_calls_and_the_compression(home, tmp_path):
    report = import_transcript("gemini", session_file(tmp_path / "session.jsonl"), session_over=True)
    key = f"gemini-{SID}"
    assert [(p["text"], p["turn_id"]) for p in report.prompts] == [
        ("append a line", "prompt-1"), ("run the check", "prompt-2"), ("and now?", "prompt-3")]
    assert report.compactions == 1, "one summary, listed twice"
    assert report.unknown_types == {}
    with Engine(home) as engine:
        t = engine.find_thread("gemini", SID)
        inputs = {r.text: (r.input_id, r.state) for r in t.inputs()}
        calls = {c.call_id: c.status for c in t.tool_calls()}
    assert inputs["append a line"] == (derived_input_id(key, "prompt-1", 0, "append a line"), "handled")
    # its call was left without an outcome when the next prompt came: reconciliation
    assert inputs["run the check"][1] == "reconciling"
    assert inputs["and now?"][1] == "handled"
    assert calls == {"prompt-1:call-1": "ok", "prompt-2:call-1": "error", "prompt-2:call-2": "unknown"}


def test_hooks_then_import_admit_nothing_twice(home, tmp_path):
    path = session_file(tmp_path / "session.jsonl")
    base = {"session_id": SID, "transcript_path": str(path), "cwd": str(tmp_path), "timestamp": "t"}
    for p in ({"hook_event_name": "BeforeAgent", "prompt": "<hook_context>x</hook_context>\n\nappend a line"},
              {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
               "tool_input": {"command": "echo line >> notes.txt"}},
              {"hook_event_name": "AfterTool", "tool_name": "run_shell_command",
               "tool_input": {"command": "echo line >> notes.txt"}, "tool_response": {"llmContent": "ok"}},
              {"hook_event_name": "AfterAgent", "prompt": "append a line", "prompt_response": "done"}):
        assert hooks.run("gemini", json.dumps({**base, **p}).encode())[1] == 0
    report = import_transcript("gemini", path, session_over=True)
    assert report.duplicates == 1 and report.inputs_admitted == 2
    again = import_transcript("gemini", path, session_over=True)
    assert again.inputs_admitted == 0
    with Engine(home) as engine:
        t = engine.find_thread("gemini", SID)
        assert [r.turn_id for r in t.inputs()] == ["prompt-1", "prompt-2", "prompt-3"]


def test_damaged_records_are_reported_not_fatal(home, tmp_path):
    path = session_file(tmp_path / "session.jsonl")
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"$set": [1, 2]}\n{"id": "x", "type": "gemini", "toolCalls": "nope"}\n{"torn": \n')
    report = import_transcript("gemini", path, session_over=True)
    assert len(report.prompts) == 3
    assert report.malformed, "the damaged records are listed"
