"""Hook payloads shaped like the runtimes' own.

The shapes are modelled on payloads recorded from the real Codex CLI 0.171.0 and Claude Code
2.1.332 (the fixtures beside the checkout); they are embedded here so ``continuation prove``
runs from an installed package, with no fixture folder present.

- Codex sends ``turn_id`` (no prompt id), ``model`` and ``permission_mode`` on most events, a
  tool response as a string, and orders a compaction PreCompact, PostCompact, SessionStart(compact).
- Claude Code sends ``prompt_id`` (the turn's id, shared by every event of the turn), a tool
  response as a dict, ``SessionEnd`` on exit, and orders a compaction PreCompact,
  SessionStart(compact), PostCompact (``compact_summary`` on PostCompact).
- Gemini CLI (0.61.0, recorded by tests/e2e/test_gemini_e2e.py) has its own event names
  (BeforeAgent, BeforeTool, AfterTool, AfterAgent, PreCompress), sends no prompt, turn or call
  id, a ``timestamp`` on every event, a tool response as ``{llmContent, returnDisplay, error?}``,
  and its shell tool is ``run_shell_command``. A compression is PreCompress alone (no
  SessionStart after it), and PreCompress(auto) also fires before every model request that does
  not compress: the CLI decides from the prompt token count its session file recorded.
"""
from __future__ import annotations

import json
import time

COMPACTION_ORDER = {
    "codex": ("PreCompact", "PostCompact", "SessionStart"),
    "claude": ("PreCompact", "SessionStart", "PostCompact"),
    "gemini": ("PreCompact",),
}
GEMINI_EVENTS = {"UserPromptSubmit": "BeforeAgent", "PreToolUse": "BeforeTool",
                 "PostToolUse": "AfterTool", "Stop": "AfterAgent", "PreCompact": "PreCompress"}
GEMINI_TOOLS = {"Bash": "run_shell_command"}
GEMINI_WINDOW = 1_048_576


class PayloadShape:
    """Builds one runtime's payloads for one session."""

    def __init__(self, runtime: str, session_id: str, cwd: str, transcript_path: str,
                 model: str = "mock-model"):
        if runtime not in COMPACTION_ORDER:
            raise ValueError(f"unknown runtime {runtime!r}")
        self.runtime = runtime
        self.session_id = session_id
        self.cwd = cwd
        self.transcript_path = transcript_path
        self.model = model

    def _base(self, event: str, turn: str | None) -> dict:
        p = {"session_id": self.session_id, "transcript_path": self.transcript_path,
             "cwd": self.cwd, "hook_event_name": event}
        if self.runtime == "gemini":  # no ids; its own event names; a timestamp
            p["hook_event_name"] = GEMINI_EVENTS.get(event, event)
            p["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            return p
        if turn:
            p["turn_id" if self.runtime == "codex" else "prompt_id"] = turn
        if self.runtime == "codex":
            p["model"] = self.model
            if event not in ("PreCompact", "PostCompact"):
                p["permission_mode"] = "bypassPermissions"
        elif event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
            p["permission_mode"] = "default"
        return p

    def session_start(self, source: str) -> dict:
        p = self._base("SessionStart", None)
        p["source"] = source
        if self.runtime == "claude" and source == "compact":
            p["model"] = self.model
        return p

    def user_prompt(self, turn: str, text: str) -> dict:
        p = self._base("UserPromptSubmit", turn)
        p["prompt"] = text
        return p

    def pre_tool(self, turn: str, call_id: str, tool: str, tool_input: dict) -> dict:
        p = self._base("PreToolUse", turn)
        if self.runtime == "gemini":
            p.update(tool_name=GEMINI_TOOLS.get(tool, tool), tool_input=tool_input)
            return p
        p.update(tool_name=tool, tool_input=tool_input, tool_use_id=call_id)
        return p

    def post_tool(self, turn: str, call_id: str, tool: str, tool_input: dict,
                  output: str = "", ok: bool = True) -> dict:
        p = self._base("PostToolUse", turn)
        if self.runtime == "gemini":
            response = {"llmContent": f"Output: {output}" + ("" if ok else "\nExit Code: 1"),
                        "returnDisplay": output}
            p.update(tool_name=GEMINI_TOOLS.get(tool, tool), tool_input=tool_input, tool_response=response)
            return p
        if self.runtime == "codex":
            response: object = output
        else:
            response = {"stdout": output, "stderr": "" if ok else "failed",
                        "interrupted": False, "isImage": False, "noOutputExpected": False}
            if not ok:
                response["exit_code"] = 1
        p.update(tool_name=tool, tool_input=tool_input, tool_response=response,
                 tool_use_id=call_id)
        return p

    def stop(self, turn: str, message: str, prompt: str = "") -> dict:
        p = self._base("Stop", turn)
        if self.runtime == "gemini":
            p.update(prompt=prompt, prompt_response=message, stop_hook_active=False)
            return p
        p.update(stop_hook_active=False, last_assistant_message=message)
        if self.runtime == "claude":
            p.update(effort={"level": "medium"}, background_tasks=[], session_crons=[])
        return p

    def pre_compact(self, turn: str | None, trigger: str) -> dict:
        p = self._base("PreCompact", turn)
        p["trigger"] = trigger
        if self.runtime == "claude":
            p["custom_instructions"] = None
        return p

    def post_compact(self, turn: str | None, trigger: str, summary: str) -> dict:
        p = self._base("PostCompact", turn)
        p["trigger"] = trigger
        if self.runtime == "claude":
            p["compact_summary"] = summary
        return p

    def interrupt(self, turn: str) -> dict:
        """Codex 0.171.0 ``Interrupt`` (Ctrl-C): the turn is cut, no PostToolUse or Stop."""
        return self._base("Interrupt", turn)

    def session_end(self, reason: str) -> dict:
        p = self._base("SessionEnd", None)
        p["reason"] = reason
        return p

    def record_usage(self, prompt_tokens: int) -> None:
        """Gemini CLI writes each answer's prompt token count to its session file (the
        ``transcript_path``); its compression decision reads the newest one."""
        with open(self.transcript_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": f"m{time.time_ns()}", "type": "gemini", "content": "",
                                 "model": "gemini-2.5-flash",
                                 "tokens": {"input": prompt_tokens, "output": 5}}) + "\n")
