"""Outcomes of tool calls the hooks never saw finish, read back from the runtime's transcript.

A call can start (PreToolUse) and get no PostToolUse although the runtime knows its result:
Claude Code 2.1.332 refuses a call denied by a permission rule after PreToolUse and fires
neither PostToolUse nor PermissionDenied for it. At Stop (not a hot-path hook) the transcript's
tail holds the result the model was given: a Claude ``tool_result`` block (``is_error``) or a
Codex ``function_call_output`` ("Process exited with code N"). Only calls still open are
looked up; what is not found stays unknown (reconciliation, never an assumption). Claude Code's
own placeholder for a result it never recorded (``[Tool call interrupted ... outcome is
unknown ...]``, see :mod:`continuation.claude_synthetic`) is not an outcome either.
"""
from __future__ import annotations

import json
import re

from ..claude_synthetic import unknown_outcome_placeholder

TAIL_BYTES = 4 * 1024 * 1024
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _tail_records(path: str):
    from ..userfiles import read_tail

    try:
        data, start = read_tail(path, TAIL_BYTES)
    except OSError:  # gone, unreadable, or a FIFO / device named as the transcript
        return
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # a partial first line
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            continue  # a torn last line while the runtime writes
        if isinstance(record, dict):
            yield record


def find_outcomes(path: str | None, call_ids) -> dict[str, dict]:
    """call id -> {status, exit_code, output} for the open calls the transcript answers."""
    wanted = set(call_ids)
    if not path or not isinstance(path, str) or not wanted:
        return {}
    found: dict[str, dict] = {}
    for record in _tail_records(path):
        message = record.get("message")
        if record.get("type") == "user" and isinstance(message, dict) \
                and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result" \
                        and block.get("tool_use_id") in wanted \
                        and not unknown_outcome_placeholder(_text(block.get("content"))):
                    found[block["tool_use_id"]] = {
                        "status": "error" if block.get("is_error") else "ok",
                        "exit_code": None, "output": _text(block.get("content"))}
        payload = record.get("payload")
        if record.get("type") == "response_item" and isinstance(payload, dict) \
                and payload.get("type") in ("function_call_output", "custom_tool_call_output") \
                and payload.get("call_id") in wanted:
            output = payload.get("output")
            output = output if isinstance(output, str) else json.dumps(output)
            match = _EXIT.search(output)
            code = int(match.group(1)) if match else None
            found[payload["call_id"]] = {"status": "error" if code else "ok",
                                         "exit_code": code, "output": output}
    return found
