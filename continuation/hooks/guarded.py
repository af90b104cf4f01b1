"""The recovery loop in the hooks: when it runs, and the answer that carries its words.

Channels (the hook output fields each runtime reads; see docs/runtimes.md):

| moment | Claude Code / Codex CLI | Gemini CLI | reaches |
|---|---|---|---|
| after a call (``when: change``) | PostToolUse ``hookSpecificOutput.additionalContext`` | AfterTool ``hookSpecificOutput.additionalContext`` (appended to the tool result) | the model, in its next request |
| a turn's end, sent back to work | Stop ``{"decision": "block", "reason": ...}`` | AfterAgent ``{"decision": "block", "reason": ...}`` (sent as the next request) | the model; the turn goes on |
| the agent stopped | ``{"continue": false, "stopReason": ...}`` | the same | the user |
| the prompt after a turn-end stop | UserPromptSubmit ``hookSpecificOutput.additionalContext`` | BeforeAgent, the same | the model, once |
| anything the user should see | ``systemMessage`` | ``systemMessage`` | the user |

Only a workspace with a guard file pays for any of this: the tool and stop hooks test for the
file with one ``os.path.exists`` (``handlers.guard_present``) before importing this module;
the functions here read the file itself (it may be gone since: then nothing runs).
"""
from __future__ import annotations

from continuation.session.guard_notes import USER_ONLY_CHANNEL

def _config(ctx, *, tell: bool):
    """The workspace's guard, or None; with ``tell``, a broken guard file becomes a notice
    for the user (returned as a string) instead of None."""
    from continuation.guard.config import GuardConfigError, load

    try:
        return load(ctx.root)
    except GuardConfigError as exc:
        return f"continuation guard: {exc}; the guard is off until the file is fixed." if tell else None


def _loop(ctx, config):
    from continuation.guard.loop import Loop

    return Loop(ctx.thread, ctx.rec, config)


def _failed(ctx, exc: BaseException) -> dict:
    """The loop itself failed (a git error while checkpointing, a full disk): logged, said to
    the user, and the hook goes on recording as without a guard (fail open)."""
    try:
        import os
        import time
        import traceback

        from continuation.host.paths import append_private, state_home_str

        append_private(os.path.join(state_home_str(), "logs", "hooks.log"),
                       f"{time.strftime('%Y-%m-%dT%H:%M:%S')} runtime={ctx.runtime} guard "
                       f"error={exc!r}\n{traceback.format_exc()}\n")
    except Exception:  # noqa: BLE001 - logging must not fail the hook
        pass
    return {"systemMessage": f"continuation guard: the recovery loop failed ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); nothing was done about the check this time "
                             "(see logs/hooks.log under the state home)."}


def after_call(ctx, call_id: str, turn: str | None, event_name: str) -> dict | None:
    try:
        return _after_call(ctx, call_id, turn, event_name)
    except Exception as exc:  # noqa: BLE001 - fail open: the call is recorded already
        return _failed(ctx, exc)


def _after_call(ctx, call_id: str, turn: str | None, event_name: str) -> dict | None:
    config = _config(ctx, tell=False)
    if config is None or config.when != "change":
        return None
    loop = _loop(ctx, config)
    outcome = loop.after_call(call_id, turn)
    if outcome is None:
        return None
    answer: dict = {}
    if outcome.message and outcome.action in ("report", "rewind", "halt"):
        answer["hookSpecificOutput"] = {"hookEventName": event_name,
                                        "additionalContext": outcome.message}
        loop.delivered(outcome, "tool_context")
    if outcome.stops:
        answer.update({"continue": False, "stopReason": _first_line(_shown(outcome.user_message))})
    if outcome.user_message:
        answer["systemMessage"] = _shown(outcome.user_message)
    return answer or None


def at_turn_end(ctx, turn: str | None) -> tuple[dict | None, bool]:
    """(the answer, whether the turn is settled here). It is when it goes on (the runtime
    continues it with the reason: not completed) and when the agent is stopped (the loop
    aborted it); else the caller completes it (also when the loop itself failed)."""
    try:
        return _at_turn_end(ctx, turn)
    except Exception as exc:  # noqa: BLE001 - fail open: the turn still completes
        return _failed(ctx, exc), False


def _at_turn_end(ctx, turn: str | None) -> tuple[dict | None, bool]:
    config = _config(ctx, tell=True)
    if config is None:
        return None, False
    if isinstance(config, str):
        return {"systemMessage": config}, False
    loop = _loop(ctx, config)
    outcome = loop.at_turn_end(turn)
    if outcome is None:
        return None, False
    if outcome.continues:
        loop.delivered(outcome, "turn_end_block")
        return {"decision": "block", "reason": outcome.message,
                "systemMessage": _shown(outcome.user_message)}, True
    if outcome.stops:
        loop.delivered(outcome, USER_ONLY_CHANNEL)
        return {"continue": False, "stopReason": _first_line(_shown(outcome.user_message)),
                "systemMessage": _shown(outcome.user_message)}, True
    if outcome.user_message:
        return {"systemMessage": _shown(outcome.user_message)}, False
    return None, False


def at_prompt(ctx, event_name: str) -> dict | None:
    """After the loop stopped the agent at a turn's end, the next prompt tells the model why
    (the stop's reason reached only the user, and the user's next words are likely "fix it"):
    once per stop, as added context."""
    try:
        return _at_prompt(ctx, event_name)
    except Exception as exc:  # noqa: BLE001 - fail open: the prompt is recorded already
        return _failed(ctx, exc)


def _at_prompt(ctx, event_name: str) -> dict | None:
    from continuation.session import guard_notes as notes

    missed = notes.stop_the_model_missed(ctx.thread.store, ctx.thread.key)
    if missed is None:
        return None
    said = missed.get("text") or ""
    cut = int(missed.get("chars") or 0) - len(said)
    text = (f"{_stop_intro()}\n{said}"
            + (f"\n[... {cut} more characters left out]" if cut > 0 else ""))
    ctx.rec.record(notes.GUARD_DELIVERED, notes.delivery(missed.get("action") or "halt",
                                                         notes.PROMPT_CHANNEL, text))
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def _stop_intro() -> str:
    from continuation.guard.summary import MARK

    return (f"{MARK} Your previous turn was stopped by the project's check (the user was "
            "shown this, you were not). What the recovery loop said then:")


def at_session_start(ctx) -> str | None:
    """Run the check once for a thread that never ran it; a notice for the user when the
    guard cannot run."""
    try:
        return _at_session_start(ctx)
    except Exception as exc:  # noqa: BLE001 - fail open: the session start is recorded
        return _failed(ctx, exc)["systemMessage"]


def _at_session_start(ctx) -> str | None:
    config = _config(ctx, tell=True)
    if config is None:
        return None
    if isinstance(config, str):
        return config
    outcome = _loop(ctx, config).at_start()
    return _shown(outcome.user_message) if outcome is not None else None


def is_echo(ctx, text: str) -> bool:
    """``text`` is a summary the loop itself handed back at a turn's end (Gemini CLI sends an
    AfterAgent ``block`` reason as the next prompt, and BeforeAgent sees it): not user input."""
    from continuation.guard.summary import MARK

    if not text.startswith(MARK):
        return False
    import hashlib

    from continuation.session.guard_notes import delivered_texts

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return any(d.get("sha256") == digest for d in delivered_texts(ctx.thread.store, ctx.thread.key))


def _shown(text: str | None) -> str | None:
    """What the user reads (``systemMessage``, ``stopReason``) with secret-looking tokens
    hidden (``continuation.host.secret_text``); the model's text is left as it was."""
    if not text:
        return text
    from continuation.host.secret_text import redact

    return redact(text)


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0][:300] if text else ""
