#!/usr/bin/env python3
"""Redone tool calls and context size after a boundary inside one long turn (issue 12, item 1).

For each size (default 40, 200 and 1,000 calls in one turn) it runs prove scenario 16's long
turn: the simulated runtime's agent makes 90% of the calls, an automatic compaction follows,
the agent reads the delivered context (the continuation engine's real hook answer) and does
whatever it is not told finished. Prints, per runtime and size: calls redone, the inline context
size (characters the hook answered with), the full context size (the spill file's, when the
inline part points to one) and the capsule's canonical bytes and tokens (budget: 16 KiB, 4,000).

Usage: python scripts/measure_long_turn.py [--sizes 40,200,1000] [--runtime codex,claude] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="40,200,1000")
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
        print(f"{'runtime':8} {'calls':>6} {'done before':>11} {'redone':>7} {'executions':>10} "
              f"{'inline chars':>12} {'full chars':>10} {'capsule B':>9} {'tokens':>6} spilled")
        for r in rows:
            print(f"{r['runtime']:8} {r['calls']:>6} {r['done_before']:>11} {r['redone']:>7} "
                  f"{r['executions']:>10} {r['context_chars']:>12} {r['full_context_chars']:>10} "
                  f"{r['capsule_bytes']:>9} {r['capsule_tokens']:>6} "
                  f"{'yes' if r['spilled'] else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
