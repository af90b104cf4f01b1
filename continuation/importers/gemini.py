"""Gemini CLI session files (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``) into ops.

The file (Gemini CLI 0.61.0, the hooks' ``transcript_path``) is JSON lines written by its
``ChatRecordingService``:

- a metadata line ``{sessionId, projectHash, startTime, lastUpdated, kind}`` each time a CLI
  process opens the session (a resume appends one more);
- message records ``{id, timestamp, type: user|gemini|info|error|warning, content, ...}``; a
  ``gemini`` message is written again under the same id when it gains ``tokens`` or
  ``toolCalls`` (each call: ``id``, ``name``, ``args``, ``status`` success/error/cancelled,
  ``result``), so records are merged by id;
- ``{"$set": {...}}`` updates: ``lastUpdated``, ``sessionId``, ``messages`` (the whole history,
  rewritten when a process opens the session and when the chat restarts after a compression,
  with new ids and the summary as a user message: never read as new messages).

Inputs: ``user`` messages with text, without the harness's ``<session_context>`` message,
function responses (they pair tool calls) and ``<hook_context>`` parts (hook answers Gemini put
into the prompt: a SessionStart answer before the text in ``gemini -p``, a BeforeAgent answer
as a part of its own). Ids agree with the hooks: the N-th prompt opens turn ``prompt-N`` and
its id is the hash of (thread, turn, 0, text); the K-th tool call of a turn is
``prompt-N:call-K``. Gemini gives one prompt one turn, so a new prompt ends the previous turn:
completed when it ended on a text reply with no call left open, else cut. At the end of the
file the last turn counts as completed on a text reply once the session is over.

Compressions: the chat restarts with a compressed history, written as a ``$set`` of
``messages`` whose user message holds the ``<state_snapshot>`` summary; each summary seen for
the first time is a boundary (trigger ``auto``: the file does not say which).

Files: ``gemini -p --resume`` first opens a throwaway chat (a metadata line and the session
context, in a file named by the current minute: the same file within that minute, else a new
stub with no messages) and then goes on in the session's file. Import the file the hooks name
(``transcript_path``); a stub imports as nothing. Messages a ``$set`` no longer lists (Gemini's rewind) are not rolled back:
the hooks do not see that rewind either.
"""
from __future__ import annotations

import json
import re

from continuation.importers.timeline import Timeline

_HOOK_CONTEXT = re.compile(r"\A\s*<hook_context>.*?</hook_context>\s*", re.S)
_EXIT_CODE = re.compile(r"Exit Code:\s*(-?\d+)")
HARNESS_PREFIXES = ("<session_context>", "<state_snapshot>")
DONE_STATUSES = {"success": "ok", "error": "error", "cancelled": "error"}


def session_hint(record: dict) -> tuple[str | None, str | None, str | None]:
    """(session id, cwd, version): the metadata line names the session only."""
    if "sessionId" in record and "type" not in record and "$set" not in record:
        return str(record["sessionId"]), None, None
    return None, None, None


def user_text(content) -> str:
    """The user-authored text of a ``user`` message ("" when it holds none)."""
    if isinstance(content, str):
        parts = [{"text": content}]
    elif isinstance(content, list):
        parts = content
    else:
        return ""
    texts = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            continue
        text = part["text"]
        while True:  # hook answers Gemini put before the prompt
            stripped = _HOOK_CONTEXT.sub("", text, count=1)
            if stripped == text:
                break
            text = stripped
        if text.strip() and not text.lstrip().startswith(HARNESS_PREFIXES):
            texts.append(text)
    return "\n".join(texts)


def _is_snapshot(content) -> bool:
    parts = content if isinstance(content, list) else [{"text": content}]
    return any(isinstance(p, dict) and isinstance(p.get("text"), str)
               and p["text"].lstrip().startswith("<state_snapshot>") for p in parts)


def _output(call: dict) -> str:
    result = call.get("result")
    try:
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


class GeminiParser:
    runtime = "gemini"

    def __init__(self, timeline: Timeline):
        self.tl = timeline
        self.report = timeline.report
        self.tl.infer_completion_at_end = True
        self.prompts = 0
        self.current: str | None = None
        self.messages: set[str] = set()  # message ids already read
        self.calls: dict[str, str] = {}  # Gemini call id -> our call id
        self.calls_in_turn: dict[str, int] = {}
        self.snapshots: set = set()  # ids of compression summaries seen

    def feed(self, record: dict) -> None:
        if "$set" in record:
            return self._set(record["$set"])
        if "sessionId" in record and "type" not in record:
            self.report.skipped_by_type["session_meta"] += 1
            return
        self._message(record)

    def _set(self, update) -> None:
        if not isinstance(update, dict):
            raise ValueError("$set is not an object")
        # ``messages`` is the history a process rebuilt (loaded on resume, or compressed: new ids
        # for old prompts, the summary as a user message): never new input. A summary not seen
        # before is a compression.
        messages = update.get("messages")
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("type") == "user" \
                    and message.get("id") not in self.snapshots and _is_snapshot(message.get("content")):
                self.snapshots.add(message.get("id"))
                self.tl.boundary("compact", "auto")
        self.report.skipped_by_type["$set"] += 1

    def _message(self, record: dict) -> None:
        kind = record.get("type")
        mid = record.get("id")
        if kind == "user":
            if mid in self.messages:
                return
            self.messages.add(mid)
            content = record.get("content")
            if isinstance(content, list) and any(isinstance(p, dict) and "functionResponse" in p
                                                 for p in content):
                self.report.skipped_by_type["user:function_response"] += 1
                return
            text = user_text(content)
            if not text:
                self.report.skipped_by_type["user:harness"] += 1
                return
            self._prompt(text)
        elif kind == "gemini":
            self.messages.add(mid)
            self._reply(record)
        elif kind in ("info", "error", "warning"):
            if mid not in self.messages:
                self.messages.add(mid)
                self.report.skipped_by_type[str(kind)] += 1
        else:
            name = str(kind) if kind is not None else "(no type)"
            self.report.skipped_by_type[name] += 1
            self.report.unknown_types[name] += 1

    def _prompt(self, text: str) -> None:
        if self.current is not None:
            t = self.tl.turns.get(self.current)
            if t is not None and t.status == "running":
                if t.last_was_text and not t.open_calls:
                    self.tl.complete_turn(t.turn_id, how="inferred_next_prompt")
                else:
                    self.tl.cut_turn(t.turn_id, "the next prompt came before it completed")
        self.prompts += 1
        self.current = f"prompt-{self.prompts}"
        self.tl.admit(text, turn_id=self.current)

    def _reply(self, record: dict) -> None:
        turn = self.current
        if turn is None:
            self.report.skipped_by_type["gemini:before_any_prompt"] += 1
            return
        calls = record.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict) or not call.get("id"):
                continue
            gid = str(call["id"])
            ours = self.calls.get(gid)
            if ours is None:
                n = self.calls_in_turn[turn] = self.calls_in_turn.get(turn, 0) + 1
                ours = self.calls[gid] = f"{turn}:call-{n}"
                args = call.get("args") if isinstance(call.get("args"), dict) else {"input": call.get("args")}
                self.tl.tool_started(ours, str(call.get("name") or ""), args, turn)
            status = DONE_STATUSES.get(str(call.get("status")))
            if status is not None:
                output = _output(call)
                match = _EXIT_CODE.search(output) if call.get("name") == "run_shell_command" else None
                code = int(match.group(1)) if match else None
                if code:
                    status = "error"
                self.tl.tool_finished(ours, status, exit_code=code, output=output[:2000])
        text = record.get("content")
        if isinstance(text, str) and text.strip() and not calls:
            self.tl.assistant_text(turn, text)

    def finish(self) -> None:
        self.tl.finish()
