"""The "(not gathered)" counts of older facts and claims are kept between boundaries and
extended by the rows since (a boundary's cost stops growing with the thread); a kept
count never changes an answer: torn, foreign or stale files mean counting from scratch."""
from __future__ import annotations

import json

import pytest

from continuation.boundary import capsule_source
from continuation.boundary.prefix_counts import FILE, FOLDER, PrefixCounts

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


def steps(conn, counts, *args):
    """(SQLite progress ticks, totals) of one ``counts.count(*args)``: how much it read."""
    ticks = [0]
    conn.set_progress_handler(lambda: ticks.__setitem__(0, ticks[0] + 1) or 0, 20)
    try:
        found = counts.count(*args)
    finally:
        conn.set_progress_handler(None, 20)
    return ticks[0], found


def _scratch_cuts(engine, t):
    """The cuts counted with no kept counts (the kept file is put back afterwards)."""
    path = cache_file(engine, t)
    saved = path.read_bytes() if path.exists() else None
    if saved is not None:
        path.unlink()
    try:
        return cuts(t)
    finally:
        if saved is not None:
            path.write_bytes(saved)
        elif path.exists():
            path.unlink()


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

    counts = PrefixCounts(engine.home, t.key)

    def totals(lo, hi):
        return t.store.seq_size_totals("events", t.key, lo, hi, types=("turn_completed",))

    cold, at_end = steps(conn, counts, totals, "x", [sql, args], last - 50)
    warm, again = steps(conn, counts, totals, "x", [sql, args], last)
    scratch = conn.execute(f"SELECT count(*), sum(size), min(seq), max(seq) FROM ({sql} AND seq<?)",
                           (*args, last)).fetchone()
    assert again == tuple(scratch) and at_end[0] == scratch[0] - 10
    assert warm * 10 < cold, (warm, cold)


@pytest.mark.parametrize("damage", [b"", b"{torn", b"[1, 2]", json.dumps(
    {"runtime_facts(not gathered)": {"sig": "another query", "before": 1, "n": 999, "size": 5,
                                     "first": 1, "last": 1}}).encode(), b"damaged entries"])
def test_a_torn_foreign_or_stale_file_means_counting_from_scratch(engine, small_windows, damage):
    t = engine.thread("claude", "s")
    turns(t, 0, 20)
    truth = cuts(t)
    path = cache_file(engine, t)
    if damage == b"damaged entries":  # this file's own keys, with values of every wrong shape
        kept = json.loads(path.read_bytes())
        wrong = [5, "x", None, [], {"1": 7}, {"1": [[1, 2]]}, {"1": [["9", 1, 1, 1, 1]]},
                 {"1": [[10**9, 999, 5, 1, 1]]}, {"1": [[True, 1, 1, None, None]]}]
        damage = json.dumps({key: {"starts": w} if i % 2 else w
                             for i, (key, w) in enumerate(zip(kept, wrong * len(kept)))}).encode()
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
    turns(t, 0, 20)
    mid = t.row["last_seq"]
    turns(t, 20, 20)
    cuts(t)
    t.record("rolled_back", {"to_seq": mid, "reason": "test"}, source="test")
    turns(t, 40, 8)
    on_branch = cuts(t)
    assert on_branch == _scratch_cuts(engine, t)
    turns(t, 48, 8)
    assert cuts(t) == _scratch_cuts(engine, t)


@pytest.mark.parametrize("seed", range(6))
def test_kept_counts_across_rewinds_equal_counting_from_scratch(engine, small_windows, seed):
    """Random runs of turns, boundaries and rewinds (to a recent boundary, an old one, or a
    position on an abandoned branch): at every boundary the kept counts give exactly the cuts
    that counting the branch from scratch gives."""
    import random

    rng = random.Random(seed)
    t = engine.thread("claude", f"s{seed}")
    positions, k = [], 0
    for _ in range(14):
        n = rng.randint(1, 9)
        turns(t, k, n)
        k += n
        if rng.random() < 0.7:
            assert cuts(t) == _scratch_cuts(engine, t)
            positions.append(t.row["last_seq"])
        if positions and rng.random() < 0.4:
            to_seq = rng.choice(positions[-3:] if rng.random() < 0.6 else positions)
            t.record("rolled_back", {"to_seq": to_seq, "reason": "test"}, source="test")
    assert cuts(t) == _scratch_cuts(engine, t)


def test_a_rewind_to_a_recent_boundary_reads_only_the_rows_past_it(engine, small_windows):
    """After a rewind the branch's older range is found kept (at the boundary
    rewound to), so the next count reads the rows since, not the whole branch again."""
    from continuation.session.branch import live_ranges

    t = engine.thread("claude", "s")
    turns(t, 0, 400)
    conn = t.store.conn
    sql = "SELECT seq, length(data) AS size FROM events WHERE thread_key=? AND type=?"
    args = (t.key, "turn_completed")
    counts = PrefixCounts(engine.home, t.key)

    def totals(lo, hi):
        return t.store.seq_size_totals("events", t.key, lo, hi, types=("turn_completed",))

    mark = t.row["last_seq"]
    counts.count(totals, "x", [sql, args], mark + 1)  # the boundary before the rewind
    turns(t, 400, 5)
    t.record("rolled_back", {"to_seq": mark, "reason": "test"}, source="test")
    turns(t, 405, 5)
    last = t.row["last_seq"]
    ranges = live_ranges(t.store.events_of_types(t.key, ["rolled_back"]), last)
    assert len(ranges) == 2

    warm, kept = steps(conn, counts, totals, "x", [sql, args], last, ranges)
    cold, scratch = steps(conn, PrefixCounts(engine.home / "elsewhere", t.key), totals, "x",
                          [sql, args], last, ranges)
    on_branch = conn.execute(
        f"SELECT count(*), sum(size), min(seq), max(seq) FROM ({sql} AND seq<? AND"
        " (seq BETWEEN ? AND ? OR seq BETWEEN ? AND ?))",
        (*args, last, *ranges[0], *ranges[1])).fetchone()
    assert kept == scratch == tuple(on_branch) and kept[0] == 404  # the newest is at `last`
    assert warm * 10 < cold, (warm, cold)


def test_the_kept_counts_are_owner_only(engine, small_windows):
    """Under the state home everything is private: the folders and the file, whatever the
    umask (``counts/`` was created 0755)."""
    import os
    import stat

    t = engine.thread("claude", "private")
    turns(t, 0, 20)
    old = os.umask(0o022)
    try:
        cuts(t)
    finally:
        os.umask(old)
    path = cache_file(engine, t)
    for p in (path.parent.parent, path.parent, path):
        assert stat.S_IMODE(p.stat().st_mode) in (0o700, 0o600), (p, oct(p.stat().st_mode))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8"))  # written whole, as JSON
