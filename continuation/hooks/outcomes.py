"""Outcomes of tool calls the hooks never saw finish, read back from the runtime's transcript.

A call can start (PreToolUse) and get no PostToolUse although the runtime knows its result:
Claude Code 2.1.332 refuses a call denied by a permission rule after PreToolUse and fires
neither PostToolUse nor PermissionDenied for it. At Stop (not a hot-path hook) the transcript's
tail holds the result the model was given: a Claude ``tool_result`` block (``is_error``) or a
Codex ``function_call_output`` ("Process exited with code N"). Only calls still open are
looked up; what is not found stays unknown (reconciliation, never an assumption). Claude Code's
own placeholder for a result it never recorded (``[Tool call interrupted ... outcome is
unknown ...]``, see :mod:`continuation.session.claude_synthetic`) is not an outcome either.
"""
from __future__ import annotations

import json
import re

from continuation.session.claude_synthetic import unknown_outcome_placeholder

TAIL_BYTES = 4 * 1024 * 1024
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


#: what a line must hold to matter: a call's output (Codex's ``function_call_output`` /
#: ``custom_tool_call_output``, Claude Code's ``tool_result``) or a Codex turn marker; the
#: record kinds rather than the wanted ids, so one search covers any number of calls (a Codex
#: turn's calls get no exit code from its hooks: a long turn asks for dozens at once)
RECORD_KINDS = re.compile(rb'"(?:function_call_output|custom_tool_call_output|tool_result|'
                          rb'turn_context|task_started)"')


def _tail_records(path: str):
    """The records of the transcript's tail that :data:`RECORD_KINDS` can be in, found by
    searching the tail rather than parsing every line (a 4.6 MB Codex rollout: ~22 ms to parse
    every line, ~8 ms this way; on a compaction's path whenever a Codex turn runs)."""
    from continuation.host.userfiles import read_tail

    try:
        data, start = read_tail(path, TAIL_BYTES)
    except OSError:  # gone, unreadable, a FIFO / device, or a name no file can have
        return
    for line in _lines_of_kinds(data, partial_first=start > 0):
        try:
            record = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue  # a torn last line while the runtime writes
        if isinstance(record, dict):
            yield record


def _lines_of_kinds(data: bytes, *, partial_first: bool) -> list[bytes]:
    """The lines of ``data`` holding one of :data:`RECORD_KINDS`, in order, without the first
    when it is a partial line (the tail began inside it)."""
    lines, after = [], 0
    for match in RECORD_KINDS.finditer(data):
        if match.start() < after:
            continue  # another kind in a line already taken
        begin = data.rfind(b"\n", 0, match.start()) + 1
        end = data.find(b"\n", match.end())
        after = len(data) if end == -1 else end
        if begin or not partial_first:
            lines.append(data[begin:after])
    return lines


def _wanted(calls) -> dict[str, list[tuple[str, str | None, bool]]]:
    """runtime id -> [(record key, turn id, strict)]. A call is a runtime id, or a tuple
    (record key, runtime id, turn id): a reused id (key != runtime id) matches only an output
    inside its own turn (``strict``), never the earlier turn's output of the same id."""
    by_id: dict[str, list] = {}
    for call in calls:
        key, raw, turn = (call, call, None) if isinstance(call, str) else call
        by_id.setdefault(raw, []).append((key, turn, key != raw))
    return by_id


def _matches(turn: str | None, strict: bool, current: str | None) -> bool:
    if turn is None or (current is None and not strict):
        return True
    return current == turn


def find_outcomes(path: str | None, calls) -> dict[str, dict]:
    """record key -> {status, exit_code, output} for the calls the transcript answers.

    ``calls``: runtime ids, or (record key, runtime id, turn id) tuples. Codex rollouts mark
    turns (``task_started`` / ``turn_context`` with ``turn_id``): an output is taken for a call
    only within the call's turn when the rollout says which turn it is in (a provider that
    numbers calls per process reuses ``call_0`` in a later turn)."""
    wanted = _wanted(calls)
    if not path or not isinstance(path, str) or not wanted:
        return {}
    found: dict[str, dict] = {}
    current: str | None = None

    def take(raw, outcome):
        for key, turn, strict in wanted.get(raw, ()):
            if _matches(turn, strict, current):
                found[key] = outcome

    for record in _tail_records(path):
        message = record.get("message")
        payload = record.get("payload")
        if isinstance(payload, dict) and isinstance(payload.get("turn_id"), str) and (
                record.get("type") == "turn_context" or payload.get("type") == "task_started"):
            current = payload["turn_id"]
        if record.get("type") == "user" and isinstance(message, dict) \
                and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result" \
                        and block.get("tool_use_id") in wanted \
                        and not unknown_outcome_placeholder(_text(block.get("content"))):
                    take(block["tool_use_id"], {
                        "status": "error" if block.get("is_error") else "ok",
                        "exit_code": None, "output": _text(block.get("content"))})
        if record.get("type") == "response_item" and isinstance(payload, dict) \
                and payload.get("type") in ("function_call_output", "custom_tool_call_output") \
                and payload.get("call_id") in wanted:
            output = payload.get("output")
            output = output if isinstance(output, str) else json.dumps(output)
            match = _EXIT.search(output)
            code = int(match.group(1)) if match else None
            take(payload["call_id"], {"status": "error" if code else "ok",
                                      "exit_code": code, "output": output})
    return found
