"""Race fault script: PreCompact hooks and `continuation checkpoint` commands of one
thread started at the same instant in real processes, then `git gc --prune=now`; prints what
was lost (boundaries, checkpoints, refs not naming their checkpoint's commit, checkpoints whose
files can no longer be restored, doctor problems). Exit 1 when anything was lost.

    python scripts/fault_race.py [--rounds 6] [--precompacts 2] [--manual 2] [--json]

``run()`` returns the report for scripts/fault_safety.py, which runs every fault case.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import race_harness  # noqa: E402


def run(base: Path, *, rounds: int = 6, precompacts: int = 2, manual: int = 2):
    """The race in ``base`` (an empty folder); a ``race_harness.RaceReport`` (``.lost``)."""
    return race_harness.run_race(Path(base), rounds=rounds, precompacts=precompacts, manual=manual)


if __name__ == "__main__":
    sys.exit(race_harness.main(sys.argv[1:]))
