#!/usr/bin/env python3
"""The recovery loop against three other policies, on long checklist tasks (like MettleBench).

Each task is a small generated repository with real unittests and a checklist of 10-30
requirements given as a few user inputs (``continuation.prove.tasks``); a scripted agent works
through it, making plausible mistakes at a seeded rate (a wrong body, a syntax slip, a
destructive clean-up command: ``continuation.prove.coder``) and reading only what it is told.
Every task runs under each policy (``continuation.prove.recovery_runs``): no recovery, blind
retry (the input again from scratch), manual-style rewind without a summary, and the loop. The
same seed gives every policy the same luck per attempt.

Reported per policy: task success rate (every requirement holds at the end, judged by a grader
apart from the check), average checklist progress, repeated tool calls (identical calls run
again) and repeated external effects (a milestone published twice), wall time, checks run, and
the checkpoint cost (checkpoints or input snapshots taken, and the seconds recovery took beyond
the check itself: checkpoints, rewinds, their records).

Usage: python scripts/bench_recovery.py [--tasks 20] [--min 10] [--max 30] [--seed 1]
       [--policies none,blind-retry,rewind-no-summary,loop] [--json] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from continuation.prove.coder import Rates  # noqa: E402
from continuation.prove.recovery_runs import POLICIES, run_task  # noqa: E402
from continuation.prove.tasks import generate  # noqa: E402

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}


def tasks(count: int, low: int, high: int, seed: int):
    rng = random.Random(seed)
    return [generate(seed * 1000 + n, rng.randint(low, high), name=f"task-{n + 1:02d}")
            for n in range(count)]


def summarize(rows: list[dict], policies: list[str]) -> dict:
    out = {}
    for p in policies:
        mine = [r for r in rows if r["policy"] == p]
        out[p] = {
            "tasks": len(mine),
            "success_rate": sum(r["success"] for r in mine) / len(mine),
            "progress": statistics.mean(r["progress"] for r in mine),
            "repeated_calls": statistics.mean(r["repeated_calls"] for r in mine),
            "repeated_external": sum(r["repeated_external"] for r in mine),
            "wall_s": statistics.mean(r["wall_s"] for r in mine),
            "checks": statistics.mean(r["checks"] for r in mine),
            "checkpoints": statistics.mean(r["checkpoints"] for r in mine),
            "checkpoint_s": statistics.mean(r["checkpoint_s"] for r in mine),
            "rewinds": statistics.mean(r["rewinds"] for r in mine),
        }
    return out


def table(summary: dict, requirements: int, count: int) -> str:
    lines = [f"| policy ({count} tasks, {requirements} requirements) | task success | "
             "checklist progress | repeated tool calls / task | repeated external effects | "
             "wall time / task | checks / task | checkpoints / task | checkpoint time / task | "
             "rewinds or retries / task |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p, s in summary.items():
        lines.append(f"| {p} | {s['success_rate']:.0%} | {s['progress']:.1%} | "
                     f"{s['repeated_calls']:.1f} | {s['repeated_external']} | {s['wall_s']:.1f} s | "
                     f"{s['checks']:.1f} | {s['checkpoints']:.1f} | {s['checkpoint_s']:.1f} s | "
                     f"{s['rewinds']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--min", type=int, default=10)
    ap.add_argument("--max", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the table and the rows (JSON) here")
    args = ap.parse_args(argv)
    policies = [p for p in args.policies.split(",") if p]
    os.environ.update(GIT_ENV)
    todo = tasks(args.tasks, args.min, args.max, args.seed)
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        base = Path(tmp)
        for task in todo:
            for p in policies:  # alternated per task: a slower spell of the machine hits all
                row = run_task(task, p, base / "work", home=base / "home" / p, rates=Rates(),
                               seed=args.seed)
                rows.append(row)
                sys.stderr.write(f"  {task.name} ({len(task.requirements)} req) {p:<18} "
                                 f"{row['satisfied']}/{row['requirements']} "
                                 f"repeated={row['repeated_calls']} ext={row['repeated_external']} "
                                 f"{row['wall_s']:.1f}s\n")
    summary = summarize(rows, policies)
    total = sum(len(t.requirements) for t in todo)
    text = table(summary, total, len(todo))
    text += (f"\n\n(seed {args.seed}, rates {Rates().to_dict()}, {time.perf_counter() - t0:.0f} s "
             "in all)")
    print(json.dumps({"summary": summary, "rows": rows}, indent=2) if args.json else text)
    if args.out:
        Path(args.out).write_text(text + "\n\n" + json.dumps({"summary": summary, "rows": rows},
                                                             indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
