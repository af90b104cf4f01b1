"""Properties of the fold over random event sequences (hypothesis)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemachine.lifecycle import HANDLED
from statemachine.reducer import ThreadState, apply, fold

from eventlog import Log

INPUTS = [f"i{n}" for n in range(5)]
TURNS = ["t1", "t2", "t3"]
CALLS = ["c1", "c2", "c3"]

runtime_fact = st.one_of(
    st.builds(lambda i, t, q: ("input_admitted", {"input_id": i, "text": f"do {i}", "turn_id": t,
                                                  "queued": q}),
              st.sampled_from(INPUTS), st.sampled_from(TURNS), st.booleans()),
    st.builds(lambda i, t: ("input_delivered", {"input_id": i, "turn_id": t}),
              st.sampled_from(INPUTS), st.sampled_from(TURNS)),
    st.builds(lambda c, t: ("tool_started", {"call_id": c, "turn_id": t}),
              st.sampled_from(CALLS), st.sampled_from(TURNS)),
    st.builds(lambda c, s: ("tool_finished", {"call_id": c, "status": s}),
              st.sampled_from(CALLS), st.sampled_from(["ok", "error"])),
    st.builds(lambda t: ("turn_completed", {"turn_id": t}), st.sampled_from(TURNS)),
    st.builds(lambda t: ("turn_aborted", {"turn_id": t}), st.sampled_from(TURNS)),
    st.just(("crash_detected", {"reason": "test"})),
    st.builds(lambda c, d: ("reconciled", {"call_id": c, "decision": d}),
              st.sampled_from(CALLS), st.sampled_from(["applied", "not_applied", "retry_safe"])),
    st.builds(lambda t: ("assistant_claim", {"text": "done!", "turn_id": t}), st.sampled_from(TURNS)),
)
user_action = st.one_of(
    st.builds(lambda i: ("input_reopened", {"input_id": i}), st.sampled_from(INPUTS)),
    st.builds(lambda i: ("input_superseded", {"input_id": i}), st.sampled_from(INPUTS)),
    st.builds(lambda n: ("rolled_back", {"to_seq": n}), st.integers(0, 30)),
)
any_event = st.one_of(runtime_fact, user_action)


def _record(items) -> Log:
    log = Log()
    for etype, data in items:
        log.add(etype, **data)
    return log


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(runtime_fact, max_size=40))
def test_handled_never_returns_to_actionable_through_runtime_facts(items):
    log = Log()
    handled: set[str] = set()
    for etype, data in items:
        log.add(etype, **data)
        for input_id, state in log.states().items():
            if input_id in handled:
                assert state == HANDLED, f"{input_id} left handled after {etype}"
            if state == HANDLED:
                handled.add(input_id)


@settings(max_examples=300)
@given(st.lists(any_event, max_size=40), st.data())
def test_admission_is_idempotent(items, data):
    log = _record(items)
    before = log.state.snapshot()
    admitted = [e for e in log.events if e["type"] == "input_admitted"]
    if admitted:
        again = data.draw(st.sampled_from(admitted))
        assert log.add("input_admitted", **again["data"]) == "duplicate"
    assert log.state.snapshot() == before


@settings(max_examples=300)
@given(st.lists(any_event, max_size=40), st.integers(0, 40))
def test_replay_of_prefix_then_suffix_equals_replay_of_whole(items, cut):
    log = _record(items)
    cut = min(cut, len(log.events))
    whole = fold(log.events)
    split = fold(log.events[cut:], state=fold(log.events[:cut]))
    assert split.snapshot() == whole.snapshot() == log.state.snapshot()


@settings(max_examples=300)
@given(st.lists(runtime_fact, max_size=30))
def test_inputs_in_one_turn_are_independent(items):
    """An input's state does not depend on facts about other input ids: removing every
    event that names only another input leaves this one's state unchanged."""
    log = _record(items)
    for target in log.states():
        kept = [e for e in log.events
                if e["type"] not in ("input_admitted", "input_delivered")
                or e["data"]["input_id"] == target]
        alone = _record([(e["type"], e["data"]) for e in kept])
        assert alone.states()[target] == log.states()[target]


@settings(max_examples=60, deadline=None)
@given(st.lists(any_event, max_size=30))
def test_store_derived_tables_equal_the_pure_fold(tmp_path_factory, items):
    from continuation.store import IllegalFact, SqliteStore

    store = SqliteStore(tmp_path_factory.mktemp("db") / "s.sqlite3")
    key = store.ensure_thread("codex", "s")
    for etype, data in items:
        try:
            store.append(key, etype, data, source="test")
        except IllegalFact:
            pass
    assert store.derived_state(key).snapshot() == store.replay(key).snapshot()
    assert store.replay(key).snapshot() == _record(items).state.snapshot()
    store.close()


def test_an_input_delivered_into_another_turn_is_decided_by_that_turn_whatever_the_order(
        tmp_path):
    """Found by the property above: an input admitted in t2 and delivered into t1, whose call is
    in flight at a crash. Both running turns end at the crash and both list the input; the turn
    it is bound to (t1, with the open call) decides: reconciling, in the store's incremental
    tables (turns read in id order) as in the pure fold (turns in the order they began)."""
    from continuation.store import SqliteStore

    items = [("input_admitted", {"input_id": "i0", "text": "do i0", "turn_id": "t2"}),
             ("input_delivered", {"input_id": "i0", "turn_id": "t1"}),
             ("tool_started", {"call_id": "c1", "turn_id": "t1"}),
             ("crash_detected", {"reason": "test"})]
    store = SqliteStore(tmp_path / "s.sqlite3")
    key = store.ensure_thread("codex", "s")
    for etype, data in items:
        store.append(key, etype, data, source="test")
    states = [store.derived_state(key), store.replay(key), _record(items).state]
    assert [s.snapshot()["inputs"]["i0"]["state"] for s in states] == ["reconciling"] * 3
    store.close()


def test_a_turn_id_reused_after_a_crash_decides_only_what_it_was_given_since(tmp_path):
    """Found by the independence property: i0's turn crashed with a call open, the runtime
    reused the turn id for i1, the call was then decided applied and the turn completed. The
    completion is i1's; i0, pending again after the decision as it is without i1, stays
    pending (it was handled only when i1 happened to reuse the id), in the store as in the
    pure fold. Delivered into the reused turn, i0 is decided by it again."""
    from continuation.store import SqliteStore

    items = [("tool_started", {"call_id": "c1", "turn_id": "t1"}),
             ("input_admitted", {"input_id": "i0", "text": "do i0", "turn_id": "t1"}),
             ("crash_detected", {"reason": "test"}),
             ("input_admitted", {"input_id": "i1", "text": "do i1", "turn_id": "t1"}),
             ("reconciled", {"call_id": "c1", "decision": "applied"}),
             ("turn_completed", {"turn_id": "t1"})]
    store = SqliteStore(tmp_path / "s.sqlite3")
    key = store.ensure_thread("codex", "s")
    for etype, data in items:
        store.append(key, etype, data, source="test")
    states = [store.derived_state(key), store.replay(key), _record(items).state]
    assert [s.states() for s in states] == [{"i0": "pending", "i1": "handled"}] * 3
    store.close()
    redelivered = items[:5] + [("input_delivered", {"input_id": "i0", "turn_id": "t1"}),
                               ("turn_completed", {"turn_id": "t1"})]
    assert _record(redelivered).states() == {"i0": "handled", "i1": "handled"}
