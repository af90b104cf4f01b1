"""Gemini CLI hooks, translated to the shared payload vocabulary :mod:`.handlers` reads.

Gemini CLI 0.61.0 sends (``HookEventHandler.createBaseInput``) ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` and ``timestamp``, plus per event:

| Gemini | fields | recorded as |
|---|---|---|
| SessionStart | ``source``: startup / resume / clear | SessionStart |
| BeforeAgent | ``prompt`` | UserPromptSubmit |
| BeforeTool | ``tool_name``, ``tool_input`` | PreToolUse |
| AfterTool | ``tool_name``, ``tool_input``, ``tool_response`` {llmContent, returnDisplay, error} | PostToolUse |
| AfterAgent | ``prompt``, ``prompt_response``, ``stop_hook_active`` | Stop |
| PreCompress | ``trigger``: manual / auto | PreCompact (see :mod:`.gemini_compress`) |
| SessionEnd | ``reason``: exit / clear / logout / prompt_input_exit / other | SessionEnd |

Ids: Gemini gives a hook no prompt id, turn id or tool-call id, only ``session_id``. BeforeAgent
fires once per prompt (``hasFiredBeforeAgent`` per prompt id), so each one opens turn
``prompt-N`` (N-th turn of the thread) and its input id is the hash of (thread, turn, 0, text),
as for Codex. A tool call is ``prompt-N:call-K`` (K-th BeforeTool of the turn); AfterTool closes
the oldest open call of the turn with the same tool name and input.

Text: in ``gemini -p`` the SessionStart answer is put before the prompt as
``<hook_context>...</hook_context>``, and BeforeAgent then sends it as part of ``prompt``; such
leading blocks are not user input and are removed.

Delivery after a compression: Gemini fires no SessionStart when it compresses, and PreCompress
runs inside the turn, after BeforeAgent. The first hook after the boundary whose
``additionalContext`` Gemini adds to what the model reads AND keeps in the history carries
the assembled context: AfterTool (appended to the tool result of the running turn; measured:
it is in the very next model request), else the next BeforeAgent (added to the prompt), else
SessionStart(resume). Gemini escapes ``<`` and ``>`` in additionalContext as ``&lt;``/``&gt;``.
"""
from __future__ import annotations

import json
import os
import re

_LEADING_HOOK_CONTEXT = re.compile(r"\A(?:\s*<hook_context>.*?</hook_context>)+\s*", re.S)
_EXIT_CODE = re.compile(r"Exit Code:\s*(-?\d+)")

EVENTS = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
    "PreCompress": "PreCompact",
    "SessionEnd": "SessionEnd",
}


def user_text(prompt) -> str:
    """The prompt without the hook context Gemini put in front of it."""
    if not isinstance(prompt, str):
        return "" if prompt is None else str(prompt)
    return _LEADING_HOOK_CONTEXT.sub("", prompt, count=1)


def _same_call(record: dict, payload: dict) -> bool:
    return record.get("tool") == str(payload.get("tool_name") or "") and \
        record.get("args") == _args(payload)


def _args(payload: dict) -> dict:
    args = payload.get("tool_input")
    return args if isinstance(args, dict) else {"input": args}


def _tool_response(payload: dict) -> dict:
    """Gemini's ``tool_response`` in the shape the shared ``PostToolUse`` payload has."""
    response = payload.get("tool_response")
    if not isinstance(response, dict):
        return {"output": response}
    out = dict(response)
    if response.get("error"):
        out["is_error"] = True
    content = response.get("llmContent")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    match = _EXIT_CODE.search(text or "")
    if match and payload.get("tool_name") == "run_shell_command":
        out["exit_code"] = int(match.group(1))
    return out


def translate(payload: dict, rec) -> dict | None:
    """The payload in the shared vocabulary (read by ``rec``, the thread's
    :class:`~continuation.session.recording.Recorder`), or ``None`` for an event we do not
    record."""
    event = str(payload.get("hook_event_name") or "")
    shared = EVENTS.get(event)
    if shared is None:
        return None
    out = dict(payload, hook_event_name=shared)
    if event == "BeforeAgent":
        out["prompt"] = user_text(payload.get("prompt"))
        out["turn_id"] = f"prompt-{rec.turn_count() + 1}"
    elif event in ("BeforeTool", "AfterTool", "AfterAgent"):
        turn = rec.newest_running_turn()
        if turn is None:
            return None if event != "AfterAgent" else out  # a tool outside any turn we saw
        out["turn_id"] = turn
        calls = rec.calls_of_turn(turn)
        if event == "BeforeTool":
            out["call_id"] = f"{turn}:call-{len(calls) + 1}"
        elif event == "AfterTool":
            open_same = [c for c in calls if c[2].get("finished_seq") is None and _same_call(c[2], payload)]
            if not open_same:
                return None  # its BeforeTool never reached us: nothing to close
            out["call_id"] = open_same[0][0]
            out["tool_response"] = _tool_response(payload)
        else:
            message = payload.get("prompt_response")
            out["last_assistant_message"] = message if isinstance(message, str) else None
    return out


def _numbering_lock(engine, thread_key: str, event: str):
    """Gemini runs parallelizable tool calls at once, and their BeforeTool / AfterTool hooks
    with them: the call number (count, then record) and the pairing (find the open call, then
    close it) must not interleave between two hook processes of one thread."""
    if event not in ("BeforeAgent", "BeforeTool", "AfterTool"):
        import contextlib

        return contextlib.nullcontext()
    from filelock import FileLock

    from continuation.host.paths import ensure_private_dir

    folder = ensure_private_dir(os.path.join(engine._home, "locks"))
    return FileLock(os.path.join(folder, f"gemini-{thread_key}.lock"), timeout=60, mode=0o600)


def handle(payload: dict) -> dict | None:
    """Record one Gemini hook payload; the answer Gemini reads (``hookSpecificOutput``)."""
    from continuation.session.engine import Engine
    from continuation.hooks import handlers

    event = str(payload.get("hook_event_name") or "")
    if event not in EVENTS:
        return None
    with Engine() as engine:
        ctx = handlers.HookContext("gemini", payload, engine)
        if event == "PreCompress":
            from continuation.hooks.gemini_compress import will_compress

            if not will_compress(payload):
                return None
        with _numbering_lock(engine, ctx.thread.key, event):
            shared = translate(payload, ctx.rec)
            if shared is None:
                return None
            ctx.payload, ctx.event = shared, shared["hook_event_name"]
            answer = handlers.HANDLERS[ctx.event](ctx)
        if event == "AfterTool" and ctx.thread.row["needs_context"]:
            from continuation.boundary import crossing as boundary

            context = boundary.context_answer(ctx.thread, "gemini", event, via="after_tool")
            answer = handlers.joined_answers(context, answer)
    if answer and isinstance(answer.get("hookSpecificOutput"), dict):
        answer["hookSpecificOutput"]["hookEventName"] = event
    return answer
