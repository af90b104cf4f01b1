#!/usr/bin/env python3
"""Hot-path cost: recording one event through the real hook command, as a ratio to a bare
``python -c pass`` started the same way, with a store already holding 100,000 events.

Both are started as subprocesses from this process, interleaved, many times; the medians are
compared (the machine is shared and noisy, so only the ratio means anything). Target <= 1.3x.

Usage: python scripts/bench_hot_path.py [--events 100000] [--runs 40] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def populate(home: Path, events: int) -> None:
    from continuation.engine import Engine

    with Engine(home) as engine:
        thread = engine.thread("codex", "bench-session", workspace_root=str(home))
        batch = []
        turn = 0
        for n in range(events):
            kind = n % 4
            if kind == 0:
                turn += 1
                batch.append(("input_admitted", {"input_id": f"i{n}", "text": f"request {n}",
                                                 "turn_id": f"t{turn}"}))
            elif kind == 1:
                batch.append(("tool_started", {"call_id": f"c{n}", "turn_id": f"t{turn}",
                                               "tool": "Bash", "args": {"command": "ls"}}))
            elif kind == 2:
                batch.append(("tool_finished", {"call_id": f"c{n - 1}", "status": "ok"}))
            else:
                batch.append(("turn_completed", {"turn_id": f"t{turn}"}))
            if len(batch) >= 5000:
                engine.store.append_many(thread.key, batch, source="bench")
                batch = []
        if batch:
            engine.store.append_many(thread.key, batch, source="bench")


def time_run(cmd: list[str], stdin: bytes, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, check=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    script = shutil.which("continuation") or str(Path(sys.executable).with_name("continuation"))
    if not Path(script).exists():
        print("the continuation command is not installed in this environment", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        t0 = time.perf_counter()
        populate(home, args.events)
        populate_s = time.perf_counter() - t0
        env = {**os.environ, "CONTINUATION_HOME": str(home)}
        bare = [sys.executable, "-c", "pass"]
        # what any SQLite-backed JSON hook started through pip's console-script launcher (which
        # itself imports re) imports before doing anything: the floor of this design
        floor = [sys.executable, "-c", "import re, json, sqlite3"]
        hook = [script, "hook", "--runtime", "codex"]
        hook_times, bare_times, floor_times = [], [], []
        for n in range(args.runs + 3):
            payload = json.dumps({
                "session_id": "bench-session", "turn_id": "t-live", "cwd": tmp,
                "hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "ls"}, "tool_use_id": f"live-{n}"}).encode()
            b = time_run(bare, b"", env)
            h = time_run(hook, payload, env)
            f = time_run(floor, b"", env)
            if n >= 3:  # warm-up runs fill the page cache
                bare_times.append(b)
                hook_times.append(h)
                floor_times.append(f)
        from continuation.engine import Engine

        with Engine(home) as engine:
            recorded = engine.store.thread("bench-session")["last_seq"]
        assert recorded == args.events + args.runs + 3, "a hook run did not record its event"
    bare_ms = statistics.median(bare_times) * 1000
    hook_ms = statistics.median(hook_times) * 1000
    floor_ms = statistics.median(floor_times) * 1000
    report = {"events_in_store": args.events, "runs": args.runs,
              "bare_python_ms": round(bare_ms, 2), "hook_ms": round(hook_ms, 2),
              "ratio": round(hook_ms / bare_ms, 2), "target": 1.3,
              "stdlib_floor_ms": round(floor_ms, 2), "floor_ratio": round(floor_ms / bare_ms, 2),
              "populate_s": round(populate_s, 1)}
    if args.json:
        print(json.dumps(report))
    else:
        print(f"store: {args.events} events (populated in {populate_s:.1f}s)")
        print(f"bare `python -c pass`: {bare_ms:.1f} ms (median of {args.runs})")
        print(f"`continuation hook` PreToolUse: {hook_ms:.1f} ms (median of {args.runs})")
        print(f"`python -c 'import re, json, sqlite3'`: {floor_ms:.1f} ms = "
              f"{floor_ms / bare_ms:.2f}x (the imports alone)")
        print(f"ratio: {hook_ms / bare_ms:.2f}x (target <= 1.3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
