"""Replaying random logs: every state the reducer gives an input is the state the `transitions`
machine reaches from ``new`` with the same triggers (no state is set beside the table)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from statemachine import lifecycle, reducer
from statemachine.lifecycle import NEW

from eventlog import Log

INPUTS = ("a", "b", "c")
TURNS = ("t1", "t2", "t3")
CALLS = ("c1", "c2", "c3")

step = st.one_of(
    st.tuples(st.just("admit"), st.sampled_from(INPUTS), st.sampled_from(TURNS), st.booleans()),
    st.tuples(st.just("input_delivered"), st.sampled_from(INPUTS), st.sampled_from(TURNS)),
    st.tuples(st.just("tool_started"), st.sampled_from(CALLS), st.sampled_from(TURNS)),
    st.tuples(st.just("tool_finished"), st.sampled_from(CALLS), st.sampled_from(["ok", "error"])),
    st.tuples(st.just("turn_completed"), st.sampled_from(TURNS)),
    st.tuples(st.just("turn_aborted"), st.sampled_from(TURNS)),
    st.tuples(st.just("crash_detected")),
    st.tuples(st.just("reconciled"), st.sampled_from(CALLS),
              st.sampled_from(["applied", "not_applied", "retry_safe"])),
    st.tuples(st.just("input_superseded"), st.sampled_from(INPUTS)),
    st.tuples(st.just("input_reopened"), st.sampled_from(INPUTS)),
)


def _add(log: Log, op: tuple) -> str:
    kind = op[0]
    if kind == "admit":
        return log.admit(op[1], turn=op[2], queued=op[3])
    if kind == "input_delivered":
        return log.add(kind, input_id=op[1], turn_id=op[2])
    if kind == "tool_started":
        return log.add(kind, call_id=op[1], turn_id=op[2], tool="Bash")
    if kind == "tool_finished":
        return log.add(kind, call_id=op[1], status=op[2])
    if kind in ("turn_completed", "turn_aborted"):
        return log.add(kind, turn_id=op[1])
    if kind == "crash_detected":
        return log.add(kind)
    if kind == "reconciled":
        return log.add(kind, call_id=op[1], decision=op[2])
    return log.add(kind, input_id=op[1])


class MachineShadow:
    """One `transitions` model per input, driven by the triggers the reducer used."""

    def __init__(self):
        self.machine = lifecycle.machine()
        self.models: dict[str, object] = {}

    def move(self, input_id: str, trigger: str) -> str:
        model = self.models.get(input_id)
        if model is None:
            model = self.models[input_id] = type("Input", (), {})()
            self.machine.add_model(model, initial=NEW)
        getattr(model, trigger)()
        return model.state


@settings(max_examples=150, deadline=None)
@given(st.lists(step, max_size=40))
def test_the_reducer_moves_inputs_only_as_the_transitions_machine_does(ops):
    shadow = MachineShadow()
    moves: list[tuple[str, str]] = []
    real_next = reducer.next_state

    def recording_next(state, trigger, input_id=None):
        result = real_next(state, trigger, input_id)
        moves.append((input_id, trigger))
        return result

    reducer.next_state = recording_next
    try:
        log = Log()
        for op in ops:
            moves.clear()
            outcome = _add(log, op)
            if outcome in ("illegal", "duplicate"):
                continue  # the log keeps no trace of it; the state did not change
            for input_id, trigger in moves:
                shadow.move(input_id, trigger)
            states = log.states()
            assert states == {i: m.state for i, m in shadow.models.items() if i in states}, op
    finally:
        reducer.next_state = real_next
