"""``scripts/fault_safety.py``: the full-disk and special-file cases lose nothing.
(The race case is ``scripts/fault_race.py``'s, tested with it.)"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fault_safety.py"


def test_fault_safety_script_reports_nothing_lost():
    r = subprocess.run([sys.executable, str(SCRIPT), "--skip-race", "--events", "1500", "--json"],
                       capture_output=True, text=True, timeout=600)
    report = json.loads(r.stdout)
    cases = {c["case"]: c for c in report["cases"]}
    assert any(name.startswith("full disk (injected") for name in cases)
    assert sum(1 for name in cases if name.startswith("special files")) == 16
    assert report["lost"] == 0 and r.returncode == 0, r.stdout
    for case in cases.values():
        assert "skipped" in case or case["lost"] == 0
