"""``continuation prove``: the report's structure, that available scenarios pass, and that a
broken engine makes a scenario FAIL (a proof that cannot fail proves nothing)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
METRICS = {"checkpoint_cost_ms", "recovery_latency_ms", "repeated_tool_calls",
           "input_state_accuracy", "checklist_completion"}


def _prove(*args: str, env: dict | None = None, timeout: float = 400):
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CONTINUATION_FAULT", None)
    return subprocess.run([sys.executable, "-m", "continuation", "prove", *args],
                          capture_output=True, timeout=timeout, env=full_env, cwd=str(ROOT))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    # the user's state home must not be touched: point it somewhere we can check stays empty
    guard = tmp_path_factory.mktemp("user-state")
    proc = _prove("--json", "--scenario", "2", "--scenario", "5", "--scenario", "10",
                  env={"CONTINUATION_HOME": str(guard / "state"), "HOME": str(guard / "home")})
    assert proc.stdout, proc.stderr.decode(errors="replace")
    rep = json.loads(proc.stdout)
    rep["_exit"] = proc.returncode
    rep["_guard"] = guard
    return rep


def test_report_structure(report):
    assert set(report) >= {"passed", "summary", "scenarios", "seconds", "jobs", "wall_seconds"}
    assert report["summary"]["total"] == 3
    assert [s["scenario"] for s in report["scenarios"]] == [2, 5, 10]
    for s in report["scenarios"]:
        assert s["status"] in ("PASS", "FAIL")
        assert s["checks"], s
        for c in s["checks"]:
            assert set(c) == {"name", "ok", "detail"} and isinstance(c["ok"], bool)
        assert "checklist_completion" in s["metrics"]
    boundary = report["scenarios"][0]["metrics"]
    assert METRICS <= set(boundary), boundary
    assert boundary["checkpoint_cost_ms"] > 0 and boundary["recovery_latency_ms"] > 0


def test_available_scenarios_pass_and_exit_zero(report):
    failed = [(s["scenario"], s["error"], [c for c in s["checks"] if not c["ok"]])
              for s in report["scenarios"] if s["status"] != "PASS"]
    assert not failed
    assert report["passed"] is True and report["_exit"] == 0
    for s in report["scenarios"][:2]:
        assert s["metrics"]["repeated_tool_calls"] == 0
        assert s["metrics"]["input_state_accuracy"] == 1.0


def test_prove_never_writes_to_the_callers_state_home(report):
    guard = report["_guard"]
    assert not (guard / "state").exists()
    assert not any((guard / "home").rglob("*")) if (guard / "home").exists() else True


def test_a_broken_engine_makes_the_scenario_fail(tmp_path):
    """Break the lifecycle so a completed turn leaves its input pending: after the boundary the
    handled request is re-offered as actionable, and scenario 2 must say so."""
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import statemachine.reducer as _reducer

        _original = _reducer.next_state

        def _broken(state, trigger, input_id=None):
            if trigger == "turn_completed":
                return state  # the bug: a completed turn never hands its input
            return _original(state, trigger, input_id)

        _reducer.next_state = _broken
    """), encoding="utf-8")
    pythonpath = os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])
    proc = _prove("--json", "--scenario", "2", env={"PYTHONPATH": pythonpath})
    rep = json.loads(proc.stdout)
    assert proc.returncode == 1
    (s,) = rep["scenarios"]
    assert s["status"] == "FAIL"
    failed = [c["name"] for c in s["checks"] if not c["ok"]]
    assert any("lists A as not actionable" in name for name in failed), failed
    assert any(name.startswith("input states") for name in failed), failed
    assert s["metrics"]["input_state_accuracy"] < 1.0


def test_unknown_scenario_is_a_clear_error():
    proc = _prove("--scenario", "99", timeout=60)
    assert proc.returncode == 2
    assert b"no scenario 99" in proc.stderr and b"Traceback" not in proc.stderr


def test_missing_feature_reports_not_available(monkeypatch):
    from continuation.host import faults
    from continuation.prove import run_scenario

    monkeypatch.setattr(faults, "POINTS", tuple(p for p in faults.POINTS if p != "snapshot.mid"))
    result = run_scenario(7)
    assert not result.passed
    assert result.error == "not available: fault points ['snapshot.mid'] in continuation/host/faults.py"


def test_legacy_capsule_copy_equals_the_fixture():
    from continuation.prove.legacy_capsule import CAPSULE_V1

    assert CAPSULE_V1 == (ROOT / "fixtures" / "capsule_v1.json").read_bytes()
