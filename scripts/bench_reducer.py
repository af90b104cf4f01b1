#!/usr/bin/env python3
"""Replay speed of the reducer: one fold of a legal 100,000-event log, this tree's
``statemachine/`` against the same package at a git revision (the baseline).

The reducer replays whole logs (a full recovery, a rollback, the store's rebuild), so its fast
path must not get slower when the lifecycle table changes shape. The baseline is taken with
``git archive`` into a temporary folder (the working tree is never touched); each side runs in
its own interpreter with only that package on ``sys.path``, interleaved, and the best time of
each side is compared (a shared, noisy machine: only the ratio means anything).

Usage: python scripts/bench_reducer.py [--rev HEAD] [--events 100000] [--runs 5] [--json]
"""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: run inside each child: build the log, fold it once, print the seconds it took
CHILD = r"""
import sys, time
from statemachine.reducer import fold

def log(n):
    events, seq, k = [], 0, 0

    def add(etype, **data):
        nonlocal seq
        seq += 1
        events.append({"seq": seq, "type": etype, "data": data})

    while seq < n:
        i, t = f"in-{k}", f"t-{k}"
        if k % 7 == 3:  # admitted while a turn runs, delivered later
            add("input_admitted", input_id=i, text="queued work", turn_id=t, queued=True)
            add("input_delivered", input_id=i, turn_id=t)
        else:
            add("input_admitted", input_id=i, text="do the work", turn_id=t)
        for c in range(2):
            add("tool_started", call_id=f"c-{k}-{c}", turn_id=t, tool="Bash", args={"n": c})
            add("tool_finished", call_id=f"c-{k}-{c}", status="ok", exit_code=0)
        add("tool_started", call_id=f"c-{k}-x", turn_id=t, tool="Bash")
        if k % 10 == 9:  # cut with a call in flight: reconciling, then settled by a decision
            add("turn_aborted", turn_id=t, reason="interrupt")
            add("reconciled", call_id=f"c-{k}-x", decision="not_applied")
            add("turn_completed", turn_id=t)
        else:
            add("tool_finished", call_id=f"c-{k}-x", status="ok")
            add("assistant_claim", turn_id=t, text="done")
            add("turn_completed", turn_id=t)
        k += 1
    return events[:n]

events = log(int(sys.argv[1]))
start = time.perf_counter()
state = fold(events)
elapsed = time.perf_counter() - start
assert len(state.inputs) > 1000 and all(r.state in ("handled", "pending") for r in state.inputs.values())
print(elapsed)
"""


def baseline_tree(rev: str, into: Path) -> Path:
    """``statemachine/`` as of ``rev``, extracted under ``into``."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "statemachine"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into


def fold_seconds(tree: Path, events: int) -> float:
    out = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(tree)!r})\n" + CHILD,
                          str(events)], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD", help="git revision of the baseline (default HEAD)")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_tree(args.rev, Path(tmp))
        times = {"baseline": [], "current": []}
        for _ in range(args.runs):
            times["baseline"].append(fold_seconds(base, args.events))
            times["current"].append(fold_seconds(ROOT, args.events))
    best = {k: min(v) for k, v in times.items()}
    ratio = best["current"] / best["baseline"]
    result = {"events": args.events, "rev": args.rev, "runs": args.runs,
              "baseline_s": round(best["baseline"], 4), "current_s": round(best["current"], 4),
              "ratio": round(ratio, 3)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"fold of {args.events} events, best of {args.runs}: baseline ({args.rev}) "
              f"{best['baseline']:.3f}s, current {best['current']:.3f}s, ratio {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
