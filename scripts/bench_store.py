#!/usr/bin/env python3
"""The hook hot path on the PostgreSQL store, against the same hook on the embedded SQLite
store and against a floor, with 100,000 events in the store (an installed copy, see
``benchlib.install``):

- ``hook on PostgreSQL``: ``continuation hook`` PreToolUse with ``CONTINUATION_STORE`` set, as
  a user gets it: through the local relay (``continuation/store/relay.py``), already running
  (the first hook starts it; the runs check every measured hook went through it);
- ``hook on PostgreSQL, direct``: the same with ``CONTINUATION_RELAY=off`` (the hook imports
  psycopg, connects and runs its transaction itself: what every hook cost before the relay);
- ``hook on SQLite``: the same hook on the default store;
- ``floor``: ``python`` parsing the same payload and doing one psycopg insert + commit into a
  table of as many rows (the least any Python hook writing to this server itself does);
- ``context`` and ``recover`` on host B: from a second state home on the server, through the
  relay (as a user runs them) and direct, against the same command on the SQLite home that
  recorded the thread.

Interleaved runs, medians; only the ratios mean anything (a shared, noisy machine). Needs the
PostgreSQL binaries (initdb, pg_ctl) and psycopg.

Usage: python scripts/bench_store.py [--events 100000] [--runs 30] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
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
            relays = tmp / "relays"
            pg_env = {**inst.env, "CONTINUATION_HOME": str(tmp / "pg-home"),
                      "CONTINUATION_STORE": url, "CONTINUATION_RELAY_DIR": str(relays)}
            direct_env = {**pg_env, "CONTINUATION_RELAY": "off"}
            sq_env = {**inst.env, "CONTINUATION_HOME": str(tmp / "sqlite-home"),
                      "CONTINUATION_STORE": "sqlite"}
            b_env = {**pg_env, "CONTINUATION_HOME": str(tmp / "host-b")}
            b_direct_env = {**direct_env, "CONTINUATION_HOME": str(tmp / "host-b")}
            hook = [*inst.hook, "hook", "--runtime", "codex"]
            floor = [inst.python, str(tmp / "floor_hook.py"), url]
            context = [inst.command, "context", "--thread", "bench-session"]
            recover = [inst.command, "recover"]
            times: dict[str, list[float]] = {k: [] for k in (
                "pg", "pg_direct", "sqlite", "floor", "ctx_b", "ctx_b_direct", "ctx_sqlite",
                "rec_b", "rec_b_direct", "rec_sqlite")}
            relay_pid = None
            for n in range(args.runs + 3):
                payload = json.dumps({
                    "session_id": "bench-session", "turn_id": "t-live", "cwd": str(tmp),
                    "hook_event_name": "PreToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}, "tool_use_id": f"live-{n}"}).encode()
                # alternate the order each round: no measure always follows the same one
                order = [("pg", hook, pg_env), ("sqlite", hook, sq_env),
                         ("pg_direct", hook, direct_env), ("floor", floor, pg_env)]
                if n % 2:
                    order.reverse()
                sample = {}
                for name, cmd, env in order:
                    sample[name] = time_run(cmd, payload.replace(b"live-", name.encode() + b"-"),
                                            env)
                if n % 3 == 0:
                    for name, cmd, env in (("ctx_b", context, b_env),
                                           ("ctx_b_direct", context, b_direct_env),
                                           ("ctx_sqlite", context, sq_env),
                                           ("rec_b", recover, b_env),
                                           ("rec_b_direct", recover, b_direct_env),
                                           ("rec_sqlite", recover, sq_env)):
                        sample[name] = time_run(cmd, b"", env)
                if n == 0:  # the first hook started the relay: measure once it runs
                    relay_pid = wait_for_relay(url, pg_env)
                    served = relay_status(url, pg_env)["connections"]
                if n >= 3:
                    for k, v in sample.items():
                        times[k].append(v)
            final = relay_status(url, pg_env)
            assert final and final["pid"] == relay_pid, "the relay was replaced mid-run"
            assert final["connections"] - served >= args.runs + 2, \
                "a measured PostgreSQL hook did not go through the relay"
            os.kill(relay_pid, signal.SIGTERM)
            from continuation.store import open_store

            for home, backend, kinds in ((tmp / "pg-home", url, ("pg", "pg_direct")),
                                         (tmp / "sqlite-home", "sqlite", ("sqlite",))):
                store = open_store(str(home), url=backend)
                calls = {c.call_id for c in store.tool_calls(
                    store.thread("bench-session")["thread_key"], after_seq=args.events)}
                store.close()
                wanted = {f"{k}-{n}" for k in kinds for n in range(args.runs + 3)}
                assert wanted <= calls, f"a hook did not record its event: {wanted - calls}"
    finally:
        remove(cluster)
    ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
    ratios = {"pg_hook_vs_sqlite_hook": ms["pg"] / ms["sqlite"],
              "pg_hook_vs_floor": ms["pg"] / ms["floor"],
              "pg_hook_vs_direct_hook": ms["pg"] / ms["pg_direct"],
              "direct_hook_vs_sqlite_hook": ms["pg_direct"] / ms["sqlite"],
              "context_host_b_vs_sqlite": ms["ctx_b"] / ms["ctx_sqlite"],
              "context_host_b_direct_vs_sqlite": ms["ctx_b_direct"] / ms["ctx_sqlite"],
              "recover_host_b_vs_sqlite": ms["rec_b"] / ms["rec_sqlite"],
              "recover_host_b_direct_vs_sqlite": ms["rec_b_direct"] / ms["rec_sqlite"]}
    report = {"events_in_store": args.events, "runs": args.runs,
              **{f"{k}_ms": round(v, 1) for k, v in ms.items()},
              **{k: round(v, 2) for k, v in ratios.items()},
              "populate_s": round(populate_s, 1)}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"stores: {args.events} events each (populated in {populate_s:.1f}s), "
          f"medians of {args.runs} interleaved runs")
    print("| measure | ms | baseline | baseline ms | ratio |")
    print("|---|---|---|---|---|")
    rows = [("hook PreToolUse on PostgreSQL (relay)", "pg", "the same hook on SQLite", "sqlite"),
            ("hook PreToolUse on PostgreSQL (relay)", "pg",
             "floor: python + psycopg, one insert", "floor"),
            ("hook PreToolUse on PostgreSQL (relay)", "pg",
             "the same hook, direct (CONTINUATION_RELAY=off)", "pg_direct"),
            ("hook PreToolUse on PostgreSQL, direct", "pg_direct", "the same hook on SQLite",
             "sqlite"),
            ("`context` on host B (PostgreSQL, relay)", "ctx_b", "`context` on the SQLite home",
             "ctx_sqlite"),
            ("`context` on host B (PostgreSQL, direct)", "ctx_b_direct",
             "`context` on the SQLite home", "ctx_sqlite"),
            ("`recover` on host B (PostgreSQL, relay)", "rec_b", "`recover` on the SQLite home",
             "rec_sqlite"),
            ("`recover` on host B (PostgreSQL, direct)", "rec_b_direct",
             "`recover` on the SQLite home", "rec_sqlite")]
    for label, key, base_label, base in rows:
        print(f"| {label} | {ms[key]:.0f} | {base_label} | {ms[base]:.0f} | "
              f"{ms[key] / ms[base]:.2f}x |")
    return 0


def relay_status(url: str, env: dict) -> dict | None:
    """The relay's status as a hook with ``env`` finds it."""
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        from continuation.store import relay_client

        return relay_client.status(url)
    finally:
        os.environ.clear()
        os.environ.update(old)


def wait_for_relay(url: str, env: dict) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = relay_status(url, env)
        if state is not None:
            return state["pid"]
        time.sleep(0.1)
    raise SystemExit("the first PostgreSQL hook did not start the relay")


if __name__ == "__main__":
    sys.exit(main())
