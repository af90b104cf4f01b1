"""A conversation rewind costs what it rolls back, not the thread's length: the derived rows
changed after the target are put back from their kept earlier versions (``row_versions``),
and the result equals a full replay of the log. Measured in SQLite's own VM steps (no clock)."""
from __future__ import annotations

import uuid

from continuation.boundary.crossing import commit_checkpoint
from continuation.rewind.operation import apply_rewind, plan_rewind
from continuation.session.engine import Engine
from statemachine import events as ev


def _turns(thread, start: int, n: int) -> None:
    for t in range(start, start + n):
        tid = str(uuid.UUID(int=t))
        thread.admit(f"request {t}: rename module_{t} and update its callers", turn_id=tid)
        call = str(uuid.UUID(int=10**9 + t))
        thread.tool_started(call, "Bash", {"command": f"sed -i s/old_{t}/new_{t}/ src/m{t}.py"},
                            turn_id=tid)
        thread.tool_finished(call, "ok" if t % 5 else "error", exit_code=0 if t % 5 else 1,
                             output=f"edited src/m{t}.py", turn_id=tid)
        thread.turn_completed(tid)


def _counting(conn, run) -> int:
    ticks = [0]
    conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 100)
    try:
        run()
    finally:
        conn.set_progress_handler(None, 100)
    return ticks[0]


def _steps_of_a_short_rewind(home, turns: int) -> tuple[int, int, bool]:
    """(VM steps of the rollback fact's fold, of the whole ``rewind --conversation``, whether
    the rows equal a full replay after both)."""
    with Engine(home) as engine:
        thread = engine.thread("claude", f"s{turns}")
        _turns(thread, 0, turns)
        checkpoint = commit_checkpoint(thread, reason="manual", snapshot=False)
        _turns(thread, turns, 2)  # what the rewind rolls back: two turns
        fold = _counting(engine.store.conn, lambda: thread.record(
            ev.ROLLED_BACK, {"to_seq": checkpoint.seq}, source="test"))
        _turns(thread, turns + 2, 2)
        plan = plan_rewind(engine, checkpoint.checkpoint_id, "conversation", reason="test")
        whole = _counting(engine.store.conn, lambda: apply_rewind(engine, plan))
        same = engine.store.replay(thread.key).snapshot() == \
            engine.store.derived_state(thread.key).snapshot()
        return fold, whole, same


def test_a_short_rewind_costs_the_same_on_a_ten_times_longer_thread(tmp_path):
    fold_short, whole_short, same_short = _steps_of_a_short_rewind(tmp_path / "a", 200)
    fold_long, whole_long, same_long = _steps_of_a_short_rewind(tmp_path / "b", 2000)
    assert same_short and same_long  # the rows put back equal the replay of the log
    assert fold_long < fold_short * 1.5, (fold_short, fold_long)
    # the whole rewind also commits a checkpoint, whose gathering counts the older rows from
    # the state indexes (index-only scans: 2.4x here for 10x the rows, the replay was 10x)
    assert whole_long < whole_short * 3, (whole_short, whole_long)


def test_a_rewind_past_the_kept_versions_replays_the_log(tmp_path):
    """A thread recorded before the versions were kept (``undo_from`` names where they
    start): a rewind further back replays, and is still right."""
    with Engine(tmp_path / "h") as engine:
        thread = engine.thread("claude", "old")
        _turns(thread, 0, 20)
        checkpoint = commit_checkpoint(thread, reason="manual", snapshot=False)
        _turns(thread, 20, 5)
        with engine.store.transaction() as c:  # as schema 7's migration marks an old thread
            c.execute("DELETE FROM row_versions WHERE thread_key=?", (thread.key,))
            c.execute("INSERT INTO undo_from (thread_key, seq) VALUES (?, ?)",
                      (thread.key, thread.row["last_seq"] + 1))
        plan = plan_rewind(engine, checkpoint.checkpoint_id, "conversation", reason="test")
        apply_rewind(engine, plan)
        assert engine.store.replay(thread.key).snapshot() == \
            engine.store.derived_state(thread.key).snapshot()
        assert {r.state for r in thread.inputs() if r.admitted_seq > checkpoint.seq} == \
            {"rolled_back"}
