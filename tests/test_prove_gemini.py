"""``continuation prove`` scenarios 30-33 (Gemini-shaped payloads) pass, and fail when the Gemini
adapter loses what they prove."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _prove(*args: str, env: dict | None = None):
    full = {**os.environ, **(env or {})}
    full.pop("CONTINUATION_FAULT", None)
    proc = subprocess.run([sys.executable, "-m", "continuation", "prove", "--json", *args],
                          capture_output=True, timeout=600, env=full, cwd=str(ROOT))
    assert proc.stdout, proc.stderr.decode(errors="replace")
    return proc.returncode, json.loads(proc.stdout)


def _broken(tmp_path: Path, code: str) -> dict:
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(code), encoding="utf-8")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_gemini_scenarios_pass():
    code, rep = _prove("--scenario", "30", "--scenario", "31", "--scenario", "32", "--scenario", "33")
    failed = [(s["scenario"], s["error"], [c for c in s["checks"] if not c["ok"]])
              for s in rep["scenarios"] if s["status"] != "PASS"]
    assert not failed and code == 0
    assert [s["scenario"] for s in rep["scenarios"]] == [30, 31, 32, 33]


def test_a_checkpoint_at_every_precompress_fails_scenario_30(tmp_path):
    env = _broken(tmp_path, """
        import continuation.hooks.gemini_compress as _g
        _g.will_compress = lambda payload, env=None: True  # the bug: every PreCompress is a boundary
    """)
    code, rep = _prove("--scenario", "30", env=env)
    (s,) = rep["scenarios"]
    assert code == 1 and s["status"] == "FAIL"
    assert any("no checkpoint and no boundary" in c["name"] for c in s["checks"] if not c["ok"])


def test_no_delivery_after_tool_fails_scenario_31(tmp_path):
    env = _broken(tmp_path, """
        import continuation.boundary.crossing as _b
        _original = _b.context_answer

        def _context_answer(thread, runtime, event_name, *, via, **kw):
            if via == "after_tool":
                return {}  # the bug: AfterTool never carries the context
            return _original(thread, runtime, event_name, via=via, **kw)

        _b.context_answer = _context_answer
    """)
    code, rep = _prove("--scenario", "31", env=env)
    (s,) = rep["scenarios"]
    assert code == 1 and s["status"] == "FAIL"
    assert any("delivered once, by AfterTool" in c["name"] for c in s["checks"] if not c["ok"])
