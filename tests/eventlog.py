"""A tiny builder of event logs for reducer tests."""
from __future__ import annotations

from statemachine.lifecycle import IllegalTransition
from statemachine.reducer import ThreadState, apply


class Log:
    """Records events like the store does: duplicates and illegal facts leave no trace."""

    def __init__(self):
        self.state = ThreadState()
        self.events: list[dict] = []

    def add(self, etype: str, **data) -> str:
        event = {"seq": len(self.events) + 1, "type": etype, "data": data}
        snapshot = self.state.snapshot()
        try:
            outcome = apply(self.state, event, lambda upto: [e for e in self.events
                                                             if e["seq"] <= upto])
        except IllegalTransition:
            assert self.state.snapshot() == snapshot, "an illegal fact mutated the state"
            return "illegal"
        if outcome == "duplicate":
            assert self.state.snapshot() == snapshot, "a duplicate changed the state"
            return outcome
        self.events.append(event)
        self.state.events.append(event)
        self.state.last_seq = event["seq"]
        return outcome

    def admit(self, input_id, turn="t1", text=None, queued=False):
        return self.add("input_admitted", input_id=input_id, text=text or f"do {input_id}",
                        turn_id=turn, queued=queued)

    def states(self):
        return self.state.states()
