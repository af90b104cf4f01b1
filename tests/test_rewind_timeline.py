"""The live branch after rewinds agrees with the reducer's rollback semantics."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from continuation.session.branch import discarded_branch, live_events
from statemachine.reducer import fold


def _log(kinds):
    """kinds: 'a' admits an input, ('r', t) rolls back to t."""
    out = []
    for seq, k in enumerate(kinds, 1):
        if k == "a":
            out.append({"seq": seq, "type": "input_admitted", "data": {"input_id": f"i{seq}", "text": str(seq)}})
        else:
            out.append({"seq": seq, "type": "rolled_back", "data": {"to_seq": k[1]}})
    return out


def seqs(events):
    return [e["seq"] for e in events]


def test_no_rollback_keeps_everything():
    log = _log(["a", "a", "a"])
    assert seqs(live_events(log)) == [1, 2, 3]


def test_rollback_drops_the_branch_after_its_target_and_stays_visible():
    log = _log(["a", "a", "a", ("r", 1), "a"])
    assert seqs(live_events(log)) == [1, 4, 5]
    branch = discarded_branch(log, 4)
    assert branch.to_seq == 1 and seqs(branch.events) == [2, 3]


def test_rewinding_into_a_discarded_branch_brings_it_back_like_the_reducer():
    # 1 2 3 | rollback to 1 at 4 | 5 | rollback to 2 at 6: event 2 was discarded by 4, and is
    # live again because the state "as of 2" had it (the reducer replays history(2))
    log = _log(["a", "a", "a", ("r", 1), "a", ("r", 2)])
    assert seqs(live_events(log)) == [1, 2, 6]
    assert seqs(discarded_branch(log, 6).events) == [4, 5]  # the earlier rollback fact too
    state = fold(log)
    assert {i for i, r in state.inputs.items() if r.state != "rolled_back"} == {"i1", "i2"}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.just("a"), st.integers(min_value=0, max_value=40)), min_size=1, max_size=40))
def test_live_inputs_are_exactly_the_reducers_not_rolled_back_inputs(raw):
    kinds = []
    for k in raw:
        if k == "a" or not kinds:
            kinds.append("a")
        else:
            kinds.append(("r", min(k, len(kinds))))  # a target before the rollback itself
    log = _log(kinds)
    live = {e["data"]["input_id"] for e in live_events(log) if e["type"] == "input_admitted"}
    state = fold(log)
    assert live == {i for i, r in state.inputs.items() if r.state != "rolled_back"}


def test_summary_of_an_unreadable_rollback_still_says_the_work_was_undone():
    from continuation.session.rewind_notes import TITLE_CORE, recovery_notices

    log = _log(["a", "a"]) + [{"seq": 3, "type": "rolled_back",
                               "data": {"to_seq": "not a number", "future_field": [1]}}]
    [n] = recovery_notices(log, thread_key="t")
    assert n.title == TITLE_CORE and n.priority >= 50
    assert "undone" in n.lines[0] and "continuation events --thread t" in n.lines[0]


def test_summary_is_due_until_a_turn_completes_after_the_rollback():
    from continuation.session.rewind_notes import recovery_notices

    log = _log(["a", "a", ("r", 1)])
    log[1]["data"]["text"] = "x" * 5000  # long texts are clipped in the summary
    notes = recovery_notices(log, thread_key="t")
    assert notes and all(len(line) < 400 for n in notes for line in n.lines)
    log.append({"seq": 4, "type": "input_admitted", "data": {"input_id": "r1", "turn_id": "t9"}})
    log.append({"seq": 5, "type": "turn_aborted", "data": {"turn_id": "t9"}})
    assert recovery_notices(log, thread_key="t"), "an aborted retry still needs the summary"
    log.append({"seq": 6, "type": "turn_completed", "data": {"turn_id": "t0"}})
    assert recovery_notices(log, thread_key="t"), "a turn from before the rewind does not count"
    log.append({"seq": 7, "type": "turn_completed", "data": {"turn_id": "t9"}})
    assert recovery_notices(log, thread_key="t") == []


def _kinds(raw):
    kinds = []
    for k in raw:
        if k == "a" or not kinds:
            kinds.append("a")
        else:
            kinds.append(("r", min(k, len(kinds))))
    return kinds


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just("a"), st.integers(min_value=0, max_value=40)), min_size=1, max_size=40))
def test_live_ranges_from_the_rollbacks_alone_are_the_live_events(raw):
    """A boundary after a rewind reads the branch through seq ranges computed from the rollback
    facts only: they must name exactly the events live_events keeps."""
    from continuation.session.branch import in_ranges, live_ranges

    log = _log(_kinds(raw))
    ranges = live_ranges([e for e in log if e["type"] == "rolled_back"], len(log))
    assert [e["seq"] for e in log if in_ranges(e["seq"], ranges)] == seqs(live_events(log))


class _LogStore:
    """The two reads notices_of uses, over a list (what SqliteStore answers from SQL)."""

    def __init__(self, log):
        self.log = log
        self.read = 0

    def events(self, key, *, after=0, upto=None):
        out = [e for e in self.log if e["seq"] > after and (upto is None or e["seq"] <= upto)]
        self.read += len(out)
        return out

    def events_of_types(self, key, types, *, upto=None, newest=None):
        out = [e for e in self.log if e["type"] in types and (upto is None or e["seq"] <= upto)]
        return out[-newest:] if newest else out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just("a"), st.integers(min_value=0, max_value=40)), min_size=1, max_size=40))
def test_recovery_notices_from_the_bounded_window_equal_the_whole_log(raw):
    from continuation.session.rewind_notes import notices_of, recovery_notices

    log = _log(_kinds(raw))
    got = notices_of(_LogStore(log), "t")
    assert [n.model_dump() for n in got] == [n.model_dump() for n in recovery_notices(log, thread_key="t")]


def test_recovery_notices_read_only_the_events_after_the_rewound_to_position():
    log = _log(["a"] * 500 + [("r", 490)] + ["a"] * 3)
    store = _LogStore(log)
    assert notices_of_titles(store) and store.read == len(log) - 490


def notices_of_titles(store):
    from continuation.session.rewind_notes import notices_of

    return [n.title for n in notices_of(store, "t")]
