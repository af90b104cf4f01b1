"""The baseline continuation policies behave as documented (what each hands the agent)."""
from __future__ import annotations

from continuation.prove.agent import Catalog, decide
from continuation.prove.baselines import (CODEX_USER_MESSAGE_TOKENS, CodexNativeHistory,
                                          LatestPromptTurnMatch, SummaryOnly)

CAT = Catalog({
    "A": {"text": "first request", "tools": [{"tool": "Bash", "input": {"command": "a0"}}]},
    "B": {"text": "second request", "tools": [{"tool": "Bash", "input": {"command": "b0"}}]},
    "C": {"text": "third request", "tools": [{"tool": "Bash", "input": {"command": "c0"}}]},
})
# A done and answered on t1; B worked on (one call) in t2, not finished; C accepted, untouched
TRANSCRIPT = [
    {"role": "user", "text": "first request", "key": "A", "turn": "t1"},
    {"role": "tool_call", "key": "A", "call": "c1", "args": {"command": "a0"}, "turn": "t1"},
    {"role": "tool_result", "call": "c1", "status": "ok"},
    {"role": "assistant", "text": "done", "turn": "t1", "stop": True},
    {"role": "user", "text": "second request", "key": "B", "turn": "t2"},
    {"role": "tool_call", "key": "B", "call": "c2", "args": {"command": "b0"}, "turn": "t2"},
    {"role": "user", "text": "third request", "key": "C", "turn": "t2"},
]


def _after(policy):
    return policy.after_boundary(transcript=TRANSCRIPT, context_text=None, catalog=CAT, memory=[])


def test_summary_only_forgets_unstarted_requests_and_tool_detail():
    memory = _after(SummaryOnly())
    assert {m.key: m.state for m in memory} == {"A": "handled", "B": "open"}
    # B is redone in full (its finished call is not in a summary); C is lost
    assert [(d.key, d.tool_index) for d in decide(memory, CAT)] == [("B", 0)]


def test_codex_native_keeps_user_messages_without_state():
    memory = _after(CodexNativeHistory())
    assert [m.key for m in memory] == ["A", "B", "C"]
    assert {m.state for m in memory} == {"new"}
    assert [d.key for d in decide(memory, CAT)] == ["A", "B", "C"]  # A is re-executed


def test_codex_native_budget_keeps_the_newest_messages():
    big = "x" * (CODEX_USER_MESSAGE_TOKENS * 4 * 2)
    transcript = [{"role": "user", "text": "first request", "key": "A", "turn": "t1"},
                  {"role": "user", "text": big, "key": None, "turn": "t2"}]
    memory = CodexNativeHistory().after_boundary(transcript=transcript, context_text=None,
                                                 catalog=CAT, memory=[])
    assert len(memory) == 1 and len(memory[0].text) == CODEX_USER_MESSAGE_TOKENS * 4


def test_latest_prompt_keeps_one_objective_matched_by_turn():
    memory = _after(LatestPromptTurnMatch())
    assert [(m.key, m.state) for m in memory] == [("C", "open")]
    done = TRANSCRIPT + [{"role": "assistant", "text": "ok", "turn": "t2", "stop": True}]
    memory = LatestPromptTurnMatch().after_boundary(transcript=done, context_text=None,
                                                    catalog=CAT, memory=[])
    assert [(m.key, m.state) for m in memory] == [("C", "handled")]
