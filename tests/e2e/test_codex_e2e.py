"""The real Codex CLI 0.171.0, offline, through a real auto-compaction, with our hooks.

Each scenario run (``codex_harness.run_compaction_scenario``, ~3 s once the
CLI is cached) feeds the tests below: ``codex exec`` (a tool call, an answer),
then ``codex exec resume --last`` with ``model_auto_compact_token_limit=1400``.
In mode "pre-turn" Codex compacts before the second turn starts; in mode
"mid-turn" it compacts inside the second turn, after its tool call ran (the
case where the replacement history forgets that tool call). Skipped with the
reason when node/npm is missing or the npm install fails.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codex_harness as ch  # noqa: E402

pytestmark = pytest.mark.e2e

BEGIN_LINE = re.compile(r"<<<" + re.escape(ch.CAPSULE_MARKER) + r" [0-9a-f]+ BEGIN>>>")


@pytest.fixture(scope="module", params=sorted(ch.COMPACTION_MODES))
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    mode = request.param
    root = tmp_path_factory.mktemp(f"codex-e2e-{mode}")
    result = ch.run_compaction_scenario(root, mode=mode, codex=codex)
    return _save(result, root, f"codex-e2e-report-{mode}.json")


def _save(result: dict, root: Path, name: str) -> dict:
    text = json.dumps(result, indent=2, ensure_ascii=False)
    (root / "report.json").write_text(text, encoding="utf-8")
    copy_to = os.environ.get("CONTINUATION_E2E_REPORT_DIR")
    if copy_to:  # scripts/e2e_codex.sh prints a summary from here
        Path(copy_to).mkdir(parents=True, exist_ok=True)
        (Path(copy_to) / name).write_text(text, encoding="utf-8")
    return result


def _events(report: dict) -> list[dict]:
    events = report["events"]
    assert isinstance(events, dict) and "events" in events, f"continuation events --json failed: {events}"
    return events["events"]


def test_both_codex_runs_finish(report: dict) -> None:
    for run in report["runs"]:
        assert run["exit"] == 0, report["run_output"]
    if report["mode"] == "pre-turn":
        # Each command ran exactly once.
        assert report["notes_txt"] == "line\nsecond\n"
    else:
        # The scripted model does not read context: after a mid-turn compaction
        # it re-issues the forgotten tool call (what a model without our
        # context does; see ../shared/fixtures/codex).
        assert report["notes_txt"].startswith("line\nsecond\n")


def test_installer_hooks_are_the_ones_codex_lists_with_matching_trust_hashes(report: dict) -> None:
    assert report["install"]["installed"] is True, report["install"]
    assert report["install"]["record"], "the installer kept the original (absent) file in its record"
    listed = report["hooks_list"]
    assert "hooks_list_error" not in report
    assert {h["command"] for h in listed} == {report["install"]["hook_command"]}
    events = {h["event"] for h in listed}
    assert events == {"sessionStart", "userPromptSubmit", "preToolUse", "postToolUse", "preCompact",
                      "postCompact", "stop", "sessionEnd", "interrupt"}
    # Our trust computation agrees with Codex: both say untrusted (no trust written) ...
    assert {h["trust"] for h in listed} == {"untrusted"}
    assert set(report["install"]["trust"].values()) == {"untrusted"}
    # ... and our hash is Codex's currentHash for every hook.
    from continuation.install.codex import codex_hook_hash

    hooks_json = report["install"]["hooks_json"]["hooks"]
    for hook in listed:
        event = hook["event"][0].upper() + hook["event"][1:]
        group_index, handler_index = (int(x) for x in hook["key"].rsplit(":", 2)[1:])
        group = hooks_json[event][group_index]
        assert codex_hook_hash(event, group.get("matcher"), group["hooks"][handler_index]) == hook["currentHash"]


EXPECTED_SECOND_RUN = {
    # Pre-turn auto-compaction on resume: the compaction hooks fire first, then
    # SessionStart twice (source resume, then compact), then the prompt.
    "pre-turn": ["PreCompact", "PostCompact", "SessionStart", "SessionStart", "UserPromptSubmit", "PreToolUse",
                 "PostToolUse", "Stop"],
    # Mid-turn: after the tool call; SessionStart(compact) fires inside the turn
    # and no UserPromptSubmit follows (the turn just goes on).
    "mid-turn": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact",
                 "SessionStart", "PreToolUse", "PostToolUse", "Stop"],
}


def test_uninstall_puts_codex_home_back(report: dict) -> None:
    # hooks.json did not exist before install: uninstall removes it again, and
    # leaves everything Codex itself wrote (config.toml, sessions, ...).
    assert report["uninstall"]["hooks_json_exists"] is False, report["uninstall"]
    assert "config.toml" in report["uninstall"]["codex_home_entries"]


def test_hook_events_fire_in_the_observed_order(report: dict) -> None:
    first, second = report["runs"]
    assert first["hook_events"][:5] == ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    assert second["hook_events"] == EXPECTED_SECOND_RUN[report["mode"]]
    starts = [e["data"].get("source") for e in _events(report) if e["type"] == "session_started"]
    assert starts == ["startup", "resume", "compact"]


def test_exactly_one_real_compaction_happened(report: dict) -> None:
    kinds = [r["kind"] for r in report["requests"]]
    assert kinds.count("compaction") == 1, kinds
    assert report["compaction_request_index"] is not None


def test_no_hook_error_was_logged(report: dict) -> None:
    assert report["hook_errors_log"] is None, report["hook_errors_log"]


def test_engine_input_states(report: dict) -> None:
    inputs = report["inputs"]
    assert isinstance(inputs, dict) and "inputs" in inputs, f"continuation inputs --json failed: {inputs}"
    states = {i["text"]: i["state"] for i in inputs["inputs"]}
    assert states == {ch.PROMPT_1: "handled", ch.PROMPT_2: "handled"}
    after_first = {i["text"]: i["state"] for i in report["inputs_after_run1"]["inputs"]}
    assert after_first == {ch.PROMPT_1: "handled"}


def test_the_request_after_compaction_carries_our_context(report: dict) -> None:
    assert report["marker_in_request_after_compaction"], (
        "the first model request after the compaction does not contain the continuation checkpoint; "
        f"requests: {report['requests']}; hook errors: {report['hook_errors_log']}"
    )
    items = report["marker_items_after_compaction"]
    assert any(i["role"] == "developer" for i in items), items
    assert not report["marker_in_requests_before_compaction"]


def test_checkpoint_block_is_well_formed_in_the_request(report: dict) -> None:
    text = report["message_texts_after_compaction"]
    assert text is not None, "no model request after the compaction"
    begins = BEGIN_LINE.findall(text)
    assert begins, "no <<<CONTINUATION-CHECKPOINT <nonce> BEGIN>>> line in the post-compaction request"
    nonce = begins[0].split()[1]
    assert f"<<<{ch.CAPSULE_MARKER} {nonce} END>>>" in text
    # The still-relevant user inputs are in the block, with their states.
    block = text[text.index(begins[0]) : text.index(f"{nonce} END>>>")]
    assert "append a line to notes.txt" in block
    if report["mode"] == "mid-turn":
        # The pending request and the tool call that already ran for it before
        # the compaction are in the block: the history Codex kept forgot them.
        assert "append a second line" in block
        assert "echo second >> notes.txt" in block


@pytest.fixture(scope="module")
def trust_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    root = tmp_path_factory.mktemp("codex-e2e-trust")
    return _save(ch.run_trust_scenario(root, codex=codex), root, "codex-e2e-trust.json")


def test_untrusted_hooks_are_silently_skipped(trust_report: dict) -> None:
    assert trust_report["before_trust"]["codex"] == ["untrusted"]
    assert set(trust_report["before_trust"]["ours"].values()) == {"untrusted"}
    run = trust_report["untrusted_run"]
    assert run["exit"] == 0, trust_report["run_output"]["untrusted"]
    assert run["hook_events"] == [], "Codex 0.171.0 must not run untrusted hooks"
    after = trust_report["inputs_after_untrusted"]
    assert not (isinstance(after, dict) and after.get("inputs")), f"the engine saw nothing: {after}"


def test_trusted_hooks_run_and_status_agrees_with_codex(trust_report: dict) -> None:
    assert trust_report["trust_entries"] == 9
    assert trust_report["after_trust"]["codex"] == ["trusted"], "Codex accepts the trust keys and hashes we compute"
    assert trust_report["after_trust"]["all_trusted"] is True
    run = trust_report["trusted_run"]
    assert run["exit"] == 0, trust_report["run_output"]["trusted"]
    assert run["hook_events"][:3] == ["SessionStart", "UserPromptSubmit", "Stop"]
    states = {i["text"]: i["state"] for i in trust_report["inputs"]["inputs"]}
    assert states == {"say hello (trusted)": "handled"}


# Codex 0.171.0 passes a hook's additionalContext whole up to 10,000 characters;
# a longer one reaches the model cut to head and tail ("Warning: truncated
# output", "…N tokens truncated…", "Full hook output saved to: /tmp/hook_outputs/...").
# Measured with tests/e2e/recorder_hook.py (RECORDER_CONTEXT_CHARS=10000 whole, 10010 cut).
CODEX_CONTEXT_LIMIT = 10_000
SPILL_PATH = re.compile(r'in the file "([^"]+)"')


@pytest.fixture(scope="module")
def long_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    root = tmp_path_factory.mktemp("codex-e2e-long")
    result = ch.run_compaction_scenario(root, mode="mid-turn", codex=codex, prompt_2=ch.long_prompt(30_000))
    return _save(result, root, "codex-e2e-long-request.json")


def test_a_long_pending_request_still_reaches_the_model_uncut_by_codex(long_report: dict) -> None:
    contexts = long_report["context_items_after_compaction"]
    assert contexts, f"no checkpoint after the compaction: {long_report['requests']}"
    for text in contexts:
        assert len(text) <= CODEX_CONTEXT_LIMIT, f"{len(text)} chars: Codex would cut the middle out"
        assert "Full hook output saved to" not in text and "tokens truncated" not in text
        begin = BEGIN_LINE.search(text)
        assert begin, text[:500]
        assert f"<<<{ch.CAPSULE_MARKER} {begin.group(0).split()[1]} END>>>" in text
        assert "append a second line" in text
    # What did not fit is one file away, whole.
    spills = {Path(p) for text in contexts for p in SPILL_PATH.findall(text)}
    assert spills, "a shortened context names the file holding the full text"
    assert any("END-OF-LONG-REQUEST" in p.read_text(encoding="utf-8") for p in spills if p.exists())


def test_a_long_pending_request_is_handled_once_its_turn_completes(long_report: dict) -> None:
    states = [i["state"] for i in long_report["inputs"]["inputs"]]
    assert states == ["handled", "handled"]
    assert long_report["hook_errors_log"] is None


def test_codex_passes_10000_characters_of_hook_context_whole_and_cuts_longer(tmp_path: Path) -> None:
    """The limit the engine's Codex context budget relies on, measured on the pinned binary."""
    codex = ch.codex_or_skip()
    measured = ch.measure_context_limit(tmp_path, (CODEX_CONTEXT_LIMIT, CODEX_CONTEXT_LIMIT + 10), codex=codex)
    at_limit, over = measured[str(CODEX_CONTEXT_LIMIT)], measured[str(CODEX_CONTEXT_LIMIT + 10)]
    assert measured["exec_exit"] == 0 and at_limit["exit"] == 0 and over["exit"] == 0, measured
    assert at_limit["whole"] == [True] and at_limit["cut_notice"] == [False], measured
    assert over["whole"] == [False] and over["cut_notice"] == [True], measured


@pytest.fixture(scope="module")
def killed_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    root = tmp_path_factory.mktemp("codex-e2e-killed")
    return _save(ch.run_killed_tool_call_scenario(root, codex=codex), root, "codex-e2e-killed.json")


def _states(view: dict) -> dict[str, str]:
    assert isinstance(view, dict) and "inputs" in view, view
    return {i["text"]: i["state"] for i in view["inputs"]}


def test_sigkill_during_a_tool_call_leaves_the_input_reconciling_after_recover(killed_report: dict) -> None:
    killed = killed_report["killed_run"]
    assert killed["hook_fired"], killed
    assert killed["hook_events"][-1] == "PreToolUse" and "PostToolUse" not in killed["hook_events"]
    # Before anyone looks, the engine only knows the prompt was given and not finished.
    assert _states(killed_report["inputs_before_recover"]) == {ch.PROMPT_1: "handled", ch.PROMPT_SLOW: "pending"}
    assert _states(killed_report["inputs"]) == {ch.PROMPT_1: "handled", ch.PROMPT_SLOW: "reconciling"}
    (slow,) = [i for i in killed_report["inputs"]["inputs"] if i["text"] == ch.PROMPT_SLOW]
    (call,) = killed_report["reconcile"]["calls"]
    assert slow["unknown_calls"] == [call["call_id"]]
    assert call["status"] == "unknown" and call["args"] == {"command": "sleep 30"}
    assert killed_report["hook_errors_log"] is None


def test_resuming_after_the_crash_gives_the_model_the_unsettled_tool_call(killed_report: dict) -> None:
    assert killed_report["resumed_run"]["exit"] == 0
    contexts = killed_report["resumed_first_request_contexts"]
    assert contexts, "the first request after resuming the crashed session carries no checkpoint"
    text = contexts[-1]
    assert "sleep 30" in text and "reconciling" in text
    # Resuming is not a retry: the unsettled request stays reconciling, the new prompt is answered.
    states = _states(killed_report["inputs_after_resume"])
    assert states[ch.PROMPT_SLOW] == "reconciling"
    assert states[ch.PROMPT_AFTER_CRASH] == "handled"


@pytest.fixture(scope="module")
def interrupted_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    codex = ch.codex_or_skip()
    root = tmp_path_factory.mktemp("codex-e2e-interrupted")
    return _save(ch.run_killed_tool_call_scenario(root, codex=codex, interrupt=True), root,
                 "codex-e2e-interrupted.json")


def test_ctrl_c_during_a_tool_call_is_an_interrupt_the_engine_hears_at_once(interrupted_report: dict) -> None:
    run = interrupted_report["killed_run"]
    assert run["hook_fired"], run
    # Codex 0.171.0 fires Interrupt (installed by us) and neither PostToolUse nor Stop.
    assert run["hook_events"][-2:] == ["PreToolUse", "Interrupt"], run
    # No crash to detect: the turn was aborted with its tool call open, so the input waits
    # for reconciliation right away, and `recover` finds nothing interrupted by a crash.
    before = {i["text"]: i for i in interrupted_report["inputs_before_recover"]["inputs"]}
    assert before[ch.PROMPT_SLOW]["state"] == "reconciling"
    assert before[ch.PROMPT_1]["state"] == "handled"
    assert interrupted_report["recover"]["interrupted"] == []
    (call,) = interrupted_report["reconcile"]["calls"]
    assert before[ch.PROMPT_SLOW]["unknown_calls"] == [call["call_id"]] and call["status"] == "unknown"
    assert interrupted_report["hook_errors_log"] is None
