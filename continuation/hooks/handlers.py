"""What each hook event records, for both runtimes.

The two runtimes send nearly the same payloads (see ``../shared/fixtures``); the differences:
- input ids: Claude Code sends ``prompt_id`` (2.1.196+); Codex sends only ``turn_id``, and a turn
  can hold several inputs (steering), so the id is a hash of (thread, turn, ordinal, text);
- turn ids: Codex ``turn_id``; Claude Code ``prompt_id``, else the thread's running turn;
- tool outcomes: Claude Code sends a dict (``interrupted``, ``stderr``...) and a separate
  PostToolUseFailure event; Codex sends the output as a string.

Boundaries (PreCompact, SessionStart compact/resume) do the heavy work in
:mod:`continuation.boundary.crossing`, imported only there.
"""
from __future__ import annotations

import os

from statemachine import events as ev

from continuation.host import jsontext
from continuation.session.claude_synthetic import notification_kind
from continuation.session.engine import (
    Engine,
    Thread,
    newest_running_turn,
    session_marker,
    tool_finished_event,
)

OUTPUT_EXCERPT = 2000


def workspace_root(cwd: str | None) -> str | None:
    """The canonical root: the nearest folder holding ``.git`` above ``cwd``, else ``cwd``.
    A path walk, not a git call, because this runs on every prompt."""
    if not cwd or not isinstance(cwd, str):
        return None
    try:
        start = os.path.realpath(cwd)
    except (OSError, ValueError):
        return cwd
    folder = start
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def _runtime_id(value) -> str | None:
    """An id a runtime sent, as text: a string, or a number's text; anything else (a list, an
    object) names nothing, and the id is derived as for a runtime that sends none."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _turn_id(runtime: str, thread: Thread, payload: dict) -> str | None:
    turn = payload.get("turn_id") or payload.get("prompt_id")
    if turn:
        return str(turn)
    return newest_running_turn(thread.store.conn, thread.key)


def _excerpt(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        value = jsontext.dumps(value, ensure_ascii=False)
    if len(value) <= OUTPUT_EXCERPT:
        return value
    half = OUTPUT_EXCERPT // 2
    return value[:half] + f"\n[... {len(value) - OUTPUT_EXCERPT} chars cut ...]\n" + value[-half:]


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
    """One event for the handlers. A caller in process (:mod:`continuation.api`) passes the
    thread it holds open and its own session marker; a hook process opens both per event."""

    def __init__(self, runtime: str, payload: dict, engine: Engine, *,
                 thread: Thread | None = None, session: dict | None = None,
                 source: str | None = None):
        self.runtime = runtime
        self.payload = payload
        self.engine = engine
        self.event = str(payload.get("hook_event_name") or "")
        if thread is None:
            session_id = payload.get("session_id")
            if not session_id or not isinstance(session_id, str):
                raise ValueError("hook payload has no session_id")
            thread = engine.thread(runtime, session_id,
                                   workspace_root=workspace_root(payload.get("cwd")))
        self.thread = thread
        self.session = session if session is not None else session_marker()
        self.source = source or f"hook:{runtime}"

    def record(self, etype: str, data: dict):
        return self.thread.record(etype, data, source=self.source, session=self.session)


def _same_text_in_turn(conn, thread_key: str, turn: str, text: str) -> bool:
    """Whether an input of ``turn`` already has exactly this text (compared in Python: the
    runtime's text may hold lone surrogates, which SQLite cannot bind)."""
    rows = conn.execute("SELECT data FROM inputs WHERE thread_key=? AND turn_id=?",
                        (thread_key, turn)).fetchall()
    return any(jsontext.loads(r[0]).get("text") == text for r in rows)


def _admitted_in_turn(conn, thread_key: str, turn: str) -> int:
    """How many inputs were first admitted in ``turn`` (the ordinal of the next one, as the
    importer numbers them): inputs delivered into it from earlier turns were admitted before
    the turn started."""
    row = conn.execute("SELECT data FROM turns WHERE thread_key=? AND turn_id=?",
                       (thread_key, turn)).fetchone()
    if row is None:
        return 0
    record = jsontext.loads(row[0])
    ids = record.get("input_ids") or []
    if not ids:
        return 0
    started = int(record.get("started_seq") or 0)
    rows = conn.execute(
        f"SELECT admitted_seq FROM inputs WHERE thread_key=? AND input_id IN"
        f" ({','.join('?' * len(ids))})", (thread_key, *ids)).fetchall()
    return sum(1 for (seq,) in rows if seq >= started)


def _running_turns(ctx: HookContext) -> list[str]:
    return [r[0] for r in ctx.thread.store.conn.execute(
        "SELECT turn_id FROM turns WHERE thread_key=? AND status='running'",
        (ctx.thread.key,)).fetchall()]


def _start_turn(ctx: HookContext, turn: str) -> None:
    """A prompt that opens a new turn: both runtimes run one turn at a time per session (a
    steer keeps its turn id), so any other turn still running was cut without a Stop (Claude
    Code's Esc sends none). It is aborted: its inputs become interrupted (reconciling with a
    call in flight) instead of staying pending on a turn that will never end."""
    running = _running_turns(ctx)
    if turn in running:
        return  # a steer into the running turn
    for other in running:
        ctx.thread.turn_aborted(other, reason="cut: the next prompt started a new turn",
                                source=ctx.source, session=ctx.session)


def _settle_from_transcript(ctx: HookContext, turns) -> None:
    """Calls of ``turns`` with no outcome: the transcript may hold their result (a call
    refused by a permission rule gets no PostToolUse). Codex calls finished without an exit
    code (its PostToolUse has none) get theirs. Run at Stop (the ending turn) and at PreCompact
    (the turns still running: a compaction mid-turn hands the model a checkpoint before any
    Stop). One bounded read of the transcript's tail; see :mod:`.outcomes`."""
    conn = ctx.thread.store.conn
    open_calls: list[str] = []
    no_code: list[str] = []
    for turn in turns:
        row = conn.execute("SELECT data FROM turns WHERE thread_key=? AND turn_id=?",
                           (ctx.thread.key, turn)).fetchone()
        open_calls += (jsontext.loads(row[0]).get("open_calls") or []) if row else []
        if ctx.runtime == "codex":
            # through the turn index (schema 5): else every call of the thread is read
            no_code += [r[0] for r in conn.execute(
                "SELECT call_id FROM tool_calls INDEXED BY tool_calls_by_turn WHERE thread_key=?"
                " AND status='ok' AND json_extract(data, '$.turn_id')=?"
                " AND json_extract(data, '$.outcome.exit_code') IS NULL",
                (ctx.thread.key, turn)).fetchall()]
    if not open_calls and not no_code:
        return
    from continuation.store.view import SqlStateView
    from continuation.hooks.outcomes import find_outcomes

    view = SqlStateView(conn, ctx.thread.key)
    records = {key: view.get_call(key) for key in [*open_calls, *no_code]}
    wanted = [(key, rec.runtime_call_id or key, rec.turn_id)
              for key, rec in records.items() if rec is not None]
    found = find_outcomes(ctx.payload.get("transcript_path"), wanted)
    finished, exit_codes = [], []
    for call_id, outcome in found.items():
        if call_id in open_calls:
            finished.append(tool_finished_event(
                call_id, outcome["status"], exit_code=outcome["exit_code"],
                output=_excerpt(outcome["output"]), turn_id=records[call_id].turn_id))
        elif outcome["exit_code"] is not None:
            exit_codes.append((ev.TOOL_EXIT_CODE, {"call_id": call_id,
                                                   "exit_code": outcome["exit_code"]}))
    # one transaction each, not one per call: a long Codex turn settles dozens at once
    store = ctx.thread.store
    if finished:
        store.append_many(ctx.thread.key, finished, source=f"{ctx.source}:transcript",
                          session=ctx.session)
    if exit_codes:
        store.append_many(ctx.thread.key, exit_codes, source=ctx.source, session=ctx.session)


def _carry_into(ctx: HookContext, turn: str) -> None:
    """Before a turn completes cleanly: inputs left pending or interrupted on turns that are
    over are delivered into it, so its completion decides them (the rule of
    :mod:`statemachine.carry`, which the transcript importer applies too)."""
    from statemachine.carry import carried_into

    from continuation.store.view import SqlStateView

    for input_id in carried_into(SqlStateView(ctx.thread.store.conn, ctx.thread.key), turn):
        ctx.thread.deliver(input_id, turn, source=ctx.source, session=ctx.session)


def _queued_twin(ctx: HookContext, text: str, input_id: str | None) -> str | None:
    if input_id and ctx.thread.store.conn.execute(
            "SELECT 1 FROM inputs WHERE thread_key=? AND input_id=?",
            (ctx.thread.key, input_id)).fetchone():
        return None  # a known id: admission says duplicate
    from statemachine.carry import queued_twin

    from continuation.store.view import SqlStateView

    twin = queued_twin(SqlStateView(ctx.thread.store.conn, ctx.thread.key), text)
    return twin.input_id if twin is not None else None


def admit_prompt(ctx: HookContext, text: str, turn: str, input_id: str | None = None, *,
                 typed_while_busy: bool = False):
    """Admit one prompt into ``turn`` (a new turn cuts any other still running); without an
    id, the id is a hash of its position in the turn. Shared by the prompt hook and the API.
    ``typed_while_busy``: a steer into the running turn, admitted queued and delivered to it at
    once (as the importer records the same prompt from the transcript's queue)."""
    _start_turn(ctx, turn)
    ordinal = 0
    if not input_id:
        ordinal = _admitted_in_turn(ctx.thread.store.conn, ctx.thread.key, turn)
    twin = _queued_twin(ctx, text, input_id)
    if twin is not None:
        # an import left this text queued (the file ended while it waited): this prompt sends
        # it; one input, delivered into this turn (statemachine.carry.queued_twin)
        result = ctx.thread.deliver(twin, turn, source=ctx.source, session=ctx.session)
        result.input_id = twin
        return result
    result = ctx.thread.admit(text, input_id=input_id, turn_id=turn, ordinal=ordinal,
                              queued=typed_while_busy, source=ctx.source, session=ctx.session)
    if typed_while_busy and result.outcome != "duplicate":
        ctx.thread.deliver(result.input_id, turn, source=ctx.source, session=ctx.session)
    return result


def on_user_prompt(ctx: HookContext) -> dict | None:
    p = ctx.payload
    text = p.get("prompt")
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if ctx.runtime == "claude" and notification_kind(text):
        return None  # a <task-notification> Claude Code sends itself: a runtime fact, no input
    turn = _turn_id(ctx.runtime, ctx.thread, p)
    conn = ctx.thread.store.conn
    input_id = _runtime_id(p.get("prompt_id")) if ctx.runtime == "claude" else None
    steer = False
    if input_id:
        row = conn.execute("SELECT data FROM inputs WHERE thread_key=? AND input_id=?",
                           (ctx.thread.key, input_id)).fetchone()
        if row is not None and jsontext.loads(row[0]).get("text") != text:
            # Claude Code gives a prompt typed mid-turn the running turn's prompt_id: it is an
            # input of its own, identified like a Codex steer (and like the importer does).
            # The same text delivered again in that turn is the same input.
            if _same_text_in_turn(conn, ctx.thread.key, turn, text):
                return None
            input_id, steer = None, True
    if turn is None:  # an older Claude Code: no prompt_id, one input per prompt
        count = conn.execute("SELECT count(*) FROM inputs WHERE thread_key=?",
                             (ctx.thread.key,)).fetchone()[0]
        turn = f"prompt-{count + 1}"
    result = admit_prompt(ctx, text, turn, input_id, typed_while_busy=steer)
    if ctx.thread.row["needs_context"]:
        # A new context generation reached a prompt with no delivery recorded (the compact
        # SessionStart was deferred or dropped), or a state the model has not seen (a
        # reconciliation decision recorded from the command line): inject it here.
        from continuation.boundary import crossing as boundary

        return boundary.context_answer(ctx.thread, ctx.runtime, "UserPromptSubmit",
                                       via="user_prompt", exclude_input=result.input_id)
    return None


def on_pre_tool(ctx: HookContext) -> None:
    p = ctx.payload
    call_id = p.get("tool_use_id") or p.get("call_id")
    if not call_id:
        return None
    tool = str(p.get("tool_name") or "")
    args = p.get("tool_input") if isinstance(p.get("tool_input"), dict) else {"input": p.get("tool_input")}
    ctx.thread.tool_started(str(call_id), tool, args, turn_id=_turn_id(ctx.runtime, ctx.thread, p),
                            source=ctx.source, session=ctx.session)
    if tool in ("TodoWrite", "update_plan"):
        items = args.get("todos") or args.get("plan") or []
        ctx.record(ev.PLAN_UPDATED, {"tool": tool, "items": items})
    return None


def on_post_tool(ctx: HookContext) -> None:
    p = ctx.payload
    call_id = p.get("tool_use_id") or p.get("call_id")
    if not call_id:
        return None
    response = p.get("tool_response", p.get("error"))
    if ctx.event == "PermissionDenied":
        # the call never ran: its outcome is known (refused), so nothing waits to reconcile
        response = {"permission_denied": True, "reason": p.get("reason") or p.get("message")}
    status, code = _tool_status(ctx.event, response)
    ctx.thread.tool_finished(str(call_id), status, exit_code=code, output=_excerpt(response),
                             turn_id=_turn_id(ctx.runtime, ctx.thread, p),
                             source=ctx.source, session=ctx.session)
    if isinstance(response, dict):
        handle = response.get("backgroundTaskId") or response.get("shellId")
        if handle:
            ctx.record(ev.BACKGROUND_TASK, {"handle": str(handle), "tool": p.get("tool_name"),
                                            "args": p.get("tool_input"), "call_id": call_id})
    return None


def on_stop(ctx: HookContext) -> None:
    p = ctx.payload
    turn = _turn_id(ctx.runtime, ctx.thread, p)
    message = p.get("last_assistant_message")
    if isinstance(message, str) and message:
        ctx.record(ev.ASSISTANT_CLAIM, {"text": message, "turn_id": turn, "via": "Stop"})
    if turn:
        if ctx.event == "StopFailure":
            ctx.thread.turn_aborted(turn, reason=str(p.get("error") or "stop_failure"),
                                    source=ctx.source, session=ctx.session)
        else:
            _settle_from_transcript(ctx, [turn])
            _carry_into(ctx, turn)
            ctx.thread.turn_completed(turn, source=ctx.source, session=ctx.session)
    return None


def on_interrupt(ctx: HookContext) -> None:
    """Codex 0.171.0 ``Interrupt`` (Ctrl-C): the turn is cut; no PostToolUse or Stop follows,
    so a tool call in flight is left without an outcome (its input goes to reconciling)."""
    turn = _turn_id(ctx.runtime, ctx.thread, ctx.payload)
    if turn:
        ctx.thread.turn_aborted(turn, reason="user_interrupt", source=ctx.source,
                                session=ctx.session)
    return None


def on_session_start(ctx: HookContext) -> dict | None:
    p = ctx.payload
    source = str(p.get("source") or "startup")
    ctx.record(ev.SESSION_STARTED, {"source": source, "transcript_path": p.get("transcript_path"),
                                    "cwd": p.get("cwd")})
    settings = {k: p[k] for k in ("model", "permission_mode", "effort") if k in p}
    if settings:
        ctx.record(ev.SETTINGS, settings)
    from continuation.boundary import crossing as boundary

    return boundary.on_session_start(ctx.thread, ctx.runtime, source, source_tag=ctx.source)


def on_pre_compact(ctx: HookContext) -> None:
    from continuation.boundary import crossing as boundary

    trigger = str(ctx.payload.get("trigger") or "auto")
    # the checkpoint must not call a failed command ok: settle what the transcript already says
    # (read while git scans the work tree: up to 4 MB of a Codex rollout's tail)
    boundary.before_compaction(ctx.thread, trigger=trigger, source_tag=ctx.source,
                               transcript_path=ctx.payload.get("transcript_path"),
                               before_gathering=lambda: _settle_from_transcript(
                                   ctx, _running_turns(ctx)))
    return None


def on_post_compact(ctx: HookContext) -> None:
    summary = ctx.payload.get("compact_summary")
    if isinstance(summary, str) and summary:
        # the compaction summary is model-written: a claim, never authority
        ctx.record(ev.ASSISTANT_CLAIM, {"text": summary, "via": "compact_summary"})
    return None


def on_session_end(ctx: HookContext) -> None:
    reason = str(ctx.payload.get("reason") or "other")
    for turn in _running_turns(ctx):
        # the session ended while a turn still ran: that turn was cut, not completed
        ctx.thread.turn_aborted(turn, reason=f"session_end:{reason}", source=ctx.source)
    ctx.record(ev.SESSION_ENDED, {"reason": reason})
    ctx.engine.store.end_sessions(ctx.thread.key)
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
