"""``continuation import claude``: the real Claude Code 2.1.332 transcript, the public
transcripts in ../shared/fixtures/claude, and a synthetic queue / interrupt transcript."""
from __future__ import annotations

from collections import Counter

import pytest

from continuation.session.engine import Engine
from import_helpers import (PROJECT_TRANSCRIPTS, replay_hooks, run_import, snapshot, states,
                            thread_of)

REAL_SESSION = "69f7cc13-8194-4e19-9222-92d4ebe52422"


@pytest.fixture
def real(shared_fixtures):
    return shared_fixtures / "claude-real" / f"{REAL_SESSION}.jsonl"


def public(shared_fixtures, name):
    return shared_fixtures / "claude" / name


def test_real_transcript_four_prompts(home, real):
    report = run_import(home, "claude", real, session_over=True)
    prompts = [(p["text"], p["state"]) for p in report.prompts]
    assert prompts == [
        ("append a line to notes.txt", "handled"),
        ("append a second line", "handled"),
        # /compact is the handled boundary, not an input to re-run after it (#20370)
        ("/compact", "command (boundary)"),
        ("append a third line", "handled"),
    ]
    assert states(home, "claude", REAL_SESSION) == {
        "append a line to notes.txt": "handled", "append a second line": "handled",
        "append a third line": "handled"}
    assert report.compactions == 1 and report.commands[0]["command"] == "/compact"
    # the newer record types are skipped without error
    for kind in ("api-request", "cost-state", "mode", "tools-used", "attachment",
                 "api-request-shape", "api-request-blob", "last-prompt", "atis-latch"):
        assert report.skipped_by_type[kind] >= 1, kind
    assert report.unknown_types == Counter() and report.malformed == []
    assert report.tool_calls_paired == 1 and report.tool_calls_unpaired == []
    # compact summary, caveat and command output are not inputs
    assert report.skipped_by_type["user:compact_summary"] == 1
    assert report.skipped_by_type["user:meta"] == 1
    assert report.skipped_by_type["user:local_command_output"] == 1
    # claude -p enqueues every prompt while idle: that is not typing while busy
    assert report.queued == 0
    with Engine(home) as e:
        t = thread_of(e, "claude", REAL_SESSION)
        # ids are the hooks' prompt ids
        assert [r.input_id for r in t.inputs()] == [
            "13d80c21-4f3f-4fea-8fce-eafd8ebc77d1", "895109b5-7a4d-4c78-8baa-c6d58999cd06",
            "b329837f-de6e-487f-93d4-2dd6f88e8e41"]
        [boundary] = [ev["data"] for ev in t.events() if ev["type"] == "boundary"]
        assert boundary["kind"] == "compact" and boundary["trigger"] == "manual"
        assert [c["text"] for c in t.claims()] == [
            "Summary: the user asked to append lines to notes.txt; done.", "done (2)",
            "Summary: the user asked to append lines to notes.txt; done."]


def test_real_transcript_after_hook_replay(home, shared_fixtures, real):
    replay_hooks("claude", shared_fixtures / "claude-real" / "hook-payloads.jsonl")
    hooked = snapshot(home, "claude", REAL_SESSION)
    report = run_import(home, "claude", real, session_over=True)
    merged = snapshot(home, "claude", REAL_SESSION)
    assert report.inputs_admitted == 0 and report.duplicates == 3
    assert merged["inputs"] == hooked["inputs"] and merged["calls"] == hooked["calls"]
    assert merged["claims"] == hooked["claims"]
    # nothing but the import cursor: the compaction the PreCompact hook recorded is not repeated
    assert merged["types"] - hooked["types"] == Counter({"transcript_imported": 1})


def test_real_transcript_reimport(home, real):
    run_import(home, "claude", real, session_over=True)
    before = snapshot(home, "claude", REAL_SESSION)
    again = run_import(home, "claude", real, session_over=True)
    assert snapshot(home, "claude", REAL_SESSION) == before
    assert again.inputs_admitted == 0 and again.duplicates == 3


def _all_public(shared_fixtures):
    files = sorted((shared_fixtures / "claude").glob("*.jsonl"))
    assert len(files) >= 10
    return files


#: public transcripts that hold only a subagent's sidechain: refused, naming whose they are
SUBAGENT_ONLY = ("d-kimuson__claude-code-viewer__agent-test-hash-123.jsonl",
                 "d-kimuson__claude-code-viewer__agent-test-hash-456.jsonl")


def test_every_public_transcript_imports(home, shared_fixtures):
    for path in _all_public(shared_fixtures):
        if path.name in SUBAGENT_ONLY:
            continue
        report = run_import(home, "claude", path, session_over=True)
        assert report.records_read + len(report.malformed) >= report.lines - 1, path.name
        assert report.stopped_at is None, path.name
        # every admitted input has a state; nothing is left "pending" in a finished session
        for p in report.prompts:
            if p["kind"] == "input":
                assert p["state"] in ("handled", "interrupted", "reconciling", "rolled_back",
                                      "queued"), (path.name, p)
        again = run_import(home, "claude", path, session_over=True)
        assert again.inputs_admitted == 0 and sum(again.events_written.values()) == 0, path.name


def _states(report):
    return [(p["text"][:30], p.get("state")) for p in report.prompts]


def test_tool_heavy(home, shared_fixtures):
    r = run_import(home, "claude", public(shared_fixtures, "marot__spotter__tool_heavy.jsonl"),
                   session_over=True)
    assert r.interrupts == 2 and r.queued == 1
    assert r.tool_calls_seen == 6 and r.tool_calls_paired == 6 and r.tool_calls_unpaired == []
    assert _states(r) == [("start phoenix in background", "interrupted"),
                          ("/mcp", "command (local command)"),
                          ("scrolling back in xterm.js sti", "interrupted")]
    assert r.commands[0]["queued"] is True  # typed while the first turn was busy


def test_short_interrupted_for_tool_use(home, shared_fixtures):
    r = run_import(home, "claude", public(shared_fixtures, "marot__spotter__short.jsonl"),
                   session_over=True)
    assert r.interrupts == 1 and _states(r) == [("mix phx.server doesnt seem to ", "interrupted")]
    with Engine(home) as e:
        t = thread_of(e, "claude", "55604662-cf2a-4331-851a-ec234028f8ca")
        # the two rejected calls have an error outcome, not an unknown one
        assert sorted(c.status for c in t.tool_calls()) == ["error", "error"]


def test_edge_cases(home, shared_fixtures):
    r = run_import(home, "claude", public(shared_fixtures, "daaain__claude-code-log__edge_cases.jsonl"),
                   session_over=True)
    bad = {m["line"] for m in r.malformed}
    # strings/number/array lines, a record without type, unreadable messages, bare content item
    assert {13, 14, 15, 16, 10, 11, 18} <= bad
    # the two orphan tool_use blocks have unknown outcomes: their inputs wait for reconciliation
    assert sorted(r.tool_calls_unpaired) == ["tool_edge_002", "toolu_todowrite_002"]
    assert [s for _, s in _states(r)] == ["handled", "reconciling", "command (local command)",
                                         "reconciling"]
    with Engine(home) as e:
        t = thread_of(e, "claude", "edge_cases")
        unknown = sorted(c.call_id for c in t.tool_calls() if c.status == "unknown")
        assert unknown == ["tool_edge_002", "toolu_todowrite_002"]
        failing = [c for c in t.tool_calls() if c.tool == "FailingTool"]
        assert failing[0].status == "error"


def test_rewind_then_compaction(home, shared_fixtures):
    r = run_import(home, "claude",
                   public(shared_fixtures, "daaain__claude-code-log__dag_compact_after_rewind.jsonl"),
                   session_over=True)
    assert r.rollbacks == 1 and r.compactions == 1
    assert r.skipped_by_type["user:compact_summary"] == 1
    assert _states(r) == [("Start", "handled"), ("First attempt", "rolled_back"),
                          ("Second attempt", "handled"), ("Keep going", "handled"),
                          ("After compaction", "handled")]


def test_steering_remove_and_sidechains(home, shared_fixtures):
    r = run_import(home, "claude",
                   public(shared_fixtures, "daaain__claude-code-log__session_id_steering_order.jsonl"),
                   session_over=True)
    assert r.queued == 1
    assert ("actually — focus on the parser", "handled") in _states(r)
    with Engine(home) as e:
        t = thread_of(e, "claude", "00000000-0295-4000-8000-000000000001")
        steer = [x for x in t.inputs() if x.text.startswith("actually")][0]
        assert steer.queued and steer.turn_id == "u1"  # delivered into the running turn
    from continuation.importers import NothingRecognised

    with Engine(home) as e:
        before = [r["thread_key"] for r in e.store.threads()]
    for name in SUBAGENT_ONLY:
        # a subagent's sidechain is not the user's conversation: no thread of its own, and the
        # refusal says whose subagent it is
        with pytest.raises(NothingRecognised) as caught:
            run_import(home, "claude", public(shared_fixtures, name), session_over=True)
        assert "holds only a subagent's conversation (2 sidechain record(s))" in str(caught.value)
        assert "of session 5c0375b4-57a5-4f26-b12d-d022ee4e51b7" in str(caught.value)
    with Engine(home) as e:
        assert [r["thread_key"] for r in e.store.threads()] == before


def test_todowrite_plans(home, shared_fixtures):
    r = run_import(home, "claude",
                   public(shared_fixtures, "daaain__claude-code-log__todowrite_examples.jsonl"),
                   session_over=True)
    assert r.events_written["plan_updated"] == 3 and r.tool_calls_paired == 3
    with Engine(home) as e:
        plan = thread_of(e, "claude", "todowrite_session").meta()["plan_updated"]
        assert plan["tool"] == "TodoWrite" and any(
            "security" in str(item).lower() for item in plan["items"])


def test_synthetic_queue_interrupt_command(home):
    path = PROJECT_TRANSCRIPTS / "claude_queue_interrupt.jsonl"
    r = run_import(home, "claude", path, session_over=True)
    assert _states(r) == [("run the migration", "handled"),
                          ("then update the changelog", "reconciling"),
                          ("/model", "command (local command)"),
                          ("explain the diff", "interrupted")]
    assert r.queued == 1 and r.interrupts == 1 and r.tool_calls_unpaired == ["toolu_3"]
    assert r.unknown_types == Counter({"hologram": 1}) and "9.0.0" in r.versions
    with Engine(home) as e:
        t = thread_of(e, "claude", "synth-claude-1")
        queued = [x for x in t.inputs() if x.text == "then update the changelog"][0]
        assert queued.queued and queued.input_id == "p2" and queued.turn_id == "p2"
        types = [ev["type"] for ev in t.events()]
        assert types.count("input_delivered") == 1 and types.count("plan_updated") == 1


def test_synthetic_live_session_keeps_last_prompt_pending(home):
    path = PROJECT_TRANSCRIPTS / "claude_queue_interrupt.jsonl"
    run_import(home, "claude", path, session_over=False)
    assert states(home, "claude", "synth-claude-1")["explain the diff"] == "pending"


def test_custom_slash_command_answered_by_the_model_is_an_input(home, tmp_path):
    import json

    def rec(**kw):
        return json.dumps({"sessionId": "synth-cmd", **kw}) + "\n"

    lines = [
        rec(type="user", uuid="c1", parentUuid=None, promptId="pc",
            message={"role": "user", "content": "<command-message>review is running</command-message>\n"
                     "<command-name>/review</command-name>\n<command-args>src/app.py</command-args>"}),
        rec(type="user", uuid="c2", parentUuid="c1", promptId="pc", isMeta=True,
            message={"role": "user", "content": "Review the file src/app.py for bugs."}),
        rec(type="assistant", uuid="c3", parentUuid="c2",
            message={"role": "assistant", "content": [{"type": "text", "text": "Two bugs found."}],
                     "stop_reason": "end_turn"}),
        rec(type="user", uuid="c4", parentUuid="c3", promptId="pm",
            message={"role": "user", "content": "<command-name>/model</command-name>\n"
                     "<command-args>opus</command-args>"}),
        rec(type="user", uuid="c5", parentUuid="c4", promptId="pm",
            message={"role": "user", "content": "<local-command-stdout>Set model to opus</local-command-stdout>"}),
    ]
    path = tmp_path / "cmd.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    r = run_import(home, "claude", path, session_over=True)
    assert [(p["text"], p["state"]) for p in r.prompts] == [
        ("/review src/app.py", "handled"), ("/model", "command (local command)")]
    assert [c["command"] for c in r.commands] == ["/model"]
    assert states(home, "claude", "synth-cmd") == {"/review src/app.py": "handled"}


def test_queued_command_attachment_is_steering(home, tmp_path):
    """Newer Claude Code: text typed while the agent works is an ``attachment`` of type
    ``queued_command`` followed by a ``remove`` (absorbed mid-turn), with no ``user`` row."""
    import json

    from statemachine.ids import derived_input_id

    def rec(**kw):
        return json.dumps({"sessionId": "synth-steer", **kw}) + "\n"

    lines = [
        rec(type="user", uuid="s1", parentUuid=None, promptId="ps",
            message={"role": "user", "content": "refactor the parser"}),
        rec(type="assistant", uuid="s2", parentUuid="s1",
            message={"role": "assistant", "content": [
                {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "p.py"}}],
                "stop_reason": "tool_use"}),
        rec(type="queue-operation", operation="enqueue", content="keep the public API"),
        rec(type="user", uuid="s3", parentUuid="s2", promptId="ps",
            message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "tu1", "content": "..."}]}),
        rec(type="attachment", uuid="s4", parentUuid="s3", attachment={
            "type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
            "prompt": "keep the public API"}),
        rec(type="queue-operation", operation="remove", content="keep the public API",
            reason="absorbed_mid_turn"),
        rec(type="attachment", uuid="s5", parentUuid="s4", attachment={
            "type": "queued_command", "commandMode": "task-notification",
            "prompt": "<task-notification>done</task-notification>"}),
        rec(type="assistant", uuid="s6", parentUuid="s5",
            message={"role": "assistant", "content": [{"type": "text", "text": "Refactored."}],
                     "stop_reason": "end_turn"}),
        rec(type="system", subtype="turn_duration", uuid="s7", parentUuid="s6", durationMs=5),
    ]
    path = tmp_path / "steer.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    r = run_import(home, "claude", path, session_over=True)
    assert states(home, "claude", "synth-steer") == {"refactor the parser": "handled",
                                                     "keep the public API": "handled"}
    assert r.queued == 1 and r.inputs_seen == 2
    assert r.skipped_by_type["attachment:queued_command(not typed by the user)"] == 1
    with Engine(home) as e:
        t = thread_of(e, "claude", "synth-steer")
        steer = [x for x in t.inputs() if x.text == "keep the public API"][0]
        assert steer.queued and steer.turn_id == "ps"
        assert steer.input_id == derived_input_id(t.key, "ps", 1, "keep the public API")


def test_imported_threads_replay_to_the_same_state(home, shared_fixtures):
    """The events an import writes fold to exactly the derived tables (a full replay, e.g.
    `continuation doctor`, finds nothing to repair)."""
    paths = [shared_fixtures / "claude-real" / f"{REAL_SESSION}.jsonl",
             *sorted((shared_fixtures / "claude").glob("*.jsonl"))]
    for path in paths:
        if path.name not in SUBAGENT_ONLY:
            run_import(home, "claude", path, session_over=True)
    [rollout] = (shared_fixtures / "codex").glob("rollout-*.jsonl")
    run_import(home, "codex", rollout, session_over=True)
    run_import(home, "codex", PROJECT_TRANSCRIPTS / "codex_steer_abort_rollback.jsonl",
               session_over=True)
    with Engine(home) as e:
        threads = e.threads()
        assert len(threads) >= 10
        for t in threads:
            assert e.store.replay(t.key).snapshot() == e.store.derived_state(t.key).snapshot(), t.key
