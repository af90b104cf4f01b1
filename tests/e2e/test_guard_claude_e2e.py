"""End-to-end: the recovery loop inside the real Claude Code CLI (pinned), its model a loopback
stand-in that plays a coding agent on a generated task (``continuation.prove.tasks``).

``continuation install --runtime claude --guard 'python check.py'`` puts the hooks in the
sandbox's HOME and the project's guard file in the repository. The stand-in model writes a
wrong implementation and its test with Claude Code's Write tool and ends its turn. Then:

- ``when: turn`` (the default): the Stop hook runs the check, it fails, the loop puts the files
  back to the last passing checkpoint and answers ``{"decision": "block", "reason": summary}``;
  Claude Code continues the turn with the summary in the next model request, the stand-in
  (which reacts only to text that reached it) writes the right body, the turn ends, the check
  passes;
- ``when: change``: the PostToolUse hook of the test's Write reports the failure through
  ``additionalContext``; the next model request carries it, and the stand-in fixes the body.

Skipped with a reason when node/npm are missing or the pinned CLI cannot be installed.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

try:  # tests/e2e may or may not be a package
    from . import claude_tools as ct
    from .messages_standin import _make_handler, read_log, StandIn
    from .standin_server import BackgroundServer
    from .test_claude_e2e import _cli, continuation_cmd, claude_bin  # noqa: F401  (fixtures)
    from .guard_task import PROMPT, REQ, TASK, module_text
except ImportError:
    import claude_tools as ct  # type: ignore[no-redef]
    from messages_standin import _make_handler, read_log, StandIn  # type: ignore[no-redef]
    from standin_server import BackgroundServer  # type: ignore[no-redef]
    from test_claude_e2e import _cli, continuation_cmd, claude_bin  # type: ignore[no-redef]  # noqa: F401
    from guard_task import PROMPT, REQ, TASK, module_text  # type: ignore[no-redef]

from continuation.guard.summary import MARK
from continuation.prove.tasks import CHECK, build_repo, unittest_source



def _e2e(test):
    return pytest.mark.e2e(pytest.mark.slow(test))


class CodingModel(StandIn):
    """Writes the module and the test with Write, then says it is done; once a message of the
    recovery loop reached it (in any user message: a tool result's added context, a Stop
    hook's feedback), it writes the right body and the test again, after reading the module when
    the message says files were put back."""

    def __init__(self, log_path: Path, repo: Path):
        super().__init__(log_path, script={})
        self.repo = repo

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        n = self.next_id()
        messages = body.get("messages") or []
        told = max((i for i, m in enumerate(messages) if m.get("role") == "user"
                    and MARK in json.dumps(m.get("content"))), default=None)
        steps = [("module", REQ.correct if told is not None else REQ.wrong), ("test", None)]
        if told is not None and "put back automatically" in json.dumps(messages[told].get("content")):
            # as the summary says: re-read the files put back before editing them (Claude
            # Code's Write also refuses a file changed since it was last read)
            steps.insert(0, ("read", None))
        start = told if told is not None else 0
        done = sum(1 for m in messages[start:] if m.get("role") == "assistant"
                   for b in (m.get("content") or []) if isinstance(b, dict) and b.get("type") == "tool_use")
        if told is None and not any(PROMPT in json.dumps(m.get("content")) for m in messages
                                    if m.get("role") == "user"):
            return [{"type": "text", "text": f"ok ({n})"}]
        if done >= len(steps):
            return [{"type": "text", "text": "Fixed it." if told is not None else "Implemented f_1."}]
        what, body_text = steps[done]
        if what == "read":
            return [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": "Read",
                     "input": {"file_path": str(self.repo / REQ.module_path)}}]
        if what == "module":
            content = module_text(body_text)
            path = self.repo / REQ.module_path
        else:
            content, path = unittest_source(REQ), self.repo / REQ.test_path
        return [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": "Write",
                 "input": {"file_path": str(path), "content": content}}]


class CodingServer(BackgroundServer):
    def __init__(self, log_path: Path, repo: Path):
        self.standin = CodingModel(Path(log_path), repo)
        super().__init__(_make_handler(self.standin), name="coding-standin")


def _requests(log: Path) -> list[dict[str, Any]]:
    return [r for r in read_log(log) if r.get("method") == "POST"
            and str(r.get("path", "")).startswith("/v1/messages") and "count_tokens" not in str(r.get("path"))]


def _run(tmp_path: Path, claude: Path, cmd: list[str], when: str, **settings) -> dict:
    log = tmp_path / "requests.jsonl"
    state = tmp_path / "state"
    repo = tmp_path / "repo"
    with CodingServer(log, repo) as server:
        box = ct.ClaudeSandbox(tmp_path, claude, server.base_url, extra_env={"CONTINUATION_HOME": str(state)})
        build_repo(TASK, repo, tmp_path / "remote.log", box.env)
        box.write_settings(record=True)
        _cli(cmd, box, "install", "--runtime", "claude", "--scope", "user", "--project-dir", str(repo),
             "--guard", CHECK, "--guard-when", when)
        if settings:  # what install has no flag for
            from continuation.guard import config

            guard = config.load(str(repo))
            config.write(str(repo), config.GuardConfig(guard.command, **{
                **{k: v for k, v in guard.to_mapping().items() if k != "command"}, **settings}))
        hooks = json.loads(box.settings_path.read_text(encoding="utf-8"))["hooks"]
        stop = [h for g in hooks["Stop"] for h in g["hooks"] if "hook --runtime claude" in h["command"]]
        assert stop and stop[0]["timeout"] >= 35, "install --guard gives the Stop hook time for the check"
        done = box.run(PROMPT, timeout=240)
        assert done.returncode == 0, f"claude -p failed: {done.stdout[-2000:]} {done.stderr[-2000:]}"
        result = done.json()
        assert result.get("is_error") is False, result
        events = json.loads(_cli(cmd, box, "events", "--thread", result["session_id"], "--json").stdout)["events"]
        inputs = json.loads(_cli(cmd, box, "inputs", "--thread", result["session_id"], "--json").stdout)["inputs"]
        hooks_log = state / "logs" / "hooks.log"
        assert not hooks_log.exists(), hooks_log.read_text(encoding="utf-8")[-4000:]
        return {"requests": _requests(log), "events": events, "inputs": inputs, "repo": repo,
                "payloads": box.hook_payloads(), "env": box.env}


def _check_passes(run: dict) -> bool:
    done = ct.run_bounded(["python", "check.py"], cwd=run["repo"], env=run["env"], timeout=120)
    return done.returncode == 0


@_e2e
def test_claude_code_continues_the_turn_with_the_rewind_summary(tmp_path, claude_bin, continuation_cmd):
    run = _run(tmp_path, claude_bin, continuation_cmd, "turn", failures_before_rewind=1)
    told = [r for r in run["requests"] if MARK in json.dumps(r["body"].get("messages"))]
    assert told, "the Stop hook's block reason never reached the model"
    first = json.dumps(told[0]["body"]["messages"][-1])
    assert "put back automatically" in first and "AssertionError" in first and REQ.module_path in first
    verdicts = [e["data"]["action"] for e in run["events"] if e["type"] == "guard_verdict"]
    assert verdicts == ["pass", "rewind", "pass"], verdicts
    restored = [e["data"] for e in run["events"] if e["type"] == "workspace_restored"]
    assert len(restored) == 1 and restored[0]["by"] == "guard"
    assert REQ.test_path in restored[0]["deleted"]  # Claude's Write created it: taken back
    delivered = [e["data"]["via"] for e in run["events"] if e["type"] == "guard_delivered"]
    assert delivered == ["turn_end_block"]
    stops = [p for p in run["payloads"] if p.get("hook_event_name") == "Stop"]
    assert [p.get("stop_hook_active") for p in stops] == [False, True]
    assert [(i["state"], i["text"]) for i in run["inputs"]] == [("handled", PROMPT)]
    assert f"return {REQ.correct}" in (run["repo"] / REQ.module_path).read_text(encoding="utf-8")
    assert _check_passes(run)


@_e2e
def test_claude_code_hands_the_post_tool_report_to_the_model(tmp_path, claude_bin, continuation_cmd):
    run = _run(tmp_path, claude_bin, continuation_cmd, "change")
    told = [r for r in run["requests"] if MARK in json.dumps(r["body"].get("messages"))]
    assert told, "PostToolUse additionalContext never reached the model"
    text = json.dumps(told[0]["body"]["messages"][-1])
    assert "after your last change" in text and "AssertionError" in text
    verdicts = [e["data"]["action"] for e in run["events"] if e["type"] == "guard_verdict"]
    assert verdicts[:3] == ["pass", "pass", "report"] and verdicts[-1] == "pass", verdicts
    assert "tool_context" in [e["data"]["via"] for e in run["events"] if e["type"] == "guard_delivered"]
    assert [i["state"] for i in run["inputs"]] == ["handled"]
    assert _check_passes(run)
