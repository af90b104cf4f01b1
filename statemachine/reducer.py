"""The reducer: folds an event sequence into the state of every input, turn and tool call.

Replay is the only way state is derived: the store's live update after each append and a full
recovery both call :func:`apply`, against a SQL-backed view or the in-memory
:class:`ThreadState`. ``apply`` touches only the records an event names (an input, a turn, a
call), so a live update costs O(1) however long the thread is.

"handled" is decided by runtime facts only: a turn that completed normally after the input was
delivered, with no tool call of that turn left without an outcome. Assistant claims never move
an input.
"""
from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hot path

from statemachine import events as ev
from statemachine.lifecycle import (
    ACTIONABLE,
    NEW,
    PENDING,
    RECONCILING,
    IllegalTransition,
    allowed,
    next_state,
)
from statemachine.records import InputRecord, ToolCallRecord, TurnRecord

if TYPE_CHECKING:
    from typing import Callable, Iterable, Iterator, Protocol

    History = Callable[[int], Iterable[dict]]


    class StateView(Protocol):
        """Where the fold reads and writes records (a dict in memory, or the store's tables)."""

        def get_input(self, input_id: str) -> InputRecord | None: ...
        def put_input(self, rec: InputRecord) -> None: ...
        def get_turn(self, turn_id: str) -> TurnRecord | None: ...
        def put_turn(self, rec: TurnRecord) -> None: ...
        def get_call(self, call_id: str) -> ToolCallRecord | None: ...
        def put_call(self, rec: ToolCallRecord) -> None: ...
        def running_turns(self) -> Iterable[TurnRecord]: ...
        def all_inputs(self) -> Iterable[InputRecord]: ...
        def inputs_in_states(self, states) -> Iterable[InputRecord]: ...
        def all_calls(self) -> Iterable[ToolCallRecord]: ...
        def reset(self) -> None: ...


class ThreadState:
    """The in-memory view: the result of folding a thread's events."""

    def __init__(self) -> None:
        self.inputs: dict[str, InputRecord] = {}
        self.turns: dict[str, TurnRecord] = {}
        self.calls: dict[str, ToolCallRecord] = {}
        self.last_seq = 0
        # the events folded so far: a rollback replays a prefix of them
        self.events: list[dict] = []

    def get_input(self, input_id):
        return self.inputs.get(input_id)

    def put_input(self, rec):
        self.inputs[rec.input_id] = rec

    def get_turn(self, turn_id):
        return self.turns.get(turn_id)

    def put_turn(self, rec):
        self.turns[rec.turn_id] = rec

    def get_call(self, call_id):
        return self.calls.get(call_id)

    def put_call(self, rec):
        self.calls[rec.call_id] = rec

    def running_turns(self):
        return [t for t in self.turns.values() if t.status == "running"]

    def all_inputs(self):
        return list(self.inputs.values())

    def inputs_in_states(self, states):
        return [r for r in self.inputs.values() if r.state in states]

    def all_calls(self):
        return list(self.calls.values())

    def reset(self):
        self.inputs.clear()
        self.turns.clear()
        self.calls.clear()

    def states(self) -> dict[str, str]:
        """input id -> state, the comparable summary of a fold."""
        return {i: r.state for i, r in self.inputs.items()}

    def snapshot(self) -> dict:
        """Every record as plain data, for equality checks between two folds."""
        return {
            "inputs": {k: v.to_row() for k, v in sorted(self.inputs.items())},
            "turns": {k: v.to_row() for k, v in sorted(self.turns.items())},
            "calls": {k: v.to_row() for k, v in sorted(self.calls.items())},
        }


#: transitions the model does not witness in its own conversation: a reconciliation decision or
#: a reopening recorded from the command line, a crash found after the fact. Until a context
#: carrying the new state is delivered (``context_delivered``), the model has not seen it.
UNWITNESSED = frozenset({"reconciled", "reopened", "crash_detected",
                         "crash_detected_with_open_tool"})


def _move(view: StateView, rec: InputRecord, trigger: str, seq: int) -> None:
    rec.state = next_state(rec.state, trigger, rec.input_id)
    rec.updated_seq = seq
    rec.last_trigger = trigger
    rec.awaits_delivery = trigger in UNWITNESSED and rec.state in ACTIONABLE
    view.put_input(rec)


def _turn(view: StateView, turn_id: str, seq: int) -> TurnRecord:
    turn = view.get_turn(turn_id)
    if turn is None:
        turn = TurnRecord(turn_id=turn_id, started_seq=seq)
    return turn


def _attach(view: StateView, rec: InputRecord, turn_id: str | None, seq: int) -> None:
    """Bind an input to the turn it was delivered in (the turn whose end decides it)."""
    if not turn_id:
        return
    rec.turn_id = turn_id
    view.put_input(rec)
    turn = _turn(view, turn_id, seq)
    if rec.input_id not in turn.input_ids:
        turn.input_ids.append(rec.input_id)
    if turn.status != "running":
        # A runtime that reuses a turn id for new input has started that turn again; the end
        # that closed it decided the inputs it had (otherwise one input's state would hang on
        # whether another input reused the id).
        turn.status, turn.ended_seq = "running", None
        turn.decided_input_ids = list(turn.input_ids)
    if rec.input_id in turn.decided_input_ids:
        turn.decided_input_ids.remove(rec.input_id)
    view.put_turn(turn)


def _admit(view, seq, data) -> str:
    input_id = data["input_id"]
    if view.get_input(input_id) is not None:
        return "duplicate"
    queued = bool(data.get("queued"))
    rec = InputRecord(
        input_id=input_id,
        state=NEW,
        text=data.get("text", ""),
        queued=queued,
        ordinal=int(data.get("ordinal") or 0),
        admitted_seq=seq,
        id_source=data.get("id_source", "runtime"),
        attachments=list(data.get("attachments") or []),
    )
    _move(view, rec, "admitted_while_busy" if queued else "admitted", seq)
    if not queued:
        _attach(view, rec, data.get("turn_id"), seq)
    else:
        rec.turn_id = data.get("turn_id")
        view.put_input(rec)
    return "admitted"


def _deliver(view, seq, data) -> str:
    rec = view.get_input(data["input_id"])
    if rec is None:
        raise IllegalTransition(NEW, "delivered", data["input_id"])
    _move(view, rec, "delivered", seq)
    _attach(view, rec, data.get("turn_id") or rec.turn_id, seq)
    return "applied"


def alias_of(call_id: str, turn_id: str) -> str:
    """The record key of a runtime call id reused in another turn."""
    return f"{call_id}@{turn_id}"


def call_key(view: StateView, call_id: str, turn_id: str | None, *, starting: bool = False) -> str:
    """The record a runtime call id names in ``turn_id``.

    Some providers number call ids per process (``call_0_0`` again in a later turn): a call
    id is unique only within its turn. The first call keeps the runtime's id; the same id in
    another turn is a call of its own, keyed ``id@turn``. An outcome whose call is still open
    belongs to that call whatever turn the hook names (a late PostToolUse after the next turn
    started); a start never joins a call of another turn."""
    if turn_id:
        alias = alias_of(call_id, turn_id)
        if view.get_call(alias) is not None:
            return alias
    existing = view.get_call(call_id)
    if existing is None or not turn_id or existing.turn_id in (None, turn_id):
        return call_id
    if not starting and existing.status in ("in_flight", "unknown"):
        return call_id
    return alias_of(call_id, turn_id)


def resolve_call(view: StateView, call_id: str, turn_id: str | None):
    """The record an event's (call id, turn) names, for readers of the log: the ``id@turn``
    record when one exists, else the runtime's id."""
    if turn_id:
        found = view.get_call(alias_of(call_id, turn_id))
        if found is not None:
            return found
    return view.get_call(call_id)


def _tool_started(view, seq, data) -> str:
    turn_id = data.get("turn_id")
    call_id = call_key(view, data["call_id"], turn_id, starting=True)
    if view.get_call(call_id) is not None:
        return "duplicate"
    call = ToolCallRecord(
        call_id=call_id,
        turn_id=turn_id,
        tool=data.get("tool", ""),
        args=data.get("args") or {},
        started_seq=seq,
        started_at=data.get("started_at"),
    )
    if call_id != data["call_id"]:
        call.runtime_call_id = data["call_id"]
    view.put_call(call)
    if turn_id:
        turn = _turn(view, turn_id, seq)
        turn.open_calls.append(call_id)
        view.put_turn(turn)
    return "applied"


def _settle_inputs(view, call: ToolCallRecord, seq: int, *, via: str, leaves_work: bool):
    """Release the inputs ``call`` held in `reconciling` once none of their calls is unknown.

    The input becomes handled only when its turn had completed and every settled call is known
    to have done its work; otherwise it is actionable again (pending after a decision,
    interrupted after a late outcome of a cut turn)."""
    turn = view.get_turn(call.turn_id) if call.turn_id else None
    if turn is None:
        return
    for input_id in turn.input_ids:
        rec = view.get_input(input_id)
        if rec is None or rec.state != RECONCILING or call.call_id not in rec.unknown_calls:
            continue
        rec.unknown_calls.remove(call.call_id)
        rec.work_remains = rec.work_remains or leaves_work
        if rec.unknown_calls:
            view.put_input(rec)
            continue
        done = rec.cut_by == "completed" and not rec.work_remains
        if done:
            trigger = "tool_finished_after_turn_completed" if via == "outcome" else "reconciled_turn_completed"
        elif via == "outcome" and not rec.work_remains:
            trigger = "tool_finished_after_turn_cut"  # the call is known, its turn was cut
        else:
            trigger = "reconciled"  # a decision left work to do
        _move(view, rec, trigger, seq)


def _tool_finished(view, seq, data) -> str:
    call_id = call_key(view, data["call_id"], data.get("turn_id"))
    call = view.get_call(call_id)
    if call is None:  # an outcome whose start we never saw (hooks installed mid-call)
        call = ToolCallRecord(call_id=call_id, turn_id=data.get("turn_id"), started_seq=seq,
                              tool=data.get("tool", ""), args=data.get("args") or {})
        if call_id != data["call_id"]:
            call.runtime_call_id = data["call_id"]
    elif call.finished_seq is not None:
        return "duplicate"
    if call.status == "rolled_back":
        # the outcome of a call on a discarded branch: kept as a fact, the call stays hidden
        call.finished_seq = seq
        call.outcome = {k: data[k] for k in ("exit_code", "output", "error") if k in data}
        call.outcome["status"] = data.get("status") or "ok"
        view.put_call(call)
        return "applied"
    was_unknown = call.status == "unknown"
    call.status = data.get("status") or "ok"
    call.finished_seq = seq
    call.outcome = {k: data[k] for k in ("exit_code", "output", "error") if k in data}
    view.put_call(call)
    if call.turn_id:
        turn = view.get_turn(call.turn_id)
        if turn is not None and call_id in turn.open_calls:
            turn.open_calls.remove(call_id)
            view.put_turn(turn)
    if was_unknown:
        _settle_inputs(view, call, seq, via="outcome", leaves_work=False)
    return "applied"


def _end_turn(view, seq, turn: TurnRecord, how: str, trigger: str, trigger_open: str) -> None:
    """Close a turn: its pending inputs become handled/interrupted, or reconciling when a call
    of the turn has no outcome. An input delivered into a later turn (``_attach``) is still
    listed here but is decided by the turn it is bound to now: otherwise a crash, ending every
    running turn, decided it by whichever turn came first (insertion order in memory, turn id
    order in SQL: interrupted in one, reconciling in the other)."""
    open_calls = list(turn.open_calls)
    for call_id in open_calls:
        call = view.get_call(call_id)
        if call is not None and call.status == "in_flight":
            call.status = "unknown"
            view.put_call(call)
    for input_id in turn.input_ids:
        rec = view.get_input(input_id)
        if (rec is None or rec.state != PENDING or rec.turn_id not in (None, turn.turn_id)
                or input_id in turn.decided_input_ids):
            continue
        if open_calls:
            rec.unknown_calls = list(open_calls)
            rec.cut_by = how
            _move(view, rec, trigger_open, seq)
        else:
            _move(view, rec, trigger, seq)
    turn.status = how
    turn.ended_seq = seq
    view.put_turn(turn)


def _turn_completed(view, seq, data) -> str:
    turn = view.get_turn(data["turn_id"])
    if turn is None or turn.status != "running":
        return "ignored"
    _end_turn(view, seq, turn, "completed", "turn_completed", "turn_completed_with_open_tool")
    return "applied"


def _turn_aborted(view, seq, data) -> str:
    turn = view.get_turn(data["turn_id"])
    if turn is None or turn.status != "running":
        return "ignored"
    _end_turn(view, seq, turn, "aborted", "turn_aborted", "turn_aborted_with_open_tool")
    return "applied"


def _crash_detected(view, seq, data) -> str:
    for turn in list(view.running_turns()):
        _end_turn(view, seq, turn, "crashed", "crash_detected", "crash_detected_with_open_tool")
    # pending inputs that never reached a turn (no turn id from the runtime)
    for rec in list(view.inputs_in_states((PENDING,))):
        if not rec.turn_id:
            _move(view, rec, "crash_detected", seq)
    return "applied"


def _reconciled(view, seq, data) -> str:
    call = view.get_call(data["call_id"])
    if call is None:
        raise IllegalTransition(NEW, "reconciled", data["call_id"])
    if call.status not in ("unknown", "in_flight"):
        raise IllegalTransition(call.status, "reconciled", data["call_id"])
    decision = data["decision"]
    if decision not in ("applied", "not_applied", "retry_safe"):
        raise ValueError(f"unknown reconciliation decision {decision!r}")
    call.status, call.decision, call.finished_seq = "reconciled", decision, seq
    view.put_call(call)
    if call.turn_id:
        turn = view.get_turn(call.turn_id)
        if turn is not None and call.call_id in turn.open_calls:
            turn.open_calls.remove(call.call_id)
            view.put_turn(turn)
    _settle_inputs(view, call, seq, via="decision", leaves_work=decision != "applied")
    return "applied"


def _rolled_back(view, seq, data, history: History | None) -> str:
    """Everything after ``to_seq`` leaves the current view: state as of ``to_seq``, plus the
    later inputs marked `rolled_back` and their tool calls hidden. The log stays append-only."""
    if history is None:
        raise ValueError("a rollback needs the event history to replay")
    to_seq = int(data["to_seq"])
    if not 0 <= to_seq < seq:
        raise IllegalTransition(f"seq {seq}", f"rolled_back to {to_seq}")
    restore = getattr(view, "rewind_to", None)
    if restore is not None:  # the store's view: read only what came after, restore only that
        later, later_calls = view.inputs_after(to_seq), view.calls_after(to_seq)
    else:
        later = [r for r in view.all_inputs() if r.admitted_seq > to_seq]
        later_calls = [c for c in view.all_calls() if c.started_seq > to_seq]
    # superseded and already rolled-back inputs stay as they are (both are terminal)
    later_inputs = [r for r in later if allowed(r.state, "rolled_back")]
    already = [r for r in later if not allowed(r.state, "rolled_back")]
    if restore is None or not restore(to_seq):  # no earlier versions that far back: replay
        view.reset()
        for event in history(to_seq):
            apply(view, event, history)
    for rec in later_inputs:
        rec.state = next_state(rec.state, "rolled_back", rec.input_id)
        rec.updated_seq, rec.last_trigger = seq, "rolled_back"
        view.put_input(rec)
    for rec in already:
        view.put_input(rec)
    for call in later_calls:
        call.status = "rolled_back"
        view.put_call(call)
    return "reset"


def _explicit(trigger: str):
    def handle(view, seq, data) -> str:
        rec = view.get_input(data["input_id"])
        if rec is None:
            raise IllegalTransition(NEW, trigger, data["input_id"])
        _move(view, rec, trigger, seq)
        if trigger == "reopened" and rec.turn_id:
            # reopened work is decided by the next turn that completes after it
            rec.turn_id = None
            view.put_input(rec)
        return "applied"

    return handle


def _tool_exit_code(view, seq, data) -> str:
    """The exit code of a finished call, learnt after its PostToolUse. Input states do not
    depend on it (a completed turn is handled whatever its commands returned)."""
    call = view.get_call(data["call_id"])
    if call is None or call.finished_seq is None or call.status not in ("ok", "error"):
        return "ignored"
    code = data.get("exit_code")
    if not isinstance(code, int) or call.outcome.get("exit_code") is not None:
        return "ignored"
    call.outcome = {**call.outcome, "exit_code": code}
    if code != 0:
        call.status = "error"
    view.put_call(call)
    return "applied"


def _context_delivered(view, seq, data) -> str:
    """A context was handed to the model: it carries every input's current state (a delivery
    commits a checkpoint of the state as of now first), so none awaits delivery any more."""
    changed = "ignored"
    for rec in view.inputs_in_states(ACTIONABLE):
        if rec.awaits_delivery:
            rec.awaits_delivery = False
            view.put_input(rec)
            changed = "applied"
    return changed


_HANDLERS = {
    ev.INPUT_ADMITTED: _admit,
    ev.INPUT_DELIVERED: _deliver,
    ev.TOOL_STARTED: _tool_started,
    ev.TOOL_FINISHED: _tool_finished,
    ev.TOOL_EXIT_CODE: _tool_exit_code,
    ev.CONTEXT_DELIVERED: _context_delivered,
    ev.TURN_COMPLETED: _turn_completed,
    ev.TURN_ABORTED: _turn_aborted,
    ev.CRASH_DETECTED: _crash_detected,
    ev.RECONCILED: _reconciled,
    ev.INPUT_SUPERSEDED: _explicit("superseded"),
    ev.INPUT_REOPENED: _explicit("reopened"),
}


def apply(view: StateView, event: dict, history: History | None = None) -> str:
    """Fold one event into ``view``. Returns what happened: ``admitted``, ``duplicate``,
    ``applied``, ``ignored`` (no lifecycle effect: claims, settings, unknown types) or
    ``reset`` (a rollback rebuilt the view). Raises :class:`IllegalTransition` for a fact the
    lifecycle forbids; the caller does not record such an event."""
    etype = event["type"]
    seq = int(event["seq"])
    data = event.get("data") or {}
    if etype == ev.ROLLED_BACK:
        return _rolled_back(view, seq, data, history)
    handler = _HANDLERS.get(etype)
    if handler is None:
        return "ignored"
    return handler(view, seq, data)


def fold(events: Iterable[dict], state: ThreadState | None = None) -> ThreadState:
    """Replay ``events`` (in seq order) onto ``state`` (a fresh one by default)."""
    state = state if state is not None else ThreadState()
    seen = state.events

    def history(upto: int) -> Iterator[dict]:
        return (e for e in list(seen) if int(e["seq"]) <= upto)

    for event in events:
        apply(state, event, history)
        seen.append(event)
        state.last_seq = int(event["seq"])
    return state
