#!/usr/bin/env python3
"""The hook hot path on the PostgreSQL store, against the same hook on the embedded SQLite
store and against a floor, with 100,000 events in the store (an installed copy, see
``benchlib.install``):

- ``hook on PostgreSQL``: ``continuation hook`` PreToolUse with ``CONTINUATION_STORE`` set
  (connect + one transaction on a throwaway local cluster, Unix socket);
- ``hook on SQLite``: the same hook on the default store;
- ``floor``: ``python`` parsing the same payload and doing one psycopg insert + commit into a
  table of as many rows (the least any Python hook writing to this server does);
- ``recovery on host B``: ``continuation context`` from a second state home on the server,
  against the same command on the SQLite home that recorded the thread.

Interleaved runs, medians; only the ratios mean anything (a shared, noisy machine). Needs the
PostgreSQL binaries (initdb, pg_ctl) and psycopg.

Usage: python scripts/bench_store.py [--events 100000] [--runs 30] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_hot_path import populate, time_run  # noqa: E402
from benchlib import install  # noqa: E402
from pg_cluster import remove, start_cluster  # noqa: E402

FLOOR_HOOK = """import json, os, sys
import psycopg
payload = json.loads(sys.stdin.buffer.read())
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("INSERT INTO floor_events (data) VALUES (%s)", (json.dumps(payload),))
sys.stdout.write("{}\\n")
sys.stdout.flush()
os._exit(0)
"""


def floor_table(url: str, rows: int) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE floor_events (seq BIGSERIAL PRIMARY KEY, data TEXT NOT NULL)")
        conn.execute("INSERT INTO floor_events (data) SELECT '{\"n\": ' || n || '}'"
                     " FROM generate_series(1, %s) n", (rows,))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cluster, why = start_cluster()
    if cluster is None:
        print(f"cannot measure: {why}", file=sys.stderr)
        return 2
    import os

    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            inst = install(tmp)
            url = cluster.create_database("bench")
            t0 = time.perf_counter()
            os.environ["CONTINUATION_STORE"] = url
            populate(tmp / "pg-home", args.events)
            os.environ["CONTINUATION_STORE"] = "sqlite"
            populate(tmp / "sqlite-home", args.events)
            floor_table(url, args.events)
            populate_s = time.perf_counter() - t0
            (tmp / "floor_hook.py").write_text(FLOOR_HOOK, encoding="utf-8")
            pg_env = {**inst.env, "CONTINUATION_HOME": str(tmp / "pg-home"),
                      "CONTINUATION_STORE": url}
            sq_env = {**inst.env, "CONTINUATION_HOME": str(tmp / "sqlite-home"),
                      "CONTINUATION_STORE": "sqlite"}
            b_env = {**pg_env, "CONTINUATION_HOME": str(tmp / "host-b")}
            hook = [*inst.hook, "hook", "--runtime", "codex"]
            floor = [inst.python, str(tmp / "floor_hook.py"), url]
            context = [inst.command, "context", "--thread", "bench-session"]
            times: dict[str, list[float]] = {k: [] for k in
                                             ("pg", "sqlite", "floor", "ctx_b", "ctx_sqlite")}
            for n in range(args.runs + 3):
                payload = json.dumps({
                    "session_id": "bench-session", "turn_id": "t-live", "cwd": str(tmp),
                    "hook_event_name": "PreToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}, "tool_use_id": f"live-{n}"}).encode()
                sample = {"pg": time_run(hook, payload, pg_env),
                          "sqlite": time_run(hook, payload, sq_env),
                          "floor": time_run(floor, payload, pg_env)}
                if n % 3 == 0:
                    sample["ctx_b"] = time_run(context, b"", b_env)
                    sample["ctx_sqlite"] = time_run(context, b"", sq_env)
                if n >= 3:
                    for k, v in sample.items():
                        times[k].append(v)
            from continuation.store import open_store

            for home, backend in ((tmp / "pg-home", url), (tmp / "sqlite-home", "sqlite")):
                store = open_store(str(home), url=backend)
                recorded = store.thread("bench-session")["last_seq"]
                store.close()
                assert recorded == args.events + args.runs + 3, "a hook did not record its event"
    finally:
        remove(cluster)
    ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
    report = {"events_in_store": args.events, "runs": args.runs,
              **{f"{k}_ms": round(v, 1) for k, v in ms.items()},
              "pg_hook_vs_floor": round(ms["pg"] / ms["floor"], 2),
              "pg_hook_vs_sqlite_hook": round(ms["pg"] / ms["sqlite"], 2),
              "context_host_b_vs_sqlite": round(ms["ctx_b"] / ms["ctx_sqlite"], 2),
              "populate_s": round(populate_s, 1)}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"stores: {args.events} events each (populated in {populate_s:.1f}s), "
          f"medians of {args.runs} interleaved runs")
    print("| measure | ms | baseline | baseline ms | ratio |")
    print("|---|---|---|---|---|")
    print(f"| hook PreToolUse on PostgreSQL | {ms['pg']:.0f} | floor: python + psycopg, one "
          f"insert | {ms['floor']:.0f} | {ms['pg'] / ms['floor']:.2f}x |")
    print(f"| hook PreToolUse on PostgreSQL | {ms['pg']:.0f} | the same hook on SQLite | "
          f"{ms['sqlite']:.0f} | {ms['pg'] / ms['sqlite']:.2f}x |")
    print(f"| `context` on host B (PostgreSQL) | {ms['ctx_b']:.0f} | `context` on the SQLite "
          f"home | {ms['ctx_sqlite']:.0f} | {ms['ctx_b'] / ms['ctx_sqlite']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
