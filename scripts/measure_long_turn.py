#!/usr/bin/env python3
"""Redone and lost steps after a boundary inside one long turn of distinct steps.

For each size (default 40, 150 and 1,000 distinct shell steps in one turn, session and turn ids
36-character UUIDs) it runs prove scenario 16's long turn: the simulated runtime's agent does
80% of the steps, an automatic compaction follows, the agent reads the delivered context (the
engine's real hook answer) and every file it names, one read of at most 10,000 characters each
(``continuation.prove.agent.READ_LIMIT``), and does every step it is not shown as finished.
Prints, per runtime and size: steps redone and lost, the inline context size (characters the
hook answered with), the full context size (when the inline part points to its parts) and the
capsule's canonical bytes and tokens (budget: 16 KiB, 4,000).

Usage: python scripts/measure_long_turn.py [--sizes 40,150,1000] [--runtime codex,claude] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="40,150,1000")
    ap.add_argument("--runtime", default="codex,claude")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from continuation.prove.sandbox import Sandbox
    from continuation.prove.scenarios.ledger import long_turn

    rows = []
    for runtime in args.runtime.split(","):
        for size in (int(x) for x in args.sizes.split(",")):
            box = Sandbox(f"measure-{runtime}-{size}")
            try:
                got = long_turn(box, runtime, size)
            finally:
                box.close()
            got.pop("session"), got.pop("context")
            rows.append({"runtime": runtime, **got})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'runtime':8} {'steps':>6} {'done before':>11} {'redone':>7} {'lost':>5} {'executions':>10} "
              f"{'inline chars':>12} {'full chars':>10} {'capsule B':>9} {'tokens':>6} spilled")
        for r in rows:
            print(f"{r['runtime']:8} {r['calls']:>6} {r['done_before']:>11} {r['redone']:>7} {r['lost']:>5} "
                  f"{r['executions']:>10} {r['context_chars']:>12} {r['full_context_chars']:>10} "
                  f"{r['capsule_bytes']:>9} {r['capsule_tokens']:>6} "
                  f"{'yes' if r['spilled'] else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
