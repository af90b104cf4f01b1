"""continuation.adapters.claude_agent_sdk: the SDK's hooks mapping, handled in process.

The unit tests build the SDK's own types (HookMatcher, the typed hook inputs, HookContext) and
compare with the hook command; the e2e test drives the real Claude Code 2.1.332 through the SDK
(``cli_path``) against the loopback Messages-API stand-in. Skipped with a reason when
claude-agent-sdk is not installed (``pip install '.[claude-agent-sdk]'``) or node/npm are missing.
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
from pathlib import Path

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="claude-agent-sdk is not installed "
                          "(pip install '.[claude-agent-sdk]')")

from continuation import hooks  # noqa: E402
from continuation.adapters.claude_agent_sdk import EVENTS, continuation_hooks  # noqa: E402
from continuation.api import Continuation  # noqa: E402
from continuation.session.engine import Engine  # noqa: E402

E2E_DIR = Path(__file__).resolve().parent / "e2e"
CHECKPOINT_MARKER = "<<<CONTINUATION-CHECKPOINT "


def _payloads(cwd: str) -> list[dict]:
    base = {"session_id": "sdk-s", "transcript_path": "", "cwd": cwd}
    return [
        sdk.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit",
                                      prompt_id="p1", prompt="append a line to notes.txt"),
        sdk.PreToolUseHookInput(**base, hook_event_name="PreToolUse", prompt_id="p1",
                                tool_name="Bash", tool_input={"command": "echo l >> notes.txt"},
                                tool_use_id="toolu_1"),
        sdk.PostToolUseHookInput(**base, hook_event_name="PostToolUse", prompt_id="p1",
                                 tool_name="Bash", tool_input={"command": "echo l >> notes.txt"},
                                 tool_response={"stdout": "", "stderr": "",
                                                "interrupted": False},
                                 tool_use_id="toolu_1"),
        sdk.StopHookInput(**base, hook_event_name="Stop", prompt_id="p1", stop_hook_active=False,
                          last_assistant_message="Appended (claim)."),
        sdk.UserPromptSubmitHookInput(**base, hook_event_name="UserPromptSubmit",
                                      prompt_id="p2", prompt="now the docs"),
        sdk.PreCompactHookInput(**base, hook_event_name="PreCompact", trigger="manual",
                                custom_instructions=None),
        # the SDK has no typed input for SessionStart; Claude Code sends it all the same
        {**base, "hook_event_name": "SessionStart", "source": "compact"},
    ]


def _run_callbacks(mapping, payloads) -> list[dict]:
    async def go():
        answers = []
        for p in payloads:
            [matcher] = mapping[p["hook_event_name"]]
            [callback] = matcher.hooks
            answers.append(await callback(p, p.get("tool_use_id"), sdk.HookContext(signal=None)))
        return answers
    return asyncio.run(go())


def test_hooks_mapping_is_made_of_the_sdks_types(tmp_path):
    with Continuation(tmp_path) as c:
        mapping = continuation_hooks(c, timeout=30)
        assert tuple(mapping) == EVENTS
        for event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
                      "SessionStart"):
            [matcher] = mapping[event]
            assert isinstance(matcher, sdk.HookMatcher)
            assert matcher.matcher is None and matcher.timeout == 30  # every tool
            assert all(inspect.iscoroutinefunction(cb) for cb in matcher.hooks)
        # the options object takes it as its hooks
        assert sdk.ClaudeAgentOptions(hooks=mapping).hooks is mapping


def test_callbacks_record_what_the_hook_command_records(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    payloads = _payloads(str(work))
    with Continuation(tmp_path / "sdk") as c:
        answers = _run_callbacks(continuation_hooks(c), payloads)
    monkeypatch.setenv("CONTINUATION_HOME", str(tmp_path / "cmd"))
    for p in payloads:
        hooks.run("claude", json.dumps(p).encode())

    def facts(home):
        with Engine(home) as e:
            t = e.find_thread("claude", "sdk-s")
            return ([x["type"] for x in t.events()], {r.input_id: r.state for r in t.inputs()},
                    [(x.call_id, x.status) for x in t.tool_calls()])

    assert facts(tmp_path / "sdk") == facts(tmp_path / "cmd")
    types, states, calls = facts(tmp_path / "sdk")
    assert states == {"p1": "handled", "p2": "pending"} and calls == [("toolu_1", "ok")]
    assert "checkpoint_committed" in types and types[-1] == "context_delivered"
    assert answers[:-1] == [{}] * (len(payloads) - 1)
    out = answers[-1]["hookSpecificOutput"]  # a SyncHookJSONOutput the SDK sends on
    assert out["hookEventName"] == "SessionStart"
    assert CHECKPOINT_MARKER in out["additionalContext"]
    assert "now the docs" in out["additionalContext"]
    with Engine(tmp_path / "sdk") as e:  # this process owns the session (no hook process)
        [marker] = e.find_thread("claude", "sdk-s").store.sessions()
        assert marker["pid"] == os.getpid()


def test_a_failing_callback_fails_open_and_logs(tmp_path, caplog):
    with Continuation(tmp_path) as c:
        mapping = continuation_hooks(c)
        with caplog.at_level(logging.ERROR, logger="continuation.adapters"):
            [answer] = _run_callbacks(mapping, [{"hook_event_name": "PreToolUse",
                                                 "tool_use_id": "x"}])  # no session_id
    assert answer == {}
    assert "PreToolUse hook failed" in caplog.text and "session_id" in caplog.text


# ---------------------------------------------------------------------------------------------
# end to end: the SDK drives the real Claude Code against the loopback stand-in


@pytest.fixture(scope="module")
def claude_bin():
    sys.path.insert(0, str(E2E_DIR))
    import claude_tools as ct

    try:
        return ct.ensure_claude()
    except ct.ClaudeUnavailable as exc:
        pytest.skip(f"Claude Code {ct.CLAUDE_VERSION} unavailable: {exc}")


@pytest.mark.e2e
@pytest.mark.slow
def test_sdk_session_through_the_adapter(tmp_path, claude_bin):
    import claude_tools as ct
    from messages_standin import StandInServer, read_log

    prompts = ("append a second line", "/compact", "hello again")

    async def drive(box, c):
        options = sdk.ClaudeAgentOptions(cli_path=str(claude_bin), cwd=str(box.repo),
                                         env=box.env, allowed_tools=list(ct.ALLOWED_TOOLS),
                                         hooks=continuation_hooks(c))
        session_id = None
        async with sdk.ClaudeSDKClient(options) as client:
            for prompt in prompts:
                await client.query(prompt)
                async for message in client.receive_response():
                    if isinstance(message, sdk.ResultMessage):
                        assert not message.is_error, message
                        session_id = message.session_id
        return session_id

    with StandInServer(tmp_path / "requests.jsonl") as server:
        box = ct.ClaudeSandbox(tmp_path / "box", claude_bin, server.base_url)
        box.init_repo()
        box.write_settings(record=False)  # no command hooks: only the SDK's callbacks
        with Continuation(tmp_path / "state") as c:
            session_id = asyncio.run(asyncio.wait_for(drive(box, c), timeout=240))
    assert session_id
    assert (box.repo / "notes.txt").read_text() == "line\n"
    with Engine(tmp_path / "state") as e:
        t = e.find_thread("claude", session_id)
        assert t is not None, "the callbacks recorded nothing"
        states = {r.text: r.state for r in t.inputs()}
        assert states == {"append a second line": "handled", "hello again": "handled"}
        [call] = t.tool_calls()
        assert (call.tool, call.args["command"], call.status) == (
            "Bash", "echo line >> notes.txt", "ok")
        types = [x["type"] for x in t.events()]
        assert "checkpoint_committed" in types and "boundary" in types
        delivered = [x["data"]["via"] for x in t.events() if x["type"] == "context_delivered"]
        assert delivered == ["session_start"]
        assert {s["pid"] for s in t.store.sessions(t.key)} == {os.getpid()}
    # the SessionStart(compact) answer reached the model in the first request after it
    requests = [r for r in read_log(tmp_path / "requests.jsonl")
                if str(r.get("path", "")).split("?")[0].endswith("/v1/messages")]
    after = [r for r in requests if "hello again" in json.dumps(r["body"])]
    assert after and CHECKPOINT_MARKER in json.dumps(after[0]["body"])
    assert not any(CHECKPOINT_MARKER in json.dumps(r["body"]) for r in requests
                   if "hello again" not in json.dumps(r["body"])
                   and "summary of the conversation" not in json.dumps(r["body"]))
