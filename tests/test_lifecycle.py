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


def test_the_fast_path_refuses_a_row_it_could_not_honour():
    """A condition or callback runs in the machine but not in the dict lookup: refused, so the
    two readers of the table cannot silently disagree."""
    with pytest.raises(ValueError, match="conditions"):
        lifecycle._compile([{"trigger": "t", "source": "new", "dest": "pending",
                             "conditions": "ready"}])


def test_the_fast_path_refuses_an_ambiguous_row():
    """The machine would take the first of two rows; the table must not rely on order."""
    with pytest.raises(ValueError, match="ambiguous"):
        lifecycle._compile([{"trigger": "t", "source": "new", "dest": "pending"},
                            {"trigger": "t", "source": ["new"], "dest": "queued"}])


def test_an_unknown_trigger_is_illegal_everywhere():
    for state in STATES:
        with pytest.raises(IllegalTransition):
            next_state(state, "not_a_trigger")


def test_the_capsule_spells_the_lifecycles_states():
    """Every state but the pseudo-state ``new``; the historical ones are the terminal ones."""
    from capsule.states import HISTORICAL_STATES, INPUT_STATES

    assert INPUT_STATES == tuple(s for s in STATES if s != lifecycle.NEW)
    assert HISTORICAL_STATES == lifecycle.TERMINAL
