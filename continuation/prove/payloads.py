"""Hook payloads shaped like the runtimes' own.

The shapes are modelled on payloads recorded from the real Codex CLI 0.171.0 and Claude Code
2.1.332 (the fixtures beside the checkout); they are embedded here so ``continuation prove``
runs from an installed package, with no fixture folder present.

- Codex sends ``turn_id`` (no prompt id), ``model`` and ``permission_mode`` on most events, a
  tool response as a string, and orders a compaction PreCompact, PostCompact, SessionStart(compact).
- Claude Code sends ``prompt_id`` (the turn's id, shared by every event of the turn), a tool
  response as a dict, ``SessionEnd`` on exit, and orders a compaction PreCompact,
  SessionStart(compact), PostCompact (``compact_summary`` on PostCompact).
"""
from __future__ import annotations

COMPACTION_ORDER = {
    "codex": ("PreCompact", "PostCompact", "SessionStart"),
    "claude": ("PreCompact", "SessionStart", "PostCompact"),
}


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
        p.update(tool_name=tool, tool_input=tool_input, tool_use_id=call_id)
        return p

    def post_tool(self, turn: str, call_id: str, tool: str, tool_input: dict,
                  output: str = "", ok: bool = True) -> dict:
        p = self._base("PostToolUse", turn)
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

    def stop(self, turn: str, message: str) -> dict:
        p = self._base("Stop", turn)
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
