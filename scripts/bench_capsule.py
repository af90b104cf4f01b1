#!/usr/bin/env python3
"""Capsule build + commit time for a thread with 10,000 events and 1,000 inputs, and the share
of it spent counting tokens (tiktoken).

Prints milliseconds and the token-counting share; the tokenizer's one-time load is reported
apart (it happens once per process, at the first boundary).

Usage: python scripts/bench_capsule.py [--events 10000] [--inputs 1000] [--repeat 5] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time


def populate(engine, events: int, inputs: int):
    thread = engine.thread("codex", "bench-capsule")
    per_input = max(events // inputs, 1)
    batch, n, i = [], 0, 0
    while n < events:
        turn = f"t{i}"
        batch.append(("input_admitted", {"input_id": f"in{i}", "turn_id": turn,
                                         "text": f"request {i}: refactor module {i % 37} "
                                                 f"and keep the API stable " * 3}))
        n += 1
        for k in range((per_input - 2) // 2):
            if n >= events:
                break
            call = f"c{i}-{k}"
            batch.append(("tool_started", {"call_id": call, "turn_id": turn, "tool": "Bash",
                                           "args": {"command": f"pytest tests/test_{k}.py"}}))
            batch.append(("tool_finished", {"call_id": call, "status": "ok", "exit_code": 0}))
            n += 2
        if i % 10 != 9:  # every tenth input stays open
            batch.append(("turn_completed", {"turn_id": turn}))
            n += 1
        i += 1
        if i >= inputs:
            break
    engine.store.append_many(thread.key, batch, source="bench")
    return thread


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--inputs", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from capsule import tokens
    from continuation.boundary import checkpoints
    from continuation.session.engine import Engine

    t0 = time.perf_counter()
    counter = tokens.get_token_counter()
    load_ms = (time.perf_counter() - t0) * 1000
    spent = {"s": 0.0, "calls": 0, "depth": 0}
    kind = type(counter)  # the process-wide counter's class (VocabularyCounter or TokenCounter)
    original_count = kind.count
    original_bounded = kind.count_bounded

    def timed(fn):
        def wrapper(self, *a, **kw):
            spent["depth"] += 1  # count_bounded calls count: time the outer call only
            start = time.perf_counter()
            try:
                return fn(self, *a, **kw)
            finally:
                spent["depth"] -= 1
                if spent["depth"] == 0:
                    spent["s"] += time.perf_counter() - start
                    spent["calls"] += 1
        return wrapper

    kind.count = timed(original_count)
    kind.count_bounded = timed(original_bounded)
    totals, token_s = [], []
    with tempfile.TemporaryDirectory() as tmp, Engine(tmp) as engine:
        thread = populate(engine, args.events, args.inputs)
        events = thread.row["last_seq"]
        n_inputs = len(thread.inputs())
        for _ in range(args.repeat):
            spent["s"], spent["calls"] = 0.0, 0
            start = time.perf_counter()
            cp = checkpoints.commit(thread, reason="bench")
            totals.append(time.perf_counter() - start)
            token_s.append(spent["s"])
        size = len(cp.capsule_bytes)
    total_ms = statistics.median(totals) * 1000
    tok_ms = statistics.median(token_s) * 1000
    report = {"events": events, "inputs": n_inputs, "encoding": counter.name
              if hasattr(counter, "name") else str(counter),
              "tokenizer_load_ms": round(load_ms, 1), "build_commit_ms": round(total_ms, 1),
              "token_counting_ms": round(tok_ms, 1),
              "token_share": round(tok_ms / total_ms, 3), "capsule_bytes": size,
              "count_calls": spent["calls"]}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"thread: {events} events, {n_inputs} inputs; encoding {report['encoding']} "
              f"(loaded once in {load_ms:.0f} ms)")
        print(f"build + commit: {total_ms:.1f} ms (median of {args.repeat})")
        print(f"token counting: {tok_ms:.1f} ms = {100 * tok_ms / total_ms:.1f}% "
              f"({spent['calls']} calls); capsule {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
