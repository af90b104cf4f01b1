"""The snapshot benchmark script still runs end to end (tiny size; numbers are not checked)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_snapshot.py"


def test_bench_snapshot_runs_and_reports_ratios(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--files", "300", "--size", "512", "--runs", "2"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"first snapshot: .* = \d+\.\d+x baseline", out)
    assert re.search(r"incremental snapshot: .* = \d+\.\d+x baseline", out)
    assert re.search(r"restore: plan \d+ ms, apply \d+ ms \(\d+ modified, 0 recreated, 5 deleted", out)
