"""The transitions table is the single definition: the fast path agrees with the Machine."""
from __future__ import annotations

import pytest
from transitions.core import MachineError

from statemachine import lifecycle
from statemachine.lifecycle import STATES, TRIGGERS, IllegalTransition, next_state


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_fast_path_agrees_with_transitions_machine(state, trigger):
    machine = lifecycle.machine()

    class Probe:
        pass

    probe = Probe()
    machine.add_model(probe, initial=state)
    try:
        getattr(probe, trigger)()
        expected = probe.state
    except MachineError:
        expected = None
    if expected is None:
        with pytest.raises(IllegalTransition):
            next_state(state, trigger)
    else:
        assert next_state(state, trigger) == expected


def test_illegal_transition_is_typed_and_names_the_input():
    with pytest.raises(IllegalTransition) as info:
        next_state("handled", "turn_completed", "in-1")
    assert info.value.state == "handled" and info.value.trigger == "turn_completed"
    assert "in-1" in str(info.value)


def test_handled_leaves_only_by_explicit_user_action():
    exits = {t for t in TRIGGERS if lifecycle.allowed("handled", t)}
    assert exits == {"rolled_back", "reopened"}


def test_every_state_named_in_design_exists():
    for name in ("queued", "pending", "handled", "reconciling", "interrupted", "superseded",
                 "rolled_back"):
        assert name in STATES


def test_mermaid_diagram_is_generated_from_the_table():
    text = lifecycle.mermaid()
    assert text.lstrip("-\n").startswith("Input lifecycle") or "stateDiagram" in text
    for row in lifecycle.TRANSITIONS:
        sources = row["source"] if isinstance(row["source"], list) else [row["source"]]
        for source in sources:
            assert f"{source} --> {row['dest']}" in text
        assert row["trigger"] in text


def test_the_capsule_names_the_lifecycles_actionable_states():
    """capsule/ imports nothing of statemachine/, so it spells the set once itself."""
    from capsule.states import ACTIONABLE_STATES

    assert ACTIONABLE_STATES == lifecycle.ACTIONABLE
