"""End-to-end: the recovery loop inside the real Gemini CLI 0.61.0, its model a loopback
Gemini-API stand-in that plays a coding agent on a generated task.

``continuation install --runtime gemini --guard 'python check.py'``; ``gemini -p``. The
stand-in writes a wrong body and its test with one ``run_shell_command`` call and answers; the
AfterAgent hook runs the check, puts the files back and answers ``{"decision": "block",
"reason": summary}``. Measured here: Gemini sends the reason as the next request of the same
prompt (BeforeAgent fires again with it, and it is not recorded as an input), the stand-in
(which reacts only to text that reaches it) writes the right body, and the run ends with the
check passing. Skipped with the reason when node/npm is missing or the CLI cannot be had.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemini_harness as gh  # noqa: E402
from bounded import run_bounded  # noqa: E402
from gemini_standin import GeminiStandIn, _handler, read_log, user_contents  # noqa: E402
from npm_tools import ToolUnavailable  # noqa: E402
from standin_server import BackgroundServer  # noqa: E402

from continuation.guard import config as guard_config  # noqa: E402
from continuation.guard.summary import MARK  # noqa: E402
from continuation.prove.tasks import CHECK, build_repo  # noqa: E402
from guard_task import PROMPT, REQ, TASK, write_command as _write_command  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]



class CodingModel(GeminiStandIn):
    """One shell call writing both files, then an answer; once a text of the recovery loop
    reached it (a user content), the same with the right body."""

    def parts(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            return [{"text": json.dumps({"reasoning": "scripted", "next_speaker": "user",
                                         "model_choice": "flash"})}]
        users = user_contents(body)
        told = max((i for i, c in enumerate(users) if MARK in json.dumps(c)), default=None)
        since = users[told:] if told is not None else users
        called = any("functionResponse" in p for c in since for p in c.get("parts") or []
                     if isinstance(p, dict))
        if not any(PROMPT in json.dumps(c) for c in users):
            return [{"text": "ok"}]
        if called:
            return [{"text": "Fixed it." if told is not None else "Implemented f_1."}]
        return [self._call(_write_command(REQ.correct if told is not None else REQ.wrong))]


class CodingServer(BackgroundServer):
    def __init__(self, log_path: Path):
        self.standin = CodingModel(Path(log_path))
        super().__init__(_handler(self.standin), name="gemini-coding-standin")


def test_gemini_sends_the_rewind_summary_back_and_the_turn_ends_fixed(tmp_path):
    try:
        gemini = gh.ensure_gemini()
    except ToolUnavailable as exc:
        pytest.skip(f"real Gemini CLI unavailable: {exc}")
    home, project, state = tmp_path / "home", tmp_path / "project", tmp_path / "state"
    (home / ".gemini").mkdir(parents=True)
    settings = gh.user_settings([sys.executable, str(gh.HERE / "recorder_hook.py")])
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE", "CONTINUATION"))}
    env.update(HOME=str(home), GEMINI_CLI_HOME=str(home), CONTINUATION_HOME=str(state),
               RECORDER_HOOK_LOG=str(tmp_path / "recorder.jsonl"), GEMINI_API_KEY="standin-key",
               NO_COLOR="1", GIT_AUTHOR_NAME="e2e", GIT_AUTHOR_EMAIL="e2e@example.invalid",
               GIT_COMMITTER_NAME="e2e", GIT_COMMITTER_EMAIL="e2e@example.invalid")
    build_repo(TASK, project, tmp_path / "remote.log", env)
    cont = gh.launcher()
    done = run_bounded([*cont, "install", "--runtime", "gemini", "--project-dir", str(project),
                        "--guard", CHECK], timeout=60, cwd=project, env=env)
    assert done.returncode == 0, done.tail()
    guard = guard_config.load(str(project))
    guard_config.write(str(project), guard_config.GuardConfig(guard.command, **{
        **{k: v for k, v in guard.to_mapping().items() if k != "command"}, "failures_before_rewind": 1}))
    log = tmp_path / "requests.jsonl"
    with CodingServer(log) as server:
        env["GOOGLE_GEMINI_BASE_URL"] = server.base_url
        run = run_bounded([str(gemini), "-m", gh.MODEL, "--yolo", "-p", PROMPT], timeout=300,
                          cwd=project, env=env)
    assert run.returncode == 0, run.tail(3000)
    events = json.loads(run_bounded([*cont, "events", "--json"], timeout=60, cwd=project, env=env).stdout)["events"]
    hooks_log = state / "logs" / "hooks.log"
    assert not hooks_log.exists(), hooks_log.read_text(encoding="utf-8")[-3000:]
    requests = [r for r in read_log(log) if r.get("method") == "POST"
                and "enerateContent" in str(r.get("path"))]
    told = [r for r in requests if MARK in json.dumps(r.get("body"))]
    assert told, "the AfterAgent block reason never reached the model"
    assert "put back automatically" in json.dumps(told[0]["body"])
    verdicts = [e["data"]["action"] for e in events if e["type"] == "guard_verdict"]
    assert verdicts == ["pass", "rewind", "pass"], verdicts
    admitted = [e["data"]["text"] for e in events if e["type"] == "input_admitted"]
    assert admitted == [PROMPT], admitted  # the loop's words sent back are no input
    completed = [e for e in events if e["type"] == "turn_completed"]
    assert len(completed) == 1
    recorded = [json.loads(line) for line in (tmp_path / "recorder.jsonl").read_text().splitlines()]
    prompts = [p.get("prompt") for p in recorded if p.get("hook_event_name") == "BeforeAgent"]
    assert len(prompts) == 2 and prompts[1].startswith(MARK)  # BeforeAgent fired again with it
    assert f"return {REQ.correct}" in (project / REQ.module_path).read_text(encoding="utf-8")
