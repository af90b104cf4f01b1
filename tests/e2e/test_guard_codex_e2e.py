"""End-to-end: the recovery loop inside the real Codex CLI 0.171.0, its model a loopback
Responses-API stand-in that plays a coding agent on a generated task.

``continuation install --runtime codex --guard 'python check.py'``; ``codex exec`` with the
hooks (``--dangerously-bypass-hook-trust``). The stand-in writes a wrong body and its test with
one shell call and ends its turn; the Stop hook runs the check, puts the files back and answers
``{"decision": "block", "reason": summary}``. What Codex does with it is measured here: the
summary reaches the model in the next request of the same turn, the stand-in (which reacts
only to text that reaches it) writes the right body, the turn ends with the check passing.
Skipped with the reason when node/npm is missing or the pinned CLI cannot be had.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codex_harness as ch  # noqa: E402
from responses_standin import ResponsesStandin, ScriptedModel, _assistant_message, _function_call, tool_names  # noqa: E402

from continuation.guard import config as guard_config  # noqa: E402
from continuation.guard.summary import MARK  # noqa: E402
from continuation.prove.tasks import CHECK, build_repo  # noqa: E402
from guard_task import PROMPT, REQ, TASK, write_command as _write_command  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]



class CodingModel(ScriptedModel):
    """One shell call writing both files, then "done"; after a message of the recovery loop
    reached it, the same with the right body."""

    def reply(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        n = self.next_id()
        items = body.get("input") or []
        told = max((i for i, item in enumerate(items) if MARK in json.dumps(item)
                    and item.get("type") == "message"), default=None)
        start = told if told is not None else 0
        called = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items[start:])
        if not any(PROMPT in json.dumps(i) for i in items):
            return "turn", [_assistant_message(f"msg_{n}", "ok")]
        if called:
            return "turn", [_assistant_message(f"msg_{n}", "Fixed it." if told is not None else "Implemented f_1.")]
        body_text = REQ.correct if told is not None else REQ.wrong
        return "turn", [_function_call(n, _write_command(body_text), tool_names(body))]


def test_codex_continues_the_turn_with_the_rewind_summary(tmp_path):
    codex = ch.codex_or_skip()
    sandbox = ch.CodexSandbox(tmp_path, codex, ch.default_launcher())
    repo = sandbox.project
    # the sandbox made an empty repository: the task's files committed on top
    build_repo(TASK, repo, tmp_path / "remote.log", sandbox.env())
    with ResponsesStandin(sandbox.request_log, CodingModel()) as standin:
        sandbox.write_config(standin.base_url)
        done = sandbox.continuation("install", "--runtime", "codex", "--scope", "user",
                                    "--project-dir", str(repo), "--guard", CHECK)
        assert done.returncode == 0, done.tail()
        guard = guard_config.load(str(repo))
        guard_config.write(str(repo), guard_config.GuardConfig(guard.command, **{
            **{k: v for k, v in guard.to_mapping().items() if k != "command"}, "failures_before_rewind": 1}))
        run = sandbox.run_codex("exec", sandbox.exec_args(PROMPT), timeout=300)
        requests = [r for r in standin.requests() if r.get("method") == "POST"]
    assert run.finished.returncode == 0, run.finished.tail(3000)
    events = json.loads(sandbox.continuation("events", "--json").stdout)["events"]
    inputs = json.loads(sandbox.continuation("inputs", "--json").stdout)["inputs"]
    log = sandbox.state / "logs" / "hooks.log"
    assert not log.exists(), log.read_text(encoding="utf-8")[-3000:]
    told = [r for r in requests if MARK in json.dumps((r.get("body") or {}).get("input"))]
    assert told, f"the Stop hook's block reason never reached the model; hooks: {run.hook_events}"
    text = json.dumps(told[0]["body"]["input"])
    assert "put back automatically" in text and "AssertionError" in text
    verdicts = [e["data"]["action"] for e in events if e["type"] == "guard_verdict"]
    assert verdicts == ["pass", "rewind", "pass"], _diagnosis(verdicts, events, requests, run)
    restored = [e["data"] for e in events if e["type"] == "workspace_restored"]
    assert len(restored) == 1 and restored[0]["by"] == "guard" and REQ.module_path in restored[0]["restored"]
    assert [i["state"] for i in inputs] == ["handled"] and inputs[0]["text"] == PROMPT
    assert f"return {REQ.correct}" in (repo / REQ.module_path).read_text(encoding="utf-8")


def _diagnosis(verdicts, events, requests, run) -> str:
    """What the loop decided, the log, and what each request to the model carried (a failure
    here depends on what Codex sent when)."""
    log = [(e["seq"], e["type"], e["data"].get("action") or e["data"].get("call_id")
            or e["data"].get("exit_code")) for e in events]
    sent = [[(i.get("type"), i.get("role"), MARK in json.dumps(i)) for i in
             (r.get("body") or {}).get("input") or []] for r in requests]
    return (f"verdicts {verdicts}\nevents {log}\nrequests (type, role, carries the loop's "
            f"message) {sent}\nhooks {run.hook_events}")
