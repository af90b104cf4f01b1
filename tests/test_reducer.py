"""The fold decides input states from runtime facts only."""
from __future__ import annotations

from statemachine.reducer import fold

from eventlog import Log


def test_admission_is_exactly_once():
    log = Log()
    assert log.admit("a") == "admitted"
    assert log.admit("a") == "duplicate"
    assert log.admit("a", turn="t9", text="other text") == "duplicate"
    assert len(log.events) == 1
    assert log.states() == {"a": "pending"}


def test_turn_completion_marks_handled_only_inputs_delivered_before_it():
    log = Log()
    log.admit("a", turn="t1")
    log.admit("b", turn="t1")  # steered into the same turn
    log.admit("q", turn="t1", queued=True)  # typed while busy, not yet seen by the model
    log.add("turn_completed", turn_id="t1")
    log.admit("c", turn="t1")  # arrives after the final response
    assert log.states() == {"a": "handled", "b": "handled", "q": "queued", "c": "pending"}


def test_steered_inputs_keep_separate_states():
    log = Log()
    log.admit("a", turn="t1")
    log.add("turn_completed", turn_id="t1")
    log.admit("b", turn="t2")
    log.add("tool_started", call_id="c1", turn_id="t2")
    log.admit("c", turn="t3")
    log.add("turn_aborted", turn_id="t3")
    assert log.states() == {"a": "handled", "b": "pending", "c": "interrupted"}


def test_assistant_claim_never_marks_handled():
    log = Log()
    log.admit("a")
    log.add("assistant_claim", text="done! everything is handled", turn_id="t1")
    assert log.states() == {"a": "pending"}


def test_aborted_turn_leaves_input_actionable():
    log = Log()
    log.admit("a")
    log.add("turn_aborted", turn_id="t1", reason="interrupted")
    assert log.states() == {"a": "interrupted"}
    # the interrupted input is delivered again (a new context) and that turn completes
    log.add("input_delivered", input_id="a", turn_id="t2")
    log.add("turn_completed", turn_id="t2")
    assert log.states() == {"a": "handled"}


def test_completion_with_open_tool_call_reconciles_and_late_outcome_settles():
    log = Log()
    log.admit("a")
    log.add("tool_started", call_id="c1", turn_id="t1", tool="Bash")
    log.add("turn_completed", turn_id="t1")
    assert log.states() == {"a": "reconciling"}
    assert log.state.calls["c1"].status == "unknown"
    log.add("tool_finished", call_id="c1", status="ok")
    assert log.states() == {"a": "handled"}


def test_crash_mid_tool_reconciles_and_decision_is_a_fact():
    log = Log()
    log.admit("a")
    log.add("tool_started", call_id="c1", turn_id="t1")
    log.admit("b", turn="t2")
    log.add("crash_detected", reason="owner gone")
    assert log.states() == {"a": "reconciling", "b": "interrupted"}
    assert log.add("reconciled", call_id="c1", decision="applied") == "applied"
    # applied, but the turn never completed: the input is actionable again, not handled
    assert log.states()["a"] == "pending"
    assert log.add("reconciled", call_id="c1", decision="applied") == "illegal"


def test_reconciled_after_completed_turn_becomes_handled():
    log = Log()
    log.admit("a")
    log.add("tool_started", call_id="c1", turn_id="t1")
    log.add("turn_completed", turn_id="t1")
    log.add("reconciled", call_id="c1", decision="applied")
    assert log.states() == {"a": "handled"}


def test_two_unknown_calls_hold_the_input_until_both_settle():
    log = Log()
    log.admit("a")
    log.add("tool_started", call_id="c1", turn_id="t1")
    log.add("tool_started", call_id="c2", turn_id="t1")
    log.add("turn_completed", turn_id="t1")
    log.add("reconciled", call_id="c1", decision="not_applied")
    assert log.states() == {"a": "reconciling"}
    log.add("tool_finished", call_id="c2")
    assert log.states() == {"a": "pending"}  # one call was not applied: work remains


def test_illegal_explicit_facts_are_refused():
    log = Log()
    log.admit("a")
    log.add("turn_completed", turn_id="t1")
    assert log.add("input_delivered", input_id="a", turn_id="t2") == "illegal"
    assert log.add("input_superseded", input_id="a") == "illegal"
    assert log.add("input_delivered", input_id="nope") == "illegal"
    assert log.add("input_reopened", input_id="a") == "applied"
    assert log.states() == {"a": "pending"}


def test_rollback_restores_state_as_of_the_point_and_marks_later_inputs():
    log = Log()
    log.admit("a", turn="t1")  # seq 1
    log.add("tool_started", call_id="c1", turn_id="t1")  # 2
    point = len(log.events)
    log.add("tool_finished", call_id="c1")  # 3
    log.add("turn_completed", turn_id="t1")  # 4
    log.admit("b", turn="t2")  # 5
    log.add("tool_started", call_id="c2", turn_id="t2")  # 6
    log.add("rolled_back", to_seq=point, reason="bad approach")
    assert log.states() == {"a": "pending", "b": "rolled_back"}
    assert log.state.calls["c2"].status == "rolled_back"
    assert log.state.calls["c1"].status == "in_flight"
    # rewinding twice: the second rollback goes further back
    log.add("rolled_back", to_seq=0)
    assert log.states() == {"a": "rolled_back", "b": "rolled_back"}


def test_unknown_event_types_are_ignored():
    log = Log()
    log.admit("a")
    assert log.add("some_future_fact", anything=1) == "ignored"
    assert log.states() == {"a": "pending"}


def test_fold_equals_live_application():
    log = Log()
    for i in range(50):
        log.admit(f"i{i}", turn=f"t{i // 3}")
        if i % 3 == 2:
            log.add("turn_completed", turn_id=f"t{i // 3}")
    assert fold(log.events).snapshot() == log.state.snapshot()


def test_fold_of_100k_inputs_is_linear_enough_to_finish():
    # Behaviour, not timing: 100,000 inputs in 50,000 turns fold to the right states.
    events, seq = [], 0
    for t in range(50_000):
        for k in range(2):
            seq += 1
            events.append({"seq": seq, "type": "input_admitted",
                           "data": {"input_id": f"i{t}-{k}", "text": "x", "turn_id": f"t{t}"}})
        if t % 2 == 0:
            seq += 1
            events.append({"seq": seq, "type": "turn_completed", "data": {"turn_id": f"t{t}"}})
    state = fold(events)
    assert len(state.inputs) == 100_000
    assert sum(1 for r in state.inputs.values() if r.state == "handled") == 50_000


def test_outcome_arriving_after_a_rewind_keeps_the_call_hidden():
    log = Log()
    log.admit("a", turn="t1")
    point = len(log.events)
    log.admit("b", turn="t2")
    log.add("tool_started", call_id="c2", turn_id="t2")
    log.add("rolled_back", to_seq=point)
    log.add("tool_finished", call_id="c2", status="ok", exit_code=0)
    call = log.state.calls["c2"]
    assert call.status == "rolled_back" and call.outcome["exit_code"] == 0
    assert log.states() == {"a": "pending", "b": "rolled_back"}
    assert fold(log.events).snapshot() == log.state.snapshot()
