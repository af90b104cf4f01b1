"""The "(not gathered)" counts of older facts and claims are kept between boundaries and
extended by the rows since (issue 15: a boundary's cost stops growing with the thread); a kept
count never changes an answer: torn, foreign or stale files mean counting from scratch."""
from __future__ import annotations

import json

import pytest

from continuation import capsule_source
from continuation.prefix_counts import FILE, FOLDER, PrefixCounts

COUNTED = ("runtime_facts(not gathered)", "assistant_claims(not gathered)")


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(capsule_source, "MAX_FACTS", 4)
    monkeypatch.setattr(capsule_source, "MAX_CLAIMS", 2)


def turns(thread, start, n):
    for k in range(start, start + n):
        thread.admit(f"request {k}", turn_id=f"t{k}")
        thread.tool_started(f"c{k}", "Bash", {"command": f"echo {k}"}, turn_id=f"t{k}")
        thread.tool_finished(f"c{k}", "ok", output="x", turn_id=f"t{k}")
        thread.claim(f"claim {k} " * (k % 7 + 1), turn_id=f"t{k}")
        thread.turn_completed(f"t{k}")


def cuts(thread):
    source = capsule_source.gather(thread, generation=1, reason="manual")
    return {n.field: n.model_dump() for n in source.not_gathered if n.field in COUNTED}


def cache_file(engine, thread):
    return engine.home / FOLDER / thread.key / FILE


def test_kept_counts_extend_to_the_same_cuts_as_counting_from_scratch(engine, small_windows):
    t = engine.thread("claude", "s")
    turns(t, 0, 30)
    first = cuts(t)
    assert set(first) == set(COUNTED) and cache_file(engine, t).is_file()
    turns(t, 30, 12)
    extended = cuts(t)  # from the kept counts plus the rows since
    cache_file(engine, t).unlink()
    scratch = cuts(t)
    assert extended == scratch and extended != first
    assert scratch["runtime_facts(not gathered)"]["items"] > first["runtime_facts(not gathered)"]["items"]


def test_a_kept_count_reads_only_the_rows_since(engine, small_windows):
    """Counting from a kept position costs what the new rows cost, not the thread's length."""
    t = engine.thread("claude", "s")
    turns(t, 0, 400)
    conn = t.store.conn
    sql = "SELECT seq, length(data) AS size FROM events WHERE thread_key=? AND type=?"
    args = (t.key, "turn_completed")
    last = t.row["last_seq"]

    def steps(counts, before):
        ticks = [0]
        conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 20)
        try:
            found = counts.count(conn, "x", sql, args, before)
        finally:
            conn.set_progress_handler(None, 20)
        return ticks[0], found

    counts = PrefixCounts(engine.home, t.key)
    cold, at_end = steps(counts, last - 50)
    warm, again = steps(counts, last)
    scratch = conn.execute(f"SELECT count(*), sum(size), min(seq), max(seq) FROM ({sql} AND seq<?)",
                           (*args, last)).fetchone()
    assert again == tuple(scratch) and at_end[0] == scratch[0] - 10
    assert warm * 10 < cold, (warm, cold)


@pytest.mark.parametrize("damage", [b"", b"{torn", b"[1, 2]", json.dumps(
    {"runtime_facts(not gathered)": {"sig": "another query", "before": 1, "n": 999, "size": 5,
                                     "first": 1, "last": 1}}).encode()])
def test_a_torn_foreign_or_stale_file_means_counting_from_scratch(engine, small_windows, damage):
    t = engine.thread("claude", "s")
    turns(t, 0, 20)
    truth = cuts(t)
    path = cache_file(engine, t)
    path.write_bytes(damage)
    assert cuts(t) == truth


def test_a_kept_count_past_the_position_asked_is_not_used(engine, small_windows):
    """An "as of" build (an earlier position) never takes counts kept for a later one."""
    t = engine.thread("claude", "s")
    turns(t, 0, 20)
    upto = t.row["last_seq"]
    early = capsule_source.gather(t, generation=1, reason="x", upto_seq=upto)
    turns(t, 20, 20)
    cuts(t)  # keeps counts for the later position
    again = capsule_source.gather(t, generation=1, reason="x", upto_seq=upto)
    assert ([n.model_dump() for n in again.not_gathered]
            == [n.model_dump() for n in early.not_gathered])


def test_a_rewound_thread_counts_only_its_branch_and_keeps_extending(engine, small_windows):
    """The discarded branch's facts and claims are never counted (the counts kept for the old
    branch are another query), and the branch's own counts extend like any other."""
    t = engine.thread("claude", "s")

    def from_scratch():
        saved = cache_file(engine, t).read_bytes()
        cache_file(engine, t).unlink()
        try:
            return cuts(t)
        finally:
            cache_file(engine, t).write_bytes(saved)

    turns(t, 0, 20)
    mid = t.row["last_seq"]
    turns(t, 20, 20)
    cuts(t)
    t.record("rolled_back", {"to_seq": mid, "reason": "test"}, source="test")
    turns(t, 40, 8)
    on_branch = cuts(t)
    assert on_branch == from_scratch()
    turns(t, 48, 8)
    assert cuts(t) == from_scratch()
