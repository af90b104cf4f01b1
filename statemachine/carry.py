"""The one rule that decides an interrupted input later: the next turn that completes cleanly.

An input left ``interrupted`` (its turn was aborted or cut: Esc, a crash, a new prompt) or
``pending`` on a turn that is over was part of the conversation the next turn worked from. When
that turn completes cleanly, it decides them together with its own input: they are delivered
into it just before its completion (so they become ``handled`` with it). Not when:

- the turn leaves a tool call without an outcome (it did not complete cleanly: the inputs keep
  their own state rather than wait on a call that is not theirs);
- the turn has no user input of its own (a turn Claude Code ran for a ``<task-notification>``:
  the model answered a runtime fact, not the user);
- the input is ``reconciling`` (it waits for its own decision) or ``queued`` (never seen);
- the input's current state never reached the model (``awaits_delivery``: a decision recorded
  with ``continuation reconcile``, a reopening, a crash found afterwards, and no context has
  been delivered since). The engine makes the next SessionStart or UserPromptSubmit deliver
  such a state; until then an unrelated turn's completion says nothing about it.

The other input decided by what comes later: a text left ``queued`` with no turn (an import
of a file that ended while it waited) that the user's next prompt sends. That prompt is its
delivery, not a second input (:func:`queued_twin`).

Used by the hooks and by the transcript importer, so a hook-recorded thread and an imported one
of the same session end in the same states.
"""
from __future__ import annotations

from statemachine.lifecycle import INTERRUPTED, PENDING, QUEUED


def carried_into(view, turn_id: str | None) -> list[str]:
    """Input ids to deliver into ``turn_id`` right before it completes (see the module doc)."""
    turn = view.get_turn(turn_id) if turn_id else None
    if turn is None or turn.status != "running" or turn.open_calls or not turn.input_ids:
        return []
    return [r.input_id for r in view.inputs_in_states((PENDING, INTERRUPTED))
            if r.turn_id != turn_id and not r.awaits_delivery]


def queued_twin(view, text: str):
    """The still-queued input with exactly ``text`` that never reached a turn, or ``None``."""
    return next((r for r in view.inputs_in_states((QUEUED,))
                 if not r.turn_id and r.text == text), None)
