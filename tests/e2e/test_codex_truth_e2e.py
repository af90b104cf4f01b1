"""Issue 12 with the real Codex CLI 0.171.0: what the model is handed after a mid-turn
auto-compaction tells the truth about a command that failed before it (item 2).

Codex's PostToolUse carries no exit code; the turn's Stop comes after the compaction. The
checkpoint committed at PreCompact must already say the command failed (exit 2), in the call
list and in the runtime facts alike.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codex_harness as ch  # noqa: E402
from npm_tools import ToolUnavailable  # noqa: E402

pytestmark = pytest.mark.e2e

FAILING = "ls /nonexistent-continuation-e2e"


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    try:
        codex = ch.ensure_codex()
    except ToolUnavailable as exc:
        pytest.skip(f"real Codex CLI unavailable: {exc}")
    root = tmp_path_factory.mktemp("codex-e2e-failing")
    return ch.run_compaction_scenario(root, mode="mid-turn", codex=codex,
                                      prompt_2=f"check a path: `{FAILING}`")


def test_the_failed_command_reaches_the_model_as_failed_after_a_mid_turn_compaction(
        failing_report: dict) -> None:
    contexts = failing_report["context_items_after_compaction"]
    assert contexts, f"no checkpoint after the compaction: {failing_report['requests']}"
    block = "\n".join(contexts)
    line = next((x for x in block.splitlines() if FAILING in x and "status=" in x), None)
    assert line is not None, block[-3000:]
    assert "status=error" in line and "exit_code=2" in line, line
    assert "status=ok" not in line, line
    facts = [x for x in block.splitlines() if "finished:" in x]
    assert any("finished: error exit 2" in x for x in facts), facts
    assert not any(x.rstrip('"').endswith("finished: ok") for x in facts), facts


def test_the_exit_code_is_learnt_before_the_compaction_boundary(failing_report: dict) -> None:
    events = failing_report["events"]["events"]
    code = next((e for e in events if e["type"] == "tool_exit_code"
                 and e["data"].get("exit_code") != 0), None)
    boundary = next((e for e in events if e["type"] == "boundary"
                     and e["data"].get("kind") == "compact"), None)
    assert code is not None and code["data"]["exit_code"] == 2, events
    assert boundary is not None and code["seq"] < boundary["seq"], (code, boundary)
