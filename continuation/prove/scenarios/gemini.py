"""Scenarios 30-33: where Gemini CLI differs from Codex and Claude Code.

Gemini-shaped payloads (:mod:`..payloads`): no prompt, turn or call id; PreCompress(auto) before
every model request, compressing only when the recorded prompt token count crosses the
threshold; no SessionStart after a compression, so the context arrives through the next
AfterTool or BeforeAgent answer.
"""
from __future__ import annotations

from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    catalog,
    checkpoints_of,
    context_states,
    events_of,
    request,
)


def _delivered(s) -> list[str]:
    return [e["data"]["via"] for e in events_of(s, "context_delivered")]


@scenario(30, "Gemini CLI: PreCompress before every model request checkpoints only when it compresses")
def precompress_every_request(box, r):
    ws = box.workspace("ws-g30")
    cat = catalog(request("A", "add the retry helper to the http client", 2),
                  request("B", "and log each retry at debug level", 1))
    s = r.track(SimSession(box, "s30", runtime="gemini", cwd=ws, catalog=cat))
    s.run([{"op": "start", "source": "startup"}, {"op": "prompt", "key": "A", "turn": "t1"},
           {"op": "act"}, {"op": "stop", "turn": "t1", "message": "Added the helper."}])
    idle = [h for h in s.hooks("PreCompress") if h.get("label") == "idle"]
    r.equal("PreCompress fired before each of the 3 model requests", len(idle), 3)
    r.equal("no checkpoint and no boundary from a PreCompress that does not compress",
            (len(checkpoints_of(s)[0]), len(events_of(s, "boundary"))), (0, 0))
    s.run([{"op": "prompt", "key": "B", "turn": "t2"},
           {"op": "compact", "trigger": "auto", "turn": "t2"},
           {"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Logged."}])
    r.equal("the compressing PreCompress is the one boundary",
            [e["data"]["trigger"] for e in events_of(s, "boundary")], ["auto"])
    r.equal("each tool call ran once", (s.executions("A"), s.executions("B")), (2, 1))
    r.expect_states(s, {"A": "handled", "B": "handled"}, " (gemini)")


@scenario(31, "Gemini CLI: after a mid-turn compression the next tool result carries the context, once")
def after_tool_delivery(box, r):
    ws = box.workspace("ws-g31")
    cat = catalog(request("A", "write the migration for the orders table", 1),
                  request("B", "then backfill the new column in three batches", 3))
    s = r.track(SimSession(box, "s31", runtime="gemini", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Migration written."},
           {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act", "limit": 1},
           {"op": "compact", "trigger": "auto", "turn": "t2"}, {"op": "act", "turn": "t2"},
           {"op": "stop", "turn": "t2", "message": "Backfilled."}])
    r.equal("the context was delivered once, by AfterTool", _delivered(s), ["after_tool"])
    contexts = s.contexts()
    states = context_states(contexts[0], cat) if contexts else None
    r.equal("it lists A handled and B pending", (states or {}).get("A"), "handled")
    r.equal("... and B pending", (states or {}).get("B"), "pending")
    r.equal("no tool call ran twice", s.repeated_tool_calls(), 0)
    r.equal("every batch ran once", (s.executions("A"), s.executions("B")), (1, 3))
    r.expect_states(s, {"A": "handled", "B": "handled"}, " (gemini)")


@scenario(32, "Gemini CLI: a compression with no tool call after it: the next prompt carries the context")
def before_agent_delivery(box, r):
    ws = box.workspace("ws-g32")
    cat = catalog(request("A", "rename the cli flag --dry to --dry-run", 1),
                  request("B", "what does the --force flag do?", 0),
                  request("C", "add the --dry-run flag to the docs", 1))
    s = r.track(SimSession(box, "s32", runtime="gemini", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Renamed."},
           {"op": "prompt", "key": "B", "turn": "t2"},
           {"op": "compact", "trigger": "auto", "turn": "t2"},
           {"op": "stop", "turn": "t2", "message": "It skips the confirmation."},
           {"op": "prompt", "key": "C", "turn": "t3"}, {"op": "act", "turn": "t3"},
           {"op": "stop", "turn": "t3", "message": "Documented."}])
    r.equal("the context was delivered once, by the next BeforeAgent", _delivered(s), ["user_prompt"])
    contexts = s.contexts()
    states = context_states(contexts[0], cat) if contexts else None
    r.check("it lists A and B as handled (B's turn completed before the prompt)",
            states is not None and states.get("A") == "handled" and states.get("B") == "handled",
            f"states in the context: {states}")
    r.equal("A ran once, C once", (s.executions("A"), s.executions("C")), (1, 1))
    r.expect_states(s, {"A": "handled", "B": "handled", "C": "handled"}, " (gemini)")


@scenario(33, "Gemini CLI: payloads without ids: one input per prompt, calls paired by name and input")
def no_ids(box, r):
    ws = box.workspace("ws-g33")
    cat = catalog(request("A", "check the disk usage", 0))
    s = r.track(SimSession(box, "s33", runtime="gemini", cwd=ws, catalog=cat))
    base = {"session_id": s.session_id, "cwd": str(ws), "timestamp": "2026-12-01T00:00:00Z",
            "transcript_path": str(box.home / ".sim" / f"{s.session_id}.jsonl")}
    ls = {"tool_name": "run_shell_command", "tool_input": {"command": "du -sh ."}}
    df = {"tool_name": "run_shell_command", "tool_input": {"command": "df -h"}}
    text = cat["A"]["text"]
    raw = [
        # `gemini -p` puts the SessionStart answer before the prompt: not part of the input
        {"hook_event_name": "BeforeAgent", "prompt": f"<hook_context>notice</hook_context>\n\n{text}"},
        {"hook_event_name": "BeforeTool", **ls}, {"hook_event_name": "BeforeTool", **df},
        {"hook_event_name": "AfterTool", **df, "tool_response": {"llmContent": "Output: 10G\nExit Code: 1"}},
        {"hook_event_name": "AfterTool", **ls, "tool_response": {"llmContent": "Output: 2M"}},
        {"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_input": {"command": "id"},
         "tool_response": {"llmContent": "no BeforeTool was seen for this one"}},
        {"hook_event_name": "AfterAgent", "prompt": text, "prompt_response": "2M used", "stop_hook_active": False},
        {"hook_event_name": "BeforeAgent", "prompt": text},  # the same text again: a new prompt
    ]
    s.run([{"op": "hook", "payload": {**base, **p}} for p in raw])
    r.equal("no hook failed", s.hook_failures(), [])
    engine, th = s.thread()
    try:
        inputs = [(rec.text, rec.turn_id, rec.state) for rec in th.inputs()]
        calls = {c.call_id: (c.status, c.to_row().get("exit_code")) for c in th.tool_calls()}
    finally:
        engine.close()
    r.equal("one input per prompt, without the hook context, in turns prompt-1 and prompt-2",
            inputs, [(text, "prompt-1", "handled"), (text, "prompt-2", "pending")])
    r.equal("the calls paired by name and input, in any order; the unseen one ignored",
            sorted(calls), ["prompt-1:call-1", "prompt-1:call-2"])
    r.equal("df failed (exit code 1), du succeeded",
            (calls.get("prompt-1:call-2", ("?",))[0], calls.get("prompt-1:call-1", ("?",))[0]), ("error", "ok"))
