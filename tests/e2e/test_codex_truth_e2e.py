"""With the real Codex CLI 0.171.0: what the model is handed after a mid-turn
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

from capsule.work_line import parse_work_line  # noqa: E402

pytestmark = pytest.mark.e2e

FAILING = "ls /nonexistent-continuation-e2e"


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    root = tmp_path_factory.mktemp("codex-e2e-failing")
    return ch.run_compaction_scenario(root, mode="mid-turn", codex=codex,
                                      prompt_2=f"check a path: `{FAILING}`")


def test_the_failed_command_reaches_the_model_as_failed_after_a_mid_turn_compaction(
        failing_report: dict) -> None:
    contexts = failing_report["context_items_after_compaction"]
    assert contexts, f"no checkpoint after the compaction: {failing_report['requests']}"
    block = "\n".join(contexts)
    calls = [(x, f) for x in block.splitlines() if (f := parse_work_line(x)) and FAILING in f["text"]]
    assert calls, block[-3000:]
    [(line, f)] = calls
    assert (f["status"], f["exit"], f["text"]) == ("error", 2, f"$ {FAILING}"), line
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


# -- items 3, 4, 8: a provider restarted between turns, a kill -9, a decision, a resume ---------

def _run_restarted_provider_scenario(root: Path, codex: Path) -> dict:
    """``codex exec`` against one stand-in (its first call is `call_0`); then ``exec resume``
    against a fresh stand-in process, whose first call is `call_0` again (`sleep 30`): SIGKILL
    of Codex while it runs. Then `status`, `recover`, `reconcile`, a `--not-applied` decision,
    and ``exec resume`` once more."""
    from responses_standin import ResponsesStandin, ScriptedModel

    sandbox = ch.CodexSandbox(root, codex, ch.default_launcher())
    report: dict = {}
    with ResponsesStandin(sandbox.request_log, ScriptedModel(tokens_before_compaction=200)) as first:
        sandbox.write_config(first.base_url)
        report["install"] = sandbox.install_hooks()
        report["first_run"] = sandbox.run_codex("exec", sandbox.exec_args(ch.PROMPT_1)).summary()
        report["first_calls"] = [i.get("call_id") for r in first.requests()
                                 for i in r.get("reply", []) if i.get("type") == "function_call"]
    log2 = root / "requests-2.jsonl"
    with ResponsesStandin(log2, ScriptedModel(tokens_before_compaction=200)) as second:
        sandbox.write_config(second.base_url)
        report["killed_run"] = ch.run_until_hook_then_kill(
            sandbox, sandbox.exec_args("resume", "--last", ch.PROMPT_SLOW), "PreToolUse")
        report["second_calls"] = [i.get("call_id") for r in second.requests()
                                  for i in r.get("reply", []) if i.get("type") == "function_call"]
        report["status"] = ch._json_or_text(sandbox.continuation("status", "--json"))
        report["recover"] = ch._json_or_text(sandbox.continuation("recover", "--record", "--json"))
        report["inputs"] = ch._json_or_text(sandbox.continuation("inputs", "--json"))
        report["reconcile"] = ch._json_or_text(sandbox.continuation("reconcile", "--json"))
        calls = (report["reconcile"] or {}).get("calls") or [{}]
        decided = sandbox.continuation("reconcile", calls[0].get("call_id") or "-", "--not-applied")
        report["decision"] = {"exit": decided.returncode, "out": decided.stdout + decided.stderr}
        seen = len(second.requests())
        report["resumed_run"] = sandbox.run_codex(
            "exec resume after the decision",
            sandbox.exec_args("resume", "--last", ch.PROMPT_AFTER_CRASH)).summary()
        posts = [r for r in second.requests()[seen:] if r.get("method") == "POST"]
        report["resumed_contexts"] = (ch._developer_texts_with(posts[0], ch.CAPSULE_MARKER)
                                      if posts else None)
        report["inputs_after_resume"] = ch._json_or_text(sandbox.continuation("inputs", "--json"))
    report["hook_errors_log"] = ch._read(sandbox.state / "logs" / "hooks.log")
    return report


@pytest.fixture(scope="module")
def restarted_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    return _run_restarted_provider_scenario(tmp_path_factory.mktemp("codex-e2e-restarted"), codex)


def test_the_provider_reused_call_0_and_both_calls_are_recorded(restarted_report: dict) -> None:
    assert restarted_report["first_calls"][:1] == ["call_0"], restarted_report["first_calls"]
    assert restarted_report["second_calls"][:1] == ["call_0"], restarted_report["second_calls"]
    assert restarted_report["killed_run"]["hook_fired"], restarted_report["killed_run"]
    (call,) = restarted_report["reconcile"]["calls"]
    assert call["call_id"].startswith("call_0@") and call["args"] == {"command": "sleep 30"}
    states = {i["text"]: i["state"] for i in restarted_report["inputs"]["inputs"]}
    assert states == {ch.PROMPT_1: "handled", ch.PROMPT_SLOW: "reconciling"}
    assert restarted_report["hook_errors_log"] is None, restarted_report["hook_errors_log"]


def test_status_said_killed_before_recover(restarted_report: dict) -> None:
    (thread,) = restarted_report["status"]["threads"]
    assert thread["thread"]["status"] == "killed", thread["runtime"]
    assert {i["state"] for i in thread["inputs"]} == {"handled", "pending"}


def test_the_not_applied_decision_reaches_the_model_on_resume(restarted_report: dict) -> None:
    assert restarted_report["decision"]["exit"] == 0, restarted_report["decision"]
    assert restarted_report["resumed_run"]["exit"] == 0, restarted_report["resumed_run"]
    contexts = restarted_report["resumed_contexts"]
    assert contexts, "the first request after the decision carries no checkpoint"
    text = contexts[-1]
    assert "not applied: it did not take effect; its work is still to do" in text, text[-3000:]
    assert "sleep 30" in text
