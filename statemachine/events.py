"""The event vocabulary: every durable fact the engine records, by name.

An event is a plain mapping ``{"seq": int, "type": str, "data": dict}`` (the store adds
time and source). Plain dicts, not models, because the hook hot path folds them and must not
pay for pydantic. Three kinds, never mixed (see docs/design.md, "Facts vs claims"):

- ``input``: text the user sent (the only source of authority);
- ``fact``:  what the runtime observed;
- ``claim``: what the assistant said; never changes an input's state.

Payload fields (all optional unless marked *):

input_admitted    input_id*, text*, turn_id, queued (bool), ordinal, attachments (list),
                  id_source ("runtime" | "hash")
input_delivered   input_id*, turn_id      a queued (or interrupted) input given to the model
tool_started      call_id*, turn_id, tool, args (dict)   an id held by a call of another turn
                  names a new call, keyed ``id@turn`` (ids restart per provider process)
tool_finished     call_id*, status ("ok" | "error" | "unknown"), exit_code, output (excerpt)
tool_exit_code    call_id*, exit_code*    read later from the runtime's transcript (Codex hooks
                  carry no exit code): a finished call's outcome gains it; non-zero is an error
turn_completed    turn_id*                the runtime's end of a turn (Stop, task_complete)
turn_aborted      turn_id*, reason        user interrupt / turn_aborted
crash_detected    reason                  the owner of the session is gone without a clean end
reconciled        call_id*, decision* ("applied" | "not_applied" | "retry_safe"), note
rolled_back       to_seq*, checkpoint_id, reason    inputs admitted after to_seq are undone
input_superseded  input_id*, reason
input_reopened    input_id*, reason       the user explicitly reopens a handled input
assistant_claim   turn_id, text*          kind "claim"
boundary          kind* ("compact" | "resume" | "clear" | "fork" | "startup"), trigger
                  ("manual" | "auto"), generation
checkpoint_committed  checkpoint_id*, generation*, reason, sha256, snapshot_ref
context_delivered generation*, via ("session_start" | "user_prompt" | "cli")   the model
                  received every input's current state (clears ``awaits_delivery``)
session_started / session_ended / settings / plan_updated / background_task: runtime facts
                  that the capsule reports; the lifecycle ignores them.
guard_ran / guard_verdict / guard_delivered: the recovery loop's check, its verdict and
                  action, and what it told the model (continuation.session.guard_notes);
                  the lifecycle ignores them too.

Unknown types are kept in the log and ignored by the reducer, so a newer writer never breaks
an older reader.
"""
from __future__ import annotations

INPUT_ADMITTED = "input_admitted"
INPUT_DELIVERED = "input_delivered"
TOOL_STARTED = "tool_started"
TOOL_FINISHED = "tool_finished"
TURN_COMPLETED = "turn_completed"
TURN_ABORTED = "turn_aborted"
CRASH_DETECTED = "crash_detected"
RECONCILED = "reconciled"
ROLLED_BACK = "rolled_back"
INPUT_SUPERSEDED = "input_superseded"
INPUT_REOPENED = "input_reopened"
ASSISTANT_CLAIM = "assistant_claim"
BOUNDARY = "boundary"
CHECKPOINT_COMMITTED = "checkpoint_committed"
CONTEXT_DELIVERED = "context_delivered"
SESSION_STARTED = "session_started"
SESSION_ENDED = "session_ended"
SETTINGS = "settings"
PLAN_UPDATED = "plan_updated"
BACKGROUND_TASK = "background_task"
TOOL_EXIT_CODE = "tool_exit_code"

INPUT_TYPES = frozenset({INPUT_ADMITTED})
CLAIM_TYPES = frozenset({ASSISTANT_CLAIM})


def kind_of(event_type: str) -> str:
    """Which of the three kinds of information an event type carries."""
    if event_type in INPUT_TYPES:
        return "input"
    if event_type in CLAIM_TYPES:
        return "claim"
    return "fact"
