"""Run the fault-injection matrix (every kill point of continuation.host.faults over the scripted
session of tests/fault_harness.py) and print the counts: points injected, sessions killed,
facts lost (must be 0), and any failed recovery check.

    python scripts/fault_report.py [--json]
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import fault_harness as fh  # noqa: E402


def main(argv: list[str]) -> int:
    tally = fh.Tally()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="continuation-faults-") as tmp:
        for n, (point, step) in enumerate(fh.matrix()):
            where = Path(tmp) / f"run{n}"
            run = fh.run_session(where, point, step)
            rep = fh.check_recovery(run, where)
            tally.add(run, rep)
            if "--json" not in argv:
                status = "FAIL " + "; ".join(rep.failures(run)) if rep.failures(run) else "ok"
                print(f"{str(point or '(no fault)'):26} step {str(step if step is not None else '-'):>2}  "
                      f"injected={'yes' if run.injected else 'no ':3}  acknowledged={len(run.acknowledged):2}  "
                      f"reconciling={','.join(rep.reconciling_calls) or '-':12} {status}")
    failed = [r for r in tally.runs if r["failures"]]
    if "--json" in argv:
        print(json.dumps({"points_injected": tally.points_injected,
                          "sessions_killed": tally.sessions_killed,
                          "facts_expected": tally.facts_expected, "facts_lost": tally.facts_lost,
                          "runs": tally.runs, "seconds": round(time.monotonic() - started, 1)},
                         indent=2))
    else:
        print(tally.summary() + f" ({time.monotonic() - started:.0f}s)")
    return 1 if failed or tally.facts_lost else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
