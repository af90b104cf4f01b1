"""The rewind summary from the digest a rollback stores (``rewind.summary.branch_digest``): the
same notices as from the whole discarded branch, read from the events after the rollback only."""
from __future__ import annotations

import copy

import pytest

from capsule.notice import notice_data
from continuation.boundary import crossing as boundary
from continuation.session.engine import Engine
from continuation.session import rewind_notes as summary
from continuation.rewind.operation import rewind


def _append(engine, thread, items):
    engine.store.append_many(thread.key, items, source="test")


def _turn(i: int, *, outcome: str) -> list[tuple[str, dict]]:
    """One turn of the branch: an input, a call and its outcome (or none), a claim."""
    t, c = f"t{i}", f"c{i}"
    items = [("input_admitted", {"input_id": f"in{i}", "turn_id": t, "text": f"request {i}: fix module {i}"}),
             ("tool_started", {"call_id": c, "tool": "Bash", "turn_id": t,
                               "args": {"command": f"pytest tests/test_m{i}.py"}})]
    if outcome == "ok":
        items.append(("tool_finished", {"call_id": c, "status": "ok", "exit_code": 0, "turn_id": t}))
    elif outcome == "error":
        items.append(("tool_finished", {"call_id": c, "status": "error", "exit_code": 1, "turn_id": t,
                                        "output": f"E   AssertionError in module {i}\nmore"}))
    elif outcome == "exit":
        items.append(("tool_finished", {"call_id": c, "status": "ok", "exit_code": 2, "turn_id": t}))
    elif outcome == "unknown":
        items.append(("tool_finished", {"call_id": c, "status": "unknown", "turn_id": t}))
    items.append(("assistant_claim", {"text": f"module {i} fixed and tested", "turn_id": t}))
    return items


OUTCOMES = ("ok", "error", "exit", "open", "unknown")


def _both(store, key) -> tuple[list[dict], list[dict]]:
    """(notices from the stored digest, notices from the whole branch)."""
    anchor = store.events_of_types(key, summary.ANCHOR_TYPES, newest=1)[0]
    assert summary.stored_digest(anchor) is not None  # the digest path is the one compared
    from_digest = [notice_data(n) for n in summary.notices_of(store, key)]
    events = summary._events_from_floor(store, key, anchor, None, None)
    from_branch = [notice_data(n) for n in summary.recovery_notices(events, thread_key=key)]
    return from_digest, from_branch


def test_the_digest_gives_the_notices_of_the_whole_branch(home):
    with Engine(home) as e:
        t = e.thread("claude", "digest")
        _append(e, t, _turn(900, outcome="ok") + [("turn_completed", {"turn_id": "t900"})])
        cp0 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        items = []
        for i in range(30):  # more than MAX_ITEMS of every list, outcomes of every kind
            items += _turn(i, outcome=OUTCOMES[i % len(OUTCOMES)])
        # runtime call ids reused in a later turn (alias records): one left open (its first
        # use finished), one finished (its first use open)
        items += [("tool_started", {"call_id": "c1", "tool": "Bash", "turn_id": "t31",
                                    "args": {"command": "make"}}),
                  ("tool_started", {"call_id": "c23", "tool": "Bash", "turn_id": "t33",
                                    "args": {"command": "make lint"}}),
                  ("tool_finished", {"call_id": "c23", "status": "ok", "turn_id": "t33"})]
        items += [("tool_finished", {"call_id": "ghost", "status": "error", "exit_code": 9,
                                     "turn_id": "t5"})]  # an outcome whose start was never seen
        items += [("reconciled", {"call_id": "c3", "decision": "not_applied"})]
        items += [("turn_aborted", {"turn_id": "t8", "reason": "user_interrupt"})]
        _append(e, t, items)
        cp1 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        _append(e, t, _turn(40, outcome="error") + _turn(41, outcome="open"))
        rewind(e, cp1.checkpoint_id, "conversation", reason="inner")  # a rollback inside the branch
        _append(e, t, _turn(50, outcome="open") + [("crash_detected", {"reason": "killed"})])
        rewind(e, cp0.checkpoint_id, "conversation", reason="start over")
        store = e.store
        from_digest, from_branch = _both(store, t.key)
        assert from_digest == from_branch
        text = "\n".join(line for n in from_digest for line in n["lines"])
        assert "... and" in text and "reconciled it as not_applied" in text
        assert "request 40" not in text  # undone by the inner rollback: not this branch's

        # outcomes that arrive after the rollback: open calls settled (ok, failing, unknown),
        # one for the reused id's earlier turn (already finished: settles nothing)
        _append(e, t, [("tool_finished", {"call_id": "c8", "status": "ok", "exit_code": 0, "turn_id": "t8"}),
                       ("tool_finished", {"call_id": "c13", "status": "error", "exit_code": 3,
                                          "turn_id": "t13", "output": "late failure"}),
                       ("tool_finished", {"call_id": "c18", "status": "unknown", "turn_id": "t18"}),
                       ("tool_finished", {"call_id": "c1", "status": "ok", "turn_id": "t1"}),
                       ("tool_finished", {"call_id": "c1", "status": "error", "exit_code": 4,
                                          "turn_id": "t31"}),
                       ("tool_finished", {"call_id": "c23", "status": "error", "exit_code": 5,
                                          "turn_id": "t33"}),
                       ("input_admitted", {"input_id": "retry", "turn_id": "r1", "text": "retry"})])
        from_digest, from_branch = _both(store, t.key)
        assert from_digest == from_branch
        lines = [line for n in from_digest for line in n["lines"]]
        late = " (outcome arrived after the rewind)"
        assert "  - Bash `pytest tests/test_m8.py` -> ok, exit 0" + late in lines
        assert "  - Bash `pytest tests/test_m13.py` -> error, exit 3: late failure" + late in lines
        # the reused id's later call finished in the branch: a second outcome of it is not
        # kept, and the first use stays without one
        assert ("  - Bash `pytest tests/test_m23.py` -> NO OUTCOME RECORDED: unknown whether it "
                "took effect; verify before repeating") in lines
        _append(e, t, [("turn_completed", {"turn_id": "r1"})])  # the retry completed a turn
        assert summary.notices_of(store, t.key) == []


def test_a_late_outcome_of_a_reused_call_id_settles_the_open_call_of_its_turn(home):
    with Engine(home) as e:
        t = e.thread("claude", "reused")
        cp0 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        _append(e, t, _turn(1, outcome="ok") + [
            ("input_admitted", {"input_id": "in2", "turn_id": "t2", "text": "build it"}),
            ("tool_started", {"call_id": "c1", "tool": "Bash", "turn_id": "t2", "args": {"command": "make"}}),
            ("tool_started", {"call_id": "c9", "tool": "Bash", "turn_id": "t2", "args": {"command": "ls"}})])
        rewind(e, cp0.checkpoint_id, "conversation")
        _append(e, t, [("tool_finished", {"call_id": "c1", "status": "error", "exit_code": 4,
                                          "turn_id": "t2", "output": "make: *** [all] Error 4"})])
        from_digest, from_branch = _both(e.store, t.key)
        assert from_digest == from_branch
        lines = [line for n in from_digest for line in n["lines"]]
        late = " (outcome arrived after the rewind)"
        assert "  - Bash `make` -> error, exit 4: make: *** [all] Error 4" + late in lines
        assert "  - Bash `pytest tests/test_m1.py` -> ok, exit 0" in lines  # the first use's own
        assert ("  - Bash `ls` -> NO OUTCOME RECORDED: unknown whether it took effect; verify "
                "before repeating") in lines


def test_a_checkpoint_after_a_rewind_reads_only_the_events_after_the_rollback(home, monkeypatch):
    with Engine(home) as e:
        t = e.thread("claude", "bounded")
        cp0 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        items = []
        for i in range(400):
            items += _turn(i, outcome=OUTCOMES[i % len(OUTCOMES)])
        _append(e, t, items)
        rewind(e, cp0.checkpoint_id, "conversation")
        anchor_seq = e.store.events_of_types(t.key, ("rolled_back",), newest=1)[0]["seq"]
        reads: list[int] = []
        real = type(e.store).events

        def events(store, key, *, after=0, upto=None, limit=None):
            reads.append(after)
            return real(store, key, after=after, upto=upto, limit=limit)

        monkeypatch.setattr(type(e.store), "events", events)
        cp = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        assert reads and min(reads) >= anchor_seq, (reads, anchor_seq)
        titles = [n.title for n in cps_notices(cp)]
        assert summary.TITLE_CORE in titles and summary.TITLE_TRIED in titles


def cps_notices(cp):
    from capsule.decode import decode_capsule

    return decode_capsule(cp.capsule_bytes).notices


def _digest_anchor(seq: int = 10) -> dict:
    digest = {"version": summary.DIGEST_VERSION, "to_seq": 3, "upto": seq - 1,
              "inputs": [], "inputs_count": 0, "lines": [[0, "  - x -> ok"]], "lines_count": 1,
              "failing": [], "failing_count": 0, "unknown": [], "unknown_count": 0,
              "open": [{"pos": 1, "key": "c", "what": "Bash `x`", "decision": None}],
              "turns": [], "turns_count": 0, "claims": [], "claims_count": 0}
    return {"seq": seq, "type": "rolled_back", "data": {"to_seq": 3, "summary": digest}}


@pytest.mark.parametrize("damage", [
    lambda d: d.update(version=summary.DIGEST_VERSION + 1),  # a future writer's
    lambda d: d.update(upto=7),  # events were appended while it was computed
    lambda d: d.pop("lines"),
    lambda d: d.update(lines=[[0]]),
    lambda d: d.update(lines_count="1"),
    lambda d: d.update(open=[{"pos": "1", "key": "c", "what": "w"}]),
    lambda d: d.update(to_seq=None),
], ids=["future", "stale", "missing", "torn-line", "count-type", "open-type", "to-seq"])
def test_a_digest_that_does_not_fit_is_not_used(damage):
    anchor = _digest_anchor()
    assert summary.stored_digest(anchor) is not None
    damaged = copy.deepcopy(anchor)
    damage(damaged["data"]["summary"])
    assert summary.stored_digest(damaged) is None
    assert summary.stored_digest({**anchor, "type": "workspace_restored"}) is None
    assert summary.stored_digest({"seq": 10, "type": "rolled_back", "data": {"to_seq": 3}}) is None


def test_a_rewind_reads_its_branch_once_unless_the_log_moved_since_its_plan(home, monkeypatch):
    """The plan's digest (its preview's notices) is the one stored when nothing was appended
    between the plan and the apply; else the branch is read again and the stored digest covers
    the new events."""
    from continuation.rewind.operation import apply_rewind, plan_rewind

    computed: list[int] = []
    real = summary.digest_for_rollback

    def counting(store, key, pending):
        computed.append(int(pending["seq"]))
        return real(store, key, pending)

    monkeypatch.setattr(summary, "digest_for_rollback", counting)
    with Engine(home) as e:
        t = e.thread("claude", "once")
        cp0 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        _append(e, t, _turn(1, outcome="open") + _turn(2, outcome="error"))
        plan = plan_rewind(e, cp0.checkpoint_id, "conversation")
        apply_rewind(e, plan)
        assert len(computed) == 1
        anchor = e.store.events_of_types(t.key, ("rolled_back",), newest=1)[0]
        assert summary.stored_digest(anchor) == plan.digest and plan.digest["inputs_count"] == 2

        cp1 = boundary.commit_checkpoint(t, reason="manual", snapshot=False)
        _append(e, t, _turn(3, outcome="ok"))
        plan = plan_rewind(e, cp1.checkpoint_id, "conversation")
        _append(e, t, _turn(4, outcome="open"))  # the session went on before the apply
        apply_rewind(e, plan)
        assert len(computed) == 3
        anchor = e.store.events_of_types(t.key, ("rolled_back",), newest=1)[0]
        digest = summary.stored_digest(anchor)
        assert digest is not None and digest["inputs_count"] == 2  # turns 3 and 4
