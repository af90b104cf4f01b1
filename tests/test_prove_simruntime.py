"""The simulated runtime as a process: bad scripts, broken hook answers, the ledger."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(tmp_path: Path, script: dict | str) -> subprocess.CompletedProcess:
    path = tmp_path / "script.json"
    path.write_text(script if isinstance(script, str) else json.dumps(script), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "continuation.prove.simruntime", str(path)],
                          capture_output=True, timeout=120)


def _script(tmp_path: Path, hook) -> dict:
    (tmp_path / "ws").mkdir()
    return {"runtime": "codex", "session_id": "sim-test", "cwd": str(tmp_path / "ws"),
            "transcript_path": "", "hook": hook, "policy": "continuation",
            "log": str(tmp_path / "log.jsonl"), "ledger": str(tmp_path / "ledger.jsonl"),
            "state": str(tmp_path / "state.json"),
            "catalog": {"A": {"text": "do a", "tools": [
                {"tool": "Bash", "input": {"command": "a0"}, "effect": {"append": "out.txt"}},
                {"tool": "Bash", "input": {"command": "a1"}}]}},
            "steps": [{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
                      {"op": "act"}, {"op": "stop", "turn": "t1"}, {"op": "act"}]}


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_malformed_script_is_a_clear_error(tmp_path):
    proc = _run(tmp_path, "{not json")
    assert proc.returncode == 2
    assert b"cannot read script" in proc.stderr and b"Traceback" not in proc.stderr


def test_a_broken_hook_answer_does_not_stop_the_runtime(tmp_path):
    hook = [sys.executable, "-c", "import sys; sys.stdout.write('not json'); sys.exit(3)"]
    proc = _run(tmp_path, _script(tmp_path, hook))
    assert proc.returncode == 0, proc.stderr
    hooks = [x for x in _lines(tmp_path / "log.jsonl") if x["kind"] == "hook"]
    assert [h["event"] for h in hooks] == ["SessionStart", "UserPromptSubmit", "PreToolUse",
                                           "PostToolUse", "PreToolUse", "PostToolUse", "Stop"]
    assert {h["rc"] for h in hooks} == {3} and not any(h["context_chars"] for h in hooks)


def test_each_planned_call_runs_once_and_is_in_the_ledger(tmp_path):
    proc = _run(tmp_path, _script(tmp_path, None))
    assert proc.returncode == 0, proc.stderr
    ledger = _lines(tmp_path / "ledger.jsonl")
    # the second "act" finds A answered in its memory: nothing runs twice
    assert [(x["key"], x["tool_index"]) for x in ledger] == [("A", 0), ("A", 1)]
    assert (tmp_path / "ws" / "out.txt").read_text(encoding="utf-8") == "A\n"
