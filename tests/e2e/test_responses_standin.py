"""The Responses-API stand-in on its own: script decisions, SSE framing, request log (no Codex needed)."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from responses_standin import (  # noqa: E402
    SUMMARY_TEXT,
    ResponsesStandin,
    ScriptedModel,
    last_user_prompt,
    request_kind,
    sse_events,
)


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


ENV = user("<environment_context>\n  <cwd>/x</cwd>\n</environment_context>")
TOOLS = [{"type": "function", "name": "exec_command"}, {"type": "function", "name": "apply_patch"}]


def test_compaction_request_is_recognised_by_codex_prompt() -> None:
    body = {"input": [ENV, user("do it"), user("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff")]}
    assert request_kind(body) == "compaction"
    assert request_kind({"input": [ENV, user("do it")]}) == "turn"


def test_injected_context_and_summaries_are_not_prompts() -> None:
    body = {"input": [user("first `ls`"), ENV, user("Another language model started to solve this problem ...")]}
    assert last_user_prompt(body) == (0, "first `ls`")
    assert last_user_prompt({"input": [ENV]}) is None


def test_command_prompt_gets_one_tool_call_then_an_answer() -> None:
    model = ScriptedModel()
    kind, items, _ = model.respond({"input": [ENV, user("append `echo a >> f`")], "tools": TOOLS})
    assert kind == "turn" and items[0]["type"] == "function_call"
    assert items[0]["name"] == "exec_command" and json.loads(items[0]["arguments"]) == {"cmd": "echo a >> f"}
    call = items[0]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
    kind, items, _ = model.respond({"input": [ENV, user("append `echo a >> f`"), call, output], "tools": TOOLS})
    assert items[0]["type"] == "message"
    assert items[0]["content"][0]["text"] == "done with: append `echo a >> f`"


def test_other_shell_tools_are_used_when_exec_command_is_absent() -> None:
    model = ScriptedModel()
    _, items, _ = model.respond({"input": [user("`ls`")], "tools": [{"type": "function", "name": "shell"}]})
    assert items[0]["name"] == "shell" and json.loads(items[0]["arguments"]) == {"command": ["bash", "-lc", "ls"]}


def test_token_schedules() -> None:
    model = ScriptedModel(tokens_before_compaction=1500, tokens_after_compaction=200)
    assert model.respond({"input": [user("hi")]})[2] == 1500
    compaction = {"input": [user("hi"), user("CONTEXT CHECKPOINT COMPACTION")]}
    kind, items, tokens = model.respond(compaction)
    assert (kind, tokens, items[0]["content"][0]["text"]) == ("compaction", 200, SUMMARY_TEXT)
    assert model.respond({"input": [user("hi")]})[2] == 200

    scheduled = ScriptedModel(turn_tokens=[1, 2, 3])
    assert [scheduled.respond({"input": [user("hi")]})[2] for _ in range(5)] == [1, 2, 3, 3, 3]


def test_sse_stream_has_codex_event_sequence() -> None:
    item = {"type": "message", "id": "m1", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    raw = sse_events("resp_1", [item], 42).decode("utf-8")
    frames = [f for f in raw.split("\n\n") if f]
    kinds = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert kinds == ["response.created", "response.output_item.added", "response.output_text.delta",
                     "response.output_item.done", "response.completed"]
    completed = json.loads(frames[-1].split("\n")[1].removeprefix("data: "))
    assert completed["response"]["usage"]["input_tokens"] == 42
    assert completed["response"]["usage"]["total_tokens"] == 52


def test_server_streams_and_logs_every_request(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with ResponsesStandin(log) as standin:
        body = json.dumps({"model": "m", "input": [user("hello")], "stream": True}).encode()
        request = urllib.request.Request(f"{standin.base_url}/responses", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"] == "text/event-stream"
            stream = response.read().decode()
        bad = urllib.request.Request(f"{standin.base_url}/responses", data=b"{not json",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(bad, timeout=10)
            raise AssertionError("malformed body must be refused")
        except urllib.error.HTTPError as exc:
            assert exc.code == 400
        records = standin.requests()
    assert "response.completed" in stream and "done with: hello" in stream
    assert [r["kind"] for r in records] == ["turn", "unreadable"]
    assert records[0]["body"]["input"][0]["content"][0]["text"] == "hello"
    assert records[0]["input_tokens"] == 1500
