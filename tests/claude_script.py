"""A scripted Claude Code session: writes the transcript records and the hook payloads the real
runtime would produce for the same steps, so a test can compare an import with the hooks.

Record shapes follow the real 2.1.332 transcript (``../shared/fixtures/claude-real``) and the
older formats the importer reads (2.1.39: ``queue-operation`` ``remove`` without content); the
texts of Claude Code's own placeholders are the ones the 2.1.332 binary writes.
"""
from __future__ import annotations

import json
from pathlib import Path

PLACEHOLDER = ("[Tool call interrupted: the session ended before this call's result was recorded,"
               " so its outcome is unknown. Check whether it took effect before relying on it or"
               " running it again.]")


class ClaudeScript:
    def __init__(self, session: str, path: Path, cwd: str = "/tmp/claude-script"):
        self.sid, self.path, self.cwd = session, Path(path), cwd
        self.records: list[dict] = []
        self.payloads: list[dict] = []
        self.prompt_id: str | None = None
        self.open_calls: list[str] = []
        self.last_uuid: str | None = None
        self.n = 0

    # -- plumbing ------------------------------------------------------------------------------
    def _uuid(self) -> str:
        self.n += 1
        return f"{self.sid}-r{self.n}"

    def rec(self, record: dict) -> dict:
        record.setdefault("sessionId", self.sid)
        if record.get("type") in ("user", "assistant", "system"):
            uuid = self._uuid()
            record.setdefault("uuid", uuid)
            record.setdefault("parentUuid", self.last_uuid)
            record.setdefault("cwd", self.cwd)
            record.setdefault("version", "2.1.39")
            self.last_uuid = record["uuid"]
        self.records.append(record)
        return record

    def hook(self, event: str, **fields) -> None:
        payload = {"session_id": self.sid, "transcript_path": str(self.path), "cwd": self.cwd,
                   "hook_event_name": event, **fields}
        if self.prompt_id and "prompt_id" not in fields and event != "SessionStart":
            payload["prompt_id"] = self.prompt_id
        self.payloads.append(payload)

    def write(self, upto: int | None = None) -> Path:
        recs = self.records if upto is None else self.records[:upto]
        self.path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
        return self.path

    # -- steps ---------------------------------------------------------------------------------
    def prompt(self, pid: str, text: str, *, typed_while_busy: bool = False) -> "ClaudeScript":
        if not typed_while_busy:
            self.rec({"type": "queue-operation", "operation": "enqueue", "content": text})
        self.rec({"type": "queue-operation", "operation": "dequeue"})
        self.prompt_id = pid
        self.rec({"type": "user", "promptId": pid, "message": {"role": "user", "content": text}})
        self.hook("UserPromptSubmit", prompt=text, prompt_id=pid)
        return self

    def tool(self, call_id: str, command: str, result: str | None = "ok") -> "ClaudeScript":
        self.rec({"type": "assistant", "promptId": self.prompt_id, "message": {
            "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": call_id, "name": "Bash",
                         "input": {"command": command}}]}})
        self.hook("PreToolUse", tool_name="Bash", tool_input={"command": command},
                  tool_use_id=call_id)
        if result is None:
            self.open_calls.append(call_id)
            return self
        self.rec({"type": "user", "promptId": self.prompt_id, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": result}]}})
        self.hook("PostToolUse", tool_name="Bash", tool_input={"command": command},
                  tool_use_id=call_id, tool_response={"stdout": result, "stderr": "",
                                                      "interrupted": False})
        return self

    def reply(self, text: str, *, end: bool = True) -> "ClaudeScript":
        """``end=False``: the process died mid-reply (the text block written with
        ``stop_reason: null``, as before a tool_use; no turn end, no Stop hook)."""
        self.rec({"type": "assistant", "promptId": self.prompt_id, "message": {
            "role": "assistant", "model": "claude-x", "stop_reason": "end_turn" if end else None,
            "content": [{"type": "text", "text": text}]}})
        if end:
            self.rec({"type": "system", "subtype": "stop_hook_summary"})
            self.hook("Stop", last_assistant_message=text)
        return self

    def interrupt(self) -> "ClaudeScript":
        """Esc: Claude Code writes the marker; no hook fires."""
        self.rec({"type": "user", "promptId": self.prompt_id, "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}})
        return self

    def enqueue(self, text: str) -> "ClaudeScript":
        self.rec({"type": "queue-operation", "operation": "enqueue", "content": text})
        return self

    def remove(self, content: str | None = None) -> "ClaudeScript":
        rec = {"type": "queue-operation", "operation": "remove"}
        if content is not None:
            rec["content"] = content
        self.rec(rec)
        return self

    def meta(self, text: str) -> "ClaudeScript":
        self.rec({"type": "user", "isMeta": True, "promptId": self.prompt_id,
                  "message": {"role": "user", "content": text}})
        return self

    def resume(self) -> "ClaudeScript":
        """The process was killed (no hook); ``claude --resume``: SessionStart, then Claude Code's
        placeholder result for every orphaned call and its synthetic "No response requested."."""
        self.hook("SessionStart", source="resume")
        for call_id in self.open_calls:
            self.rec({"type": "user", "promptId": self.prompt_id, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": PLACEHOLDER,
                 "is_error": True}]}})
            self.rec({"type": "assistant", "message": {
                "role": "assistant", "model": "<synthetic>", "stop_reason": "stop_sequence",
                "content": [{"type": "text", "text": "No response requested."}]}})
        self.open_calls = []
        return self

    def task_notification(self, pid: str, task: str, *, with_origin: bool = True) -> "ClaudeScript":
        """A background task finished while idle: Claude Code sends the notice as a user row and
        the model answers it in a turn of its own (no UserPromptSubmit)."""
        text = (f"<task-notification>\n<task-id>{task}</task-id>\n<status>completed</status>\n"
                f"<summary>Background command \"{task}\" completed (exit code 0)</summary>\n"
                "</task-notification>")
        self.enqueue(text)
        self.rec({"type": "queue-operation", "operation": "dequeue"})
        self.prompt_id = pid
        rec = {"type": "user", "promptId": pid, "message": {"role": "user", "content": text}}
        if with_origin:
            rec.update({"origin": {"kind": "task-notification"}, "promptSource": "system"})
        self.rec(rec)
        return self
