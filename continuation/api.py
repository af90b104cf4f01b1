"""The Python API for agent harnesses: the engine the hooks use, called in process.

A harness (the Claude Agent SDK, the OpenAI Agents SDK, a home-grown loop) records what happens
in its session and gets the same guarantees as a Codex CLI or Claude Code user, without a hook
process per event::

    from continuation.api import open_thread

    with open_thread("session-1", workspace=".") as thread:
        thread.admit("add a CHANGELOG entry", input_id="msg-1")   # exactly once, by id
        thread.tool_intent("call-1", "Bash", {"command": "echo entry >> CHANGELOG"})
        thread.tool_outcome("call-1", ok=True, exit_code=0)
        thread.turn_completed(claim="Added the entry.")          # the text is a claim
        thread.checkpoint()                                      # before you compact
        context = thread.context(instructions="You are ...")     # the fresh context after it

One code path: every method tells the recording core the ``continuation hook`` command tells
(:mod:`continuation.session.recording`), and runs the boundaries and recovery it runs
(:mod:`continuation.boundary.crossing`, :mod:`continuation.recovery`), against a store held
open, with this process as the session's owner. What the hooks decide (a new prompt cuts a turn
left running, a turn completes its inputs only with no call left without an outcome, a
boundary's context is delivered once) holds here too.

Choices where the harness is silent:

- turns: each :meth:`Thread.admit` opens a new turn (a turn still running is cut, as a new
  prompt cuts it in Claude Code) unless ``steer=True`` adds the input to the running turn;
- ids: pass your message id as ``input_id`` for exactly-once admission across replays and
  restarts; without one the id is a hash of (thread, turn, position, text), and a replay opens
  a new turn, so it is admitted again;
- the owner of the session is this process (its pid): :meth:`Thread.recover` in a later
  process records the crash of a dead owner that left work open;
- errors are raised (the adapters in :mod:`continuation.adapters` fail open instead);
- the recovery loop (:mod:`continuation.guard`) runs when the workspace has a guard file
  (``.continuation/guard.json``) or ``guard=`` names one: :meth:`Thread.tool_outcome` and
  :meth:`Thread.turn_completed` then return a :class:`GuardOutcome` (None when no check ran).
  A turn whose outcome ``continues`` is not over: give the model ``outcome.message`` and call
  :meth:`Thread.turn_completed` again when it ends; ``stops``: the turn was ended, tell the
  user ``outcome.user_message``.

Use one :class:`Continuation` (or thread) per OS thread: it holds a SQLite connection.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from continuation.host import jsontext
from continuation.host.liveness import marker as session_marker
from continuation.session.engine import Engine, workspace_root
from continuation.session.engine import Thread as _EngineThread
from continuation.session.recording import Recorder
from statemachine.lifecycle import ACTIONABLE

if TYPE_CHECKING:
    from capsule.context import ContextMessage

    from continuation.guard.config import GuardConfig
    from continuation.guard.loop import GuardOutcome

    from continuation.boundary.checkpoints import Checkpoint
    from continuation.recovery.reconcile import ReconcileItem

__all__ = ["Admission", "Context", "Continuation", "InputState", "Recovery", "Thread",
           "open_thread", "DECISIONS", "DEFAULT_RUNTIME", "guard_config"]

#: the runtime label of threads opened through the API (threads are keyed by runtime + session)
DEFAULT_RUNTIME = "python"
#: what :meth:`Thread.reconcile` records about a call whose outcome is unknown
DECISIONS = ("applied", "not_applied", "retry_safe")
Decision = Literal["applied", "not_applied", "retry_safe"]


@dataclass(frozen=True)
class InputState:
    """One user input and where it is in its lifecycle."""

    input_id: str
    state: str  # queued | pending | handled | reconciling | interrupted | superseded | rolled_back
    text: str
    turn_id: str | None


@dataclass(frozen=True)
class Context:
    """The assembled fresh context, in order: instructions, the checkpoint as a delimited data
    block, the still-actionable inputs verbatim, queued input. Iterating yields the messages;
    :meth:`text` joins them into one block (what the hooks inject)."""

    messages: tuple[ContextMessage, ...]
    checkpoint_id: str
    generation: int
    problems: tuple[str, ...] = ()  # checkpoints skipped because their bytes did not verify

    def __iter__(self) -> Iterator[ContextMessage]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def text(self) -> str:
        from capsule.context import AssembledContext

        body = AssembledContext(self.messages).as_text()
        return "".join(f"[continuation: {p}]\n" for p in self.problems) + body


@dataclass(frozen=True)
class Admission:
    """What :meth:`Thread.admit` did. ``context``: a boundary was recorded and its context never
    delivered (no :meth:`Thread.context` after :meth:`Thread.checkpoint`): give the model these
    messages before the input (the input itself is not repeated in them)."""

    input_id: str
    turn_id: str | None
    duplicate: bool  # the id was known: nothing was recorded
    state: str
    context: Context | None = None


@dataclass(frozen=True)
class Recovery:
    """What :meth:`Thread.recover` found: whether the previous owner died with work open (its
    crash is recorded now), the inputs still actionable, and the tool calls whose outcome is
    unknown (decide each with :meth:`Thread.reconcile`; nothing is retried by itself)."""

    crash_recorded: bool
    reason: str | None
    inputs: tuple[InputState, ...]
    reconciliations: tuple[ReconcileItem, ...] = field(default=())


class Continuation:
    """The engine for one harness process: opens threads, and handles runtime hook payloads in
    process (what the adapters use). ``home`` is the state home (default: as the CLI's)."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, source: str = "api"):
        self.engine = Engine(home)
        self.source = source
        self.session = session_marker(os.getpid())  # this process owns what it records

    def open_thread(self, session_id: str, *, runtime: str = DEFAULT_RUNTIME,
                    workspace: str | os.PathLike[str] | None = None,
                    guard: GuardConfig | str | bool | None = None) -> Thread:
        """The thread of ``(runtime, session_id)``, created on first use. ``workspace``: the
        folder the harness works in (its git root is found; snapshots are taken there).
        ``guard``: the recovery loop's check: None reads the workspace's guard file, a
        command line or a ``GuardConfig`` sets it, False turns it off."""
        if not session_id or not isinstance(session_id, str):
            raise ValueError("session_id must be a non-empty string")
        root = workspace_root(os.fspath(workspace)) if workspace is not None else None
        thread = Thread(self, self.engine.thread(runtime, session_id, workspace_root=root), runtime)
        thread._guard = guard_config(guard, root)
        return thread

    def hook(self, runtime: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Handle one hook payload of ``runtime`` (``claude`` or ``codex`` shaped) with the
        hook dialect ``continuation hook`` runs; returns the answer that command would print
        (``{}`` for none). Errors are raised: the caller decides to fail open."""
        from continuation.hooks import handlers

        handler = handlers.HANDLERS.get(str(payload.get("hook_event_name") or ""))
        if handler is None:
            return {}
        ctx = handlers.HookContext(runtime, dict(payload), self.engine, session=self.session,
                                   source=f"{self.source}:{runtime}")
        return handler(ctx) or {}

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Continuation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def guard_config(guard, root: str | None) -> GuardConfig | None:
    """The guard a thread runs: ``guard`` as given (a command line, a ``GuardConfig``), none
    for False, else the workspace's guard file (:mod:`continuation.guard.config`)."""
    if guard is False or (guard is None and not root):
        return None
    from continuation.guard import config

    if guard is None:
        return config.load(root)
    if isinstance(guard, str):
        return config.GuardConfig(guard)
    if isinstance(guard, config.GuardConfig):
        return guard
    raise TypeError("guard must be a command line, a GuardConfig, False or None")


def open_thread(session_id: str, *, home: str | os.PathLike[str] | None = None,
                runtime: str = DEFAULT_RUNTIME,
                workspace: str | os.PathLike[str] | None = None,
                guard: GuardConfig | str | bool | None = None) -> Thread:
    """Open the thread of a session with an engine of its own (closed with the thread)."""
    owner = Continuation(home)
    try:
        thread = owner.open_thread(session_id, runtime=runtime, workspace=workspace, guard=guard)
    except BaseException:
        owner.close()
        raise
    thread._owns_engine = True
    return thread


class Thread:
    """One session's thread. Methods record facts (durably, before they return) or read the
    state derived from them; see the module docstring for the choices made."""

    def __init__(self, owner: Continuation, thread: _EngineThread, runtime: str):
        self._owner = owner
        self._thread = thread
        self.runtime = runtime
        self.session_id: str = thread.row["session_id"]
        self._turn: str | None = None  # the turn this object opened, until it ends
        self._owns_engine = False
        self._rec = Recorder(thread, source=owner.source, session=owner.session)
        self._guard: GuardConfig | None = None

    def __repr__(self) -> str:
        return f"continuation.api.Thread({self.key!r})"

    @property
    def key(self) -> str:
        return self._thread.key

    def _current_turn(self) -> str | None:
        """The turn an event without one belongs to: the one this object opened, else the
        newest still running."""
        return self._turn or self._rec.newest_running_turn()

    def _input(self, input_id: str) -> InputState | None:
        rec = self._rec.view().get_input(input_id)
        return None if rec is None else InputState(rec.input_id, rec.state, rec.text, rec.turn_id)

    # -- recording ---------------------------------------------------------------------------
    def admit(self, text: str, *, input_id: str | None = None, steer: bool = False) -> Admission:
        """Admit one user input exactly once: an ``input_id`` already known records nothing and
        says ``duplicate``. The input opens a new turn (a turn still running is cut: its inputs
        become interrupted, or reconciling with a call in flight) unless ``steer`` adds it to
        the running turn."""
        if not isinstance(text, str):
            raise TypeError("text must be a string")
        if input_id is not None:
            if not input_id or not isinstance(input_id, str):
                raise ValueError("input_id must be a non-empty string")
            known = self._input(input_id)
            if known is not None:
                return Admission(input_id, known.turn_id, True, known.state)
        turn = self._rec.newest_running_turn() if steer else None
        if turn is None:
            turn = f"turn:{input_id}" if input_id else f"turn-{self._rec.turn_count() + 1}"
        if self._guard is not None:  # a thread that never ran the check runs it first
            self._loop().at_start()
        result = self._rec.admit_prompt(text, turn, input_id)
        self._turn = turn
        admitted = self._input(result.input_id)
        context = None
        if self._thread.row["needs_context"]:
            # a boundary whose context was never delivered: as the prompt hook does, deliver
            # it with this input (which the harness sends itself, so it is not repeated)
            context = self._deliver(via="api_admit", reason="boundary",
                                    exclude_input=result.input_id)
        return Admission(result.input_id, turn, result.seq is None,
                         admitted.state if admitted else "pending", context)

    def tool_intent(self, call_id: str, tool: str, args: Mapping[str, Any] | None = None) -> None:
        """A tool call is about to run (before its effect: a crash after this leaves its outcome
        unknown, to be reconciled, never blindly retried). A known ``call_id`` is a no-op."""
        _require_id(call_id, "call_id")
        self._rec.tool_started(call_id, str(tool), dict(args or {}), self._current_turn())

    def tool_outcome(self, call_id: str, *, ok: bool = True, output: str | None = None,
                     exit_code: int | None = None) -> GuardOutcome | None:
        """The call's outcome: ``ok=False`` or a non-zero ``exit_code`` records an error. With
        a guard that runs after changes, what the check found (see the module docstring)."""
        _require_id(call_id, "call_id")
        # kept as the hooks keep a runtime's outcome object: the whole outcome, as JSON text
        response: dict[str, Any] = {"is_error": not ok}
        if exit_code is not None:
            response["exit_code"] = int(exit_code)
        if output is not None:
            response["output"] = output
        failed = not ok or bool(exit_code)
        turn = self._current_turn()
        self._rec.tool_finished(call_id, "error" if failed else "ok",
                                exit_code=response.get("exit_code"),
                                output=jsontext.dumps(response, ensure_ascii=False),
                                turn=turn)
        if self._guard is None or self._guard.when != "change":
            return None
        return self._handed(self._loop().after_call(call_id, turn))

    def turn_completed(self, claim: str | None = None) -> GuardOutcome | None:
        """The running turn ended normally. Its inputs become handled when none of its tool
        calls is left without an outcome (else reconciling). ``claim``: the assistant's final
        text, recorded as a claim (never as proof that anything was done). With a guard, what
        the check found: when it ``continues``, the turn is not over."""
        turn = self._current_turn()
        if claim:
            self._rec.claim(claim, turn, via="Stop")
        outcome = None
        if self._guard is not None:
            outcome = self._handed(self._loop().at_turn_end(turn))
            if outcome is not None and (outcome.continues or outcome.stops):
                if outcome.stops:
                    self._turn = None
                return outcome  # sent back to work, or ended by the loop
        if turn:
            self._rec.complete_turn(turn)
        self._turn = None
        return outcome

    def rewind(self, checkpoint_id: str, mode: Literal["conversation", "files", "both"] = "both",
               reason: str = "") -> dict[str, Any]:
        """Rewind the thread to a checkpoint at once, as ``continuation rewind CP --yes``
        does (a files rewind: safety snapshot first, the user's own edits kept); what it did
        (``RewindResult.to_dict()``). The next context carries the recovery summary."""
        from continuation.rewind.operation import rewind

        self._turn = None
        return rewind(self._owner.engine, checkpoint_id, mode, reason=reason).to_dict()

    # -- the recovery loop -------------------------------------------------------------------
    @property
    def guard(self) -> GuardConfig | None:
        """The check this thread runs (None: no recovery loop)."""
        return self._guard

    def guard_status(self) -> dict | None:
        """The loop's state as the log has it (newest verdict, last passing checkpoint,
        automatic rewinds); None when no check ran."""
        from continuation.session.guard_notes import status

        return status(self._thread.store, self.key)

    def _loop(self):
        from continuation.guard.loop import Loop

        return Loop(self._thread, self._rec, self._guard, long_lived=True)

    def _handed(self, outcome: GuardOutcome | None) -> GuardOutcome | None:
        """The outcome goes back to the harness, its message for the model: recorded as
        delivered through the API."""
        if outcome is not None and outcome.message:
            self._loop().delivered(outcome, "api")
        return outcome

    def turn_aborted(self, reason: str = "interrupted") -> None:
        """The running turn was cut (user interrupt, an error): its inputs stay actionable."""
        turn = self._current_turn()
        if turn:
            self._rec.abort_turn(turn, reason or "stop_failure")
        self._turn = None

    def claim(self, text: str) -> None:
        """Assistant text (e.g. "next I will..."): kept as a labelled claim, never authority."""
        self._thread.claim(text, self._current_turn(), source=self._owner.source,
                           session=self._owner.session)

    def end(self, reason: str = "other") -> None:
        """The session ended cleanly (a turn still running was cut); no crash is reported."""
        self._rec.session_ended(reason or "other")
        self._turn = None

    # -- boundaries --------------------------------------------------------------------------
    def checkpoint(self, reason: Literal["auto", "manual"] = "auto", *,
                   transcript_path: str | None = None) -> Checkpoint:
        """Call before the harness compacts (drops or summarises history): commits a capsule
        and a workspace snapshot and records the boundary; the next fresh context must get
        :meth:`context`."""
        from continuation.boundary import crossing as boundary

        if reason not in ("auto", "manual"):
            raise ValueError("reason must be 'auto' or 'manual'")
        return boundary.before_compaction(self._thread, trigger=reason,
                                          source_tag=self._owner.source,
                                          transcript_path=transcript_path)

    def context(self, instructions: str | None = None) -> Context:
        """The fresh context to start the next model call from (after a checkpoint, a crash,
        or a resume), recorded as delivered. ``instructions`` come first, unchanged."""
        return self._deliver(via="api", reason="context", instructions=instructions)

    def _deliver(self, *, via: str, reason: str, instructions: str | None = None,
                 exclude_input: str | None = None) -> Context:
        from continuation.boundary import crossing as boundary

        fresh = boundary.fresh_context(self._thread, reason, instructions=instructions,
                                       exclude_input=exclude_input)
        if fresh is None:  # the checkpoint just committed cannot be read back
            raise RuntimeError(f"thread {self.key}: no checkpoint to build a context from")
        loaded, assembled = fresh
        context = Context(assembled.messages, loaded.checkpoint.checkpoint_id,
                          loaded.checkpoint.generation, tuple(loaded.problems))
        boundary.record_delivery(self._thread, loaded, via=via, chars=len(context.text()),
                                 source=self._owner.source)
        return context

    # -- recovery ----------------------------------------------------------------------------
    def recover(self) -> Recovery:
        """After a restart: when the thread's previous owner (another process) is gone and left
        work open, record its crash (pending inputs become interrupted; inputs with a call in
        flight become reconciling). Returns what is still actionable and what to reconcile."""
        from continuation.recovery import interrupted

        item = interrupted.examine(self._thread, exclude=self._owner.session)
        recorded = False
        if item is not None:
            recorded = interrupted.record_crash(self._thread, item, source=self._owner.source)
        self._turn = None
        actionable = tuple(i for i in self.inputs() if i.state in ACTIONABLE)
        return Recovery(recorded, item.reason if item is not None else None, actionable,
                        tuple(self.pending_reconciliations()))

    def pending_reconciliations(self) -> list[ReconcileItem]:
        """Tool calls whose outcome is unknown, classified (read-only, file edit verified
        against the files, external effect) with a question and, where the evidence supports
        one, a suggested decision (never recorded by itself)."""
        from continuation.recovery import reconcile

        return reconcile.pending(self._thread)

    def reconcile(self, call_id: str, decision: Decision, note: str = "") -> None:
        """Record the decision about a call with unknown outcome: ``applied`` (it took effect),
        ``not_applied`` or ``retry_safe``. Its held input becomes handled (applied, and its turn
        had completed) or pending again."""
        from continuation.recovery import reconcile

        _require_id(call_id, "call_id")
        reconcile.decide(self._thread, call_id, decision, note, source=self._owner.source)

    # -- reading -----------------------------------------------------------------------------
    def inputs(self) -> list[InputState]:
        """Every input of the thread in admission order."""
        return [InputState(r.input_id, r.state, r.text, r.turn_id) for r in self._thread.inputs()]

    def input(self, input_id: str) -> InputState | None:
        return self._input(input_id)

    def close(self) -> None:
        """Release the store (the engine too when :func:`open_thread` made it). Closing is not
        ending: a turn left running is cut by the next prompt, or found by :meth:`recover`."""
        if self._owns_engine:
            self._owner.close()

    def __enter__(self) -> Thread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _require_id(value: object, name: str) -> None:
    if not value or not isinstance(value, str):
        raise ValueError(f"{name} must be a non-empty string")
