"""The real Gemini CLI 0.61.0, offline, through an auto-compression, with our hooks installed.

Each scenario run (``gemini_harness.run_scenario``, ~20 s once the CLI is cached) feeds the tests:
install into a user settings.json that already has the user's own hooks and hooks switched off,
three headless runs (the second compresses mid-turn, after its second tool call; in mode
"after-tool" a third call follows, in mode "next-run" the turn ends on text), uninstall.
Findings it pins down (Gemini CLI 0.61.0):

- ``GOOGLE_GEMINI_BASE_URL`` points the CLI at a loopback API (API-key auth);
- PreCompress fires before every model request (``trigger: auto``) whether or not the CLI then
  compresses; its payload is the base fields plus ``trigger``;
- no SessionStart follows a compression; the first hook answer that reaches the model after it
  is AfterTool's ``additionalContext``, appended to the tool result (and kept in the history);
  with no tool call after it, the next run's SessionStart(resume) answer, which ``gemini -p``
  puts before the prompt;
- hook ids: only ``session_id``; no prompt, turn or tool-call id.

Skipped with the reason when node/npm is missing or the npm install fails.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gemini_harness as gh  # noqa: E402
from npm_tools import ToolUnavailable  # noqa: E402

pytestmark = pytest.mark.e2e
MARKER = "CONTINUATION-CHECKPOINT"  # capsule/render.py; Gemini escapes the <<< >>> around it


@pytest.fixture(scope="module", params=sorted(gh.MODES))
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    try:
        gemini = gh.ensure_gemini()
    except ToolUnavailable as exc:
        pytest.skip(f"real Gemini CLI unavailable: {exc}")
    mode = request.param
    root = tmp_path_factory.mktemp(f"gemini-e2e-{mode}")
    result = gh.run_scenario(root, gemini, mode)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    (root / "report.json").write_text(text, encoding="utf-8")
    if os.environ.get("CONTINUATION_E2E_REPORT_DIR"):
        out = Path(os.environ["CONTINUATION_E2E_REPORT_DIR"])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"gemini-e2e-report-{mode}.json").write_text(text, encoding="utf-8")
    return result


def _events(report: dict) -> list[dict]:
    assert "events" in report["events"], report["events"]
    return report["events"]["events"]


def _after_tool(report: dict) -> bool:
    return report["mode"] == "after-tool"


def _compression_indexes(report: dict) -> list[int]:
    return [i for i, r in enumerate(report["requests"])
            if r["path"].split("?")[0].endswith(":generateContent") and "<state_snapshot>" in json.dumps(r["body"])]


def test_all_runs_finish_and_each_command_ran_once(report: dict) -> None:
    for run in report["runs"]:
        assert run["exit"] == 0, run["output"]
    assert report["notes.txt"] == "line\nsecond\n"
    assert report["steps.txt"] == ("one\ntwo\nthree\n" if _after_tool(report) else "one\ntwo\n")
    assert report["hook_errors_log"] is None, report["hook_errors_log"]


def test_install_merges_switches_hooks_on_and_uninstall_restores_bytes(report: dict) -> None:
    install = report["install"]
    assert install["exit"] == 0, install
    assert any("hooksConfig.enabled" in w for w in install["report"]["warnings"])
    settings = report["settings_installed"]
    assert settings["hooksConfig"]["enabled"] is True
    for event, groups in settings["hooks"].items():
        commands = [h["command"] for g in groups for h in g["hooks"]]
        assert "recorder_hook.py" in commands[0], "the user's own hook stays first"
        assert commands[-1].endswith("hook --runtime gemini")
    # The user's hook ran on every event next to ours.
    assert {p["hook_event_name"] for p in report["recorded"]} == set(settings["hooks"])
    assert report["uninstall"]["exit"] == 0 and report["uninstall"]["restored"], report["uninstall"]


def test_precompress_fires_before_every_model_request_with_base_fields_and_trigger(report: dict) -> None:
    recorded = report["recorded"]
    pre = [p for p in recorded if p["hook_event_name"] == "PreCompress"]
    streamed = [r for r in report["requests"] if ":streamGenerateContent" in r["path"]]
    # one per streamed model request: 2 + 4 + 2 (2 + 3 + 2 without the third step)
    assert len(pre) == len(streamed) == (8 if _after_tool(report) else 7)
    assert {p["trigger"] for p in pre} == {"auto"}
    assert set(pre[0]) == {"session_id", "transcript_path", "cwd", "hook_event_name", "timestamp", "trigger"}
    # No hook payload carries a prompt, turn or tool-call id.
    assert not any(k in p for p in recorded for k in ("prompt_id", "turn_id", "tool_use_id", "call_id"))


def test_exactly_one_compression_and_one_boundary(report: dict) -> None:
    assert len(_compression_indexes(report)) == 2, "a summary request and its verification"
    boundaries = [e for e in _events(report) if e["type"] == "boundary"]
    assert [b["data"]["trigger"] for b in boundaries] == ["auto"]
    starts = [e["data"]["source"] for e in _events(report) if e["type"] == "session_started"]
    assert starts == ["startup", "resume", "resume"], "no SessionStart follows a compression"


def test_inputs_admitted_once_each_and_handled(report: dict) -> None:
    threads = report["status"]
    inputs = [i for t in threads["threads"] for i in t["inputs"]] if "threads" in threads else threads["inputs"]
    assert sorted((i["text"], i["state"]) for i in inputs) == sorted((p, "handled") for p in gh.PROMPTS)
    admitted = [e for e in _events(report) if e["type"] == "input_admitted"]
    assert [e["data"]["turn_id"] for e in admitted] == ["prompt-1", "prompt-2", "prompt-3"]
    assert all(e["data"]["id_source"] == "hash" for e in admitted)
    # The SessionStart context Gemini puts before the prompt in `gemini -p` is not the input.
    assert all("hook_context" not in e["data"]["text"] for e in admitted)


def test_tool_calls_paired_with_outcomes(report: dict) -> None:
    finished = {e["data"]["call_id"]: e["data"]["status"] for e in _events(report) if e["type"] == "tool_finished"}
    expected = {"prompt-1:call-1": "ok", "prompt-2:call-1": "ok", "prompt-2:call-2": "ok",
                "prompt-2:call-3": "ok", "prompt-3:call-1": "ok"}
    if not _after_tool(report):
        del expected["prompt-2:call-3"]
    assert finished == expected


def test_after_tool_carries_the_context_into_the_next_model_request(report: dict) -> None:
    if not _after_tool(report):
        pytest.skip("no tool call after the compression in this mode")
    compression = _compression_indexes(report)[-1]
    before = report["requests"][:compression]
    assert not any(MARKER in json.dumps(r["body"]) for r in before)
    after = [r for r in report["requests"][compression + 1:] if ":streamGenerateContent" in r["path"]]
    # The request right after the compression was built before it (the tool result of step two);
    # the next one carries the context, appended by AfterTool to the result of step three.
    assert MARKER not in json.dumps(after[0]["body"])
    last = after[1]["body"]["contents"][-1]
    response = last["parts"][0]["functionResponse"]["response"]["output"]
    assert "<hook_context>" in response and MARKER in response
    assert "do two steps please" in response and "state=pending" in response
    delivered = [e["data"]["via"] for e in _events(report) if e["type"] == "context_delivered"]
    assert delivered == ["after_tool"], "delivered once; the resumed run does not repeat it"
    # Gemini keeps it in the history: the third run's first request still has it.
    third = report["requests"][report["runs"][2]["requests"][0]]
    assert MARKER in json.dumps(third["body"])


def test_import_of_the_session_file_agrees_with_the_hooks(report: dict) -> None:
    assert len(report["transcripts"]) == 1, "the hooks name one session file for the three runs"
    same = report["import_same"]
    assert "error" not in same, same
    assert same["inputs_seen"] == 3 and same["inputs_admitted"] == 0 and same["duplicates"] == 3
    fresh = report["import_fresh"]
    calls = 5 if _after_tool(report) else 4
    assert fresh["compactions"] == 1 and fresh["tool_calls_paired"] == calls and not fresh["tool_calls_unpaired"]

    def ids(events: list[dict], etype: str, key: str) -> list[str]:
        return [e["data"][key] for e in events if e["type"] == etype]

    imported = report["import_fresh_events"]["events"]
    for etype, key in (("input_admitted", "input_id"), ("tool_started", "call_id")):
        assert ids(imported, etype, key) == ids(_events(report), etype, key)


def test_without_a_tool_after_it_the_next_run_carries_the_context(report: dict) -> None:
    if _after_tool(report):
        pytest.skip("AfterTool carries it in this mode")
    compression = _compression_indexes(report)[-1]
    second_end = report["runs"][1]["requests"][1]
    assert not any(MARKER in json.dumps(r["body"]) for r in report["requests"][:second_end])
    assert compression < second_end, "the compression happened in the second run"
    first_of_third = report["requests"][report["runs"][2]["requests"][0]]["body"]
    prompt = "".join(p.get("text", "") for p in first_of_third["contents"][-1]["parts"])
    # `gemini -p` puts the SessionStart(resume) answer before the prompt
    assert prompt.index(MARKER) < prompt.index("append a second line")
    assert "do two steps please" in prompt, "the capsule lists the second request"
    delivered = [e["data"]["via"] for e in _events(report) if e["type"] == "context_delivered"]
    assert delivered == ["session_start"]
