"""Several hook processes write at once: nothing is lost, nothing is duplicated."""
from __future__ import annotations

import subprocess
import sys
import textwrap

WRITER = textwrap.dedent("""
    import sys
    from continuation.store import SqliteStore
    path, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = SqliteStore(path)
    key = store.ensure_thread("codex", "shared-session", workspace_root="/repo")
    for n in range(count):
        kind = n % 2
        if kind == 0:
            store.append(key, "input_admitted", {"input_id": f"w{worker}-{n}", "text": "x",
                                                  "turn_id": f"w{worker}-t{n}"}, source="test")
        else:
            store.append(key, "tool_started", {"call_id": f"w{worker}-c{n}",
                                                "turn_id": f"w{worker}-t{n - 1}"}, source="test")
        # every worker also re-admits an id another worker may have admitted: still once
        if n % 100 == 0:
            store.append(key, "input_admitted", {"input_id": f"shared-{n}", "text": "s",
                                                  "turn_id": "shared"}, source="test")
    store.close()
""")


def test_eight_processes_append_1000_events_each(tmp_path):
    from continuation.store import SqliteStore

    db = tmp_path / "store.sqlite3"
    SqliteStore(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(w), "1000"])
             for w in range(8)]
    assert [p.wait(timeout=600) for p in procs] == [0] * 8
    store = SqliteStore(db)
    key = store.thread("shared-session")["thread_key"]
    events = store.events(key)
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(events) + 1)), "sequence numbers have a gap or a repeat"
    ids = [e["data"].get("input_id") or e["data"].get("call_id") for e in events]
    assert len(ids) == len(set(ids)), "an event was duplicated"
    own = {f"w{w}-{n}" for w in range(8) for n in range(0, 1000, 2)}
    own |= {f"w{w}-c{n}" for w in range(8) for n in range(1, 1000, 2)}
    shared = {f"shared-{n}" for n in range(0, 1000, 100)}
    assert set(ids) == own | shared, "an acknowledged event is missing"
    assert len(events) == 8000 + len(shared)
    assert store.derived_state(key).snapshot() == store.replay(key).snapshot()
    store.close()
