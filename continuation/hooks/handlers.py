"""The Claude Code and Codex hook dialect: read a payload, tell the recording core, shape the answer.

The two runtimes send nearly the same payloads (see ``../shared/fixtures``); the differences:
- input ids: Claude Code sends ``prompt_id`` (2.1.196+); Codex sends only ``turn_id``, and a turn
  can hold several inputs (steering), so the id is a hash of (thread, turn, ordinal, text);
- turn ids: Codex ``turn_id``; Claude Code ``prompt_id``, else the thread's running turn;
- tool outcomes: Claude Code sends a dict (``interrupted``, ``stderr``...) and a separate
  PostToolUseFailure event; Codex sends the output as a string.

What is recorded, and by which rule, is :mod:`continuation.session.recording`'s. Boundaries
(PreCompact, SessionStart compact/resume) do the heavy work in
:mod:`continuation.boundary.crossing`, imported only there.
"""
from __future__ import annotations

import os

from continuation.host import jsontext
from continuation.session.claude_synthetic import notification_kind
from continuation.session.engine import Engine, workspace_root
from continuation.session.recording import Recorder

__all__ = ["HANDLERS", "HookContext", "handle"]

#: the guard file's place in a workspace (``continuation.guard.config.path_in``), spelled here
#: so that a hook of a workspace without a guard imports nothing more to test for it
GUARD_FILE = (".continuation", "guard.json")


#: how every summary of the recovery loop starts (``continuation.guard.summary.MARK``)
GUARD_MARK = "[continuation guard]"


def guard_present(root: str | None) -> bool:
    return bool(root) and os.path.exists(os.path.join(root, *GUARD_FILE))


def _runtime_id(value) -> str | None:
    """An id a runtime sent, as text: a string, or a number's text; anything else (a list, an
    object) names nothing, and the id is derived as for a runtime that sends none."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _turn_id(ctx: HookContext) -> str | None:
    turn = ctx.payload.get("turn_id") or ctx.payload.get("prompt_id")
    if turn:
        return str(turn)
    return ctx.rec.newest_running_turn()


def _as_text(value) -> str:
    """A tool's response as the text a thread keeps of it."""
    if value is None:
        return ""
    return value if isinstance(value, str) else jsontext.dumps(value, ensure_ascii=False)


def _tool_status(event_name: str, response) -> tuple[str, int | None]:
    if event_name in ("PostToolUseFailure", "PermissionDenied"):
        return "error", None
    if isinstance(response, dict):
        code = response.get("exit_code", response.get("exitCode"))
        failed = bool(response.get("is_error") or response.get("interrupted")) or (
            isinstance(code, int) and code != 0)
        return ("error" if failed else "ok"), code if isinstance(code, int) else None
    return "ok", None


class HookContext:
    """One payload and the recorder it is told to: the thread of its session (opened per
    event), tagged ``hook:<runtime>`` with the runtime process as the session's owner."""

    def __init__(self, runtime: str, payload: dict, engine: Engine, *,
                 session: dict | None = None, source: str | None = None):
        self.runtime = runtime
        self.payload = payload
        self.engine = engine
        self.event = str(payload.get("hook_event_name") or "")
        session_id = payload.get("session_id")
        if not session_id or not isinstance(session_id, str):
            raise ValueError("hook payload has no session_id")
        self.root = workspace_root(payload.get("cwd"))
        self.thread = engine.thread(runtime, session_id, workspace_root=self.root)
        self.rec = Recorder(self.thread, source=source or f"hook:{runtime}", session=session)

    @property
    def source(self) -> str:
        return self.rec.source

    def settle_from_transcript(self, turns) -> None:
        """Calls of ``turns`` with no outcome: the transcript may hold their result (a call
        refused by a permission rule gets no PostToolUse); Codex calls finished without an
        exit code (its PostToolUse has none) get theirs. Run at Stop (the ending turn) and at
        PreCompact (the turns still running: a compaction mid-turn hands the model a
        checkpoint before any Stop). One bounded read of the transcript's tail; see
        :mod:`.outcomes`."""
        def find(wanted):
            from continuation.hooks.outcomes import find_outcomes

            return find_outcomes(self.payload.get("transcript_path"), wanted)

        self.rec.settle_open_calls(turns, find, missing_exit_codes=self.runtime == "codex")


def on_user_prompt(ctx: HookContext) -> dict | None:
    p = ctx.payload
    text = p.get("prompt")
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if ctx.runtime == "claude" and notification_kind(text):
        return None  # a <task-notification> Claude Code sends itself: a runtime fact, no input
    if text.startswith(GUARD_MARK) and guard_present(ctx.root):
        from continuation.hooks.guarded import is_echo

        if is_echo(ctx, text):
            return None  # the recovery loop's own summary sent back as a prompt: no input
    turn = _turn_id(ctx)
    input_id = _runtime_id(p.get("prompt_id")) if ctx.runtime == "claude" else None
    if input_id:
        known, known_text = ctx.rec.input_text(input_id)
        if known and known_text != text:
            # Claude Code gives a prompt typed mid-turn the running turn's prompt_id: it is an
            # input of its own, a steer (as the importer reads it from the transcript's queue)
            result = ctx.rec.steer(text, turn)
            if result is None:
                return None
            return _context_for_prompt(ctx, result.input_id)
    if turn is None:  # an older Claude Code: no prompt_id, one input per prompt
        turn = f"prompt-{ctx.rec.input_count() + 1}"
    result = ctx.rec.admit_prompt(text, turn, input_id)
    answer = _context_for_prompt(ctx, result.input_id)
    if guard_present(ctx.root):
        from continuation.hooks.guarded import at_prompt

        answer = joined_answers(answer, at_prompt(ctx, "UserPromptSubmit"))
    return answer


def joined_answers(first: dict | None, second: dict | None) -> dict | None:
    """Two hook answers as one: their added contexts joined in that order, the other fields
    of the second kept."""
    if not first or not second:
        return first or second
    out = dict(second)
    texts = [a.get("hookSpecificOutput", {}).get("additionalContext") for a in (first, second)]
    out["hookSpecificOutput"] = {**first.get("hookSpecificOutput", {}),
                                 "additionalContext": "\n\n".join(t for t in texts if t)}
    return out


def _context_for_prompt(ctx: HookContext, input_id: str) -> dict | None:
    if ctx.thread.row["needs_context"]:
        # A new context generation reached a prompt with no delivery recorded (the compact
        # SessionStart was deferred or dropped), or a state the model has not seen (a
        # reconciliation decision recorded from the command line): inject it here.
        from continuation.boundary import crossing as boundary

        return boundary.context_answer(ctx.thread, ctx.runtime, "UserPromptSubmit",
                                       via="user_prompt", exclude_input=input_id)
    return None


def _call_id(payload: dict) -> str | None:
    call_id = payload.get("tool_use_id") or payload.get("call_id")
    return str(call_id) if call_id else None


def on_pre_tool(ctx: HookContext) -> None:
    p = ctx.payload
    call_id = _call_id(p)
    if call_id:
        args = p.get("tool_input")
        ctx.rec.tool_started(call_id, str(p.get("tool_name") or ""),
                             args if isinstance(args, dict) else {"input": args}, _turn_id(ctx))
    return None


def on_post_tool(ctx: HookContext) -> None:
    p = ctx.payload
    call_id = _call_id(p)
    if not call_id:
        return None
    response = p.get("tool_response", p.get("error"))
    if ctx.event == "PermissionDenied":
        # the call never ran: its outcome is known (refused), so nothing waits to reconcile
        response = {"permission_denied": True, "reason": p.get("reason") or p.get("message")}
    status, code = _tool_status(ctx.event, response)
    turn = _turn_id(ctx)
    ctx.rec.tool_finished(call_id, status, exit_code=code, output=_as_text(response), turn=turn)
    if isinstance(response, dict):
        handle = response.get("backgroundTaskId") or response.get("shellId")
        if handle:
            ctx.rec.background_task(str(handle), p.get("tool_name"), p.get("tool_input"),
                                    p.get("tool_use_id") or p.get("call_id"))
    if guard_present(ctx.root) and ctx.event != "PermissionDenied":
        from continuation.hooks.guarded import after_call

        return after_call(ctx, call_id, turn, "PostToolUse")
    return None


def on_stop(ctx: HookContext) -> None:
    p = ctx.payload
    turn = _turn_id(ctx)
    message = p.get("last_assistant_message")
    if isinstance(message, str) and message:
        ctx.rec.claim(message, turn, via="Stop")
    answer = None
    if turn:
        if ctx.event == "StopFailure":
            ctx.rec.abort_turn(turn, str(p.get("error") or "stop_failure"))
        else:
            ctx.settle_from_transcript([turn])
            settled = False
            if guard_present(ctx.root):
                from continuation.hooks.guarded import at_turn_end

                # before the completion: a turn the loop sends back to work is not over
                answer, settled = at_turn_end(ctx, turn)
            if not settled:
                ctx.rec.complete_turn(turn)
    return answer


def on_interrupt(ctx: HookContext) -> None:
    """Codex 0.171.0 ``Interrupt`` (Ctrl-C): the turn is cut; no PostToolUse or Stop follows,
    so a tool call in flight is left without an outcome (its input goes to reconciling)."""
    turn = _turn_id(ctx)
    if turn:
        ctx.rec.interrupt(turn)
    return None


def on_session_start(ctx: HookContext) -> dict | None:
    p = ctx.payload
    source = str(p.get("source") or "startup")
    ctx.rec.session_started(source, transcript_path=p.get("transcript_path"), cwd=p.get("cwd"),
                            settings={k: p[k] for k in ("model", "permission_mode", "effort")
                                      if k in p})
    from continuation.boundary import crossing as boundary

    answer = boundary.on_session_start(ctx.thread, ctx.runtime, source, source_tag=ctx.source)
    if guard_present(ctx.root):
        from continuation.hooks.guarded import at_session_start

        notice = at_session_start(ctx)
        if notice:
            answer = dict(answer or {})
            answer["systemMessage"] = "\n".join(filter(None, [answer.get("systemMessage"), notice]))
    return answer


def on_pre_compact(ctx: HookContext) -> None:
    from continuation.boundary import crossing as boundary

    trigger = str(ctx.payload.get("trigger") or "auto")
    # the checkpoint must not call a failed command ok: settle what the transcript already says
    # (read while git scans the work tree: up to 4 MB of a Codex rollout's tail)
    boundary.before_compaction(ctx.thread, trigger=trigger, source_tag=ctx.source,
                               transcript_path=ctx.payload.get("transcript_path"),
                               before_gathering=lambda: ctx.settle_from_transcript(
                                   ctx.rec.running_turns()))
    return None


def on_post_compact(ctx: HookContext) -> None:
    summary = ctx.payload.get("compact_summary")
    if isinstance(summary, str) and summary:
        ctx.rec.compaction_summary(summary)
    return None


def on_session_end(ctx: HookContext) -> None:
    ctx.rec.session_ended(str(ctx.payload.get("reason") or "other"))
    return None


HANDLERS = {
    "UserPromptSubmit": on_user_prompt,
    "PreToolUse": on_pre_tool,
    "PostToolUse": on_post_tool,
    "PostToolUseFailure": on_post_tool,
    "PermissionDenied": on_post_tool,
    "Stop": on_stop,
    "StopFailure": on_stop,
    "SessionStart": on_session_start,
    "PreCompact": on_pre_compact,
    "PostCompact": on_post_compact,
    "SessionEnd": on_session_end,
    "Interrupt": on_interrupt,
}


#: the engine of a hook process that ends with ``os._exit``: kept referenced, so that nothing
#: closes (and checkpoints) the store before the process ends
_LEFT_OPEN: list[Engine] = []


def handle(runtime: str, payload: dict, *, ending: bool = False) -> dict | None:
    """Run the event's handler. ``ending``: the process ends right after (``os._exit``), so
    the store is left for the OS to release instead of closed: every transaction was already
    committed durably, and closing would only checkpoint the WAL (see ``hooks.end_process``)."""
    handler = HANDLERS.get(str(payload.get("hook_event_name") or ""))
    if handler is None:
        return None  # unknown events are not ours to judge
    engine = Engine()
    try:
        return handler(HookContext(runtime, payload, engine))
    finally:
        if ending:
            engine.store.leave_open()
            _LEFT_OPEN.append(engine)
        else:
            engine.close()
