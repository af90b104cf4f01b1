"""The rules that decide an input by what comes after it, as events over a state view.

Written against a view (``continuation.store.view.SqlStateView``) and returning ``(type,
data)`` pairs, so the same rule serves a writer appending one fact at a time
(:class:`continuation.session.recording.Recorder`) and the transcript importer writing a whole
file in one transaction (``continuation.importers.apply``), each view seeing what its writer
wrote before. The rules themselves are the reducer's neighbours in :mod:`statemachine.carry`.
"""
from __future__ import annotations

from statemachine.carry import carried_into, queued_twin

from continuation.session import facts

__all__ = ["carried", "queued_twin", "sent_twin"]


def carried(view, turn_id: str, via: str | None = None) -> list[tuple[str, dict]]:
    """Before ``turn_id`` completes cleanly: the deliveries into it of the inputs left pending
    or interrupted on turns that are over, so its completion decides them."""
    return [facts.input_delivered(input_id, turn_id, via)
            for input_id in carried_into(view, turn_id)]


def sent_twin(view, text: str, turn_id: str):
    """The input a prompt of ``turn_id`` with ``text`` already is under another id: a text
    left queued with no turn (an import of the shorter file), or a queued input delivered into
    this turn before it started (a writer that saw the queue recorded it first); else ``None``."""
    twin = queued_twin(view, text)
    if twin is not None:
        return twin
    turn = view.get_turn(turn_id)
    for input_id in (turn.input_ids if turn else []):
        rec = view.get_input(input_id)
        if rec is not None and rec.text == text and rec.queued \
                and rec.admitted_seq < turn.started_seq:
            return rec
    return None
