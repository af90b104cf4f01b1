"""continuation.adapters.openai_agents: RunHooks and the next run's input, through the SDK's own
``Runner`` with its own fake model (``agents.testing.ScriptedModel``, the SDK's ``Model``
interface). Skipped with a reason when openai-agents is not installed
(``pip install '.[openai-agents]'``)."""
from __future__ import annotations

import asyncio
import json

import pytest

agents = pytest.importorskip("agents", reason="openai-agents is not installed "
                             "(pip install '.[openai-agents]')")
testing = pytest.importorskip("agents.testing", reason="this openai-agents has no "
                              "agents.testing (the extra asks for >= 0.24)")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from continuation.adapters.openai_agents import ContinuationRunHooks, next_input  # noqa: E402
from continuation.api import open_thread  # noqa: E402

CONFIG = RunConfig(tracing_disabled=True)
CHECKPOINT_MARKER = "<<<CONTINUATION-CHECKPOINT "


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=60))


@pytest.fixture
def thread(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with open_thread("agents-1", home=tmp_path / "state", runtime="openai-agents",
                     workspace=work) as t:
        yield t


def _agent(model, tools):
    return Agent(name="coder", instructions="You edit files.", model=model, tools=tools)


def test_a_run_records_tool_intent_before_the_effect_then_outcome_and_turn(thread):
    seen_while_running = []

    @function_tool
    async def append_line(path: str, line: str) -> str:
        """Append a line to a file (async: it runs on the loop's thread, which may read the
        store's connection; a sync tool runs on a worker thread)."""
        seen_while_running.append(next(c.status for c in thread._thread.tool_calls()
                                       if c.call_id == "call_1"))
        return f"appended to {path}"

    model = ScriptedModel([
        [function_call("append_line", {"path": "notes.txt", "line": "x"}, call_id="call_1")],
        [assistant_message("Appended the line.")],
    ])
    thread.admit("append x to notes.txt", input_id="msg-1")
    hooks = ContinuationRunHooks(thread)

    async def go():
        async with hooks.turn():
            return await Runner.run(_agent(model, [append_line]), "append x to notes.txt",
                                    hooks=hooks, run_config=CONFIG)

    result = run(go())
    assert result.final_output == "Appended the line."
    assert seen_while_running == ["in_flight"]  # recorded before the tool ran
    [call] = thread._thread.tool_calls()
    assert (call.call_id, call.tool, call.args, call.status) == (
        "call_1", "append_line", {"path": "notes.txt", "line": "x"}, "ok")
    assert thread.input("msg-1").state == "handled"
    assert [c["text"] for c in thread._thread.claims()] == ["Appended the line."]


def test_a_run_that_dies_mid_tool_leaves_the_call_to_reconcile(thread):
    @function_tool(failure_error_function=None)  # the error propagates out of Runner.run
    def deploy(target: str) -> str:
        """Deploy."""
        raise ConnectionError("lost the connection to the deploy host")

    model = ScriptedModel([[function_call("deploy", {"target": "staging"}, call_id="call_d")]])
    thread.admit("deploy to staging", input_id="msg-1")
    hooks = ContinuationRunHooks(thread)

    async def go():
        async with hooks.turn():
            await Runner.run(_agent(model, [deploy]), "deploy to staging", hooks=hooks,
                             run_config=CONFIG)

    with pytest.raises(Exception, match="lost the connection"):
        run(go())
    assert thread.input("msg-1").state == "reconciling"
    [item] = thread.pending_reconciliations()
    assert (item.call_id, item.tool, item.args) == ("call_d", "deploy", {"target": "staging"})
    aborted = [e for e in thread._thread.events() if e["type"] == "turn_aborted"]
    assert "lost the connection" in aborted[0]["data"]["reason"]


def test_next_input_starts_the_next_run_from_the_context(thread):
    # run 1 completes msg-1; run 2 (msg-2) fails in the model; the harness then compacts
    thread.admit("append x to notes.txt", input_id="msg-1")
    hooks = ContinuationRunHooks(thread)
    model = ScriptedModel([[assistant_message("Done.")], RuntimeError("model overloaded")])
    agent = _agent(model, [])

    async def one(text):
        async with hooks.turn():
            return await Runner.run(agent, text, hooks=hooks, run_config=CONFIG)

    history = run(one("append x to notes.txt")).to_input_list()
    thread.admit("now write the docs", input_id="msg-2")
    with pytest.raises(RuntimeError):
        run(one("now write the docs"))
    assert thread.input("msg-2").state == "interrupted"

    thread.checkpoint()
    items = next_input(thread, history[-1:], instructions="Be brief.")
    assert [i["role"] for i in items[:3]] == ["developer", "user", "user"]
    assert items[0]["content"] == "Be brief."
    assert items[1]["content"].startswith(CHECKPOINT_MARKER)
    assert "id=\"msg-2\" state=interrupted" in items[2]["content"]
    assert "now write the docs" in items[2]["content"]
    assert items[3:] == history[-1:]
    assert not any("append x to notes.txt" in i["content"] for i in items[2:3])

    # run 3 starts from it; a "continue" input of its own, whose completion decides msg-2
    thread.admit("continue", input_id="msg-3")
    model3 = ScriptedModel([[assistant_message("Docs written.")]])

    async def three():
        async with hooks.turn():
            return await Runner.run(_agent(model3, []), items + [{"role": "user",
                                                                  "content": "continue"}],
                                    hooks=hooks, run_config=CONFIG)

    run(three())
    sent = json.dumps(model3.first_call.input)
    assert CHECKPOINT_MARKER in sent and "now write the docs" in sent
    assert {i.input_id: i.state for i in thread.inputs()} == {
        "msg-1": "handled", "msg-2": "handled", "msg-3": "handled"}
    delivered = [e["data"]["via"] for e in thread._thread.events()
                 if e["type"] == "context_delivered"]
    assert delivered == ["api"]


def test_tools_without_a_call_id_are_paired_by_name(thread):
    hooks = ContinuationRunHooks(thread)
    plain = agents.RunContextWrapper(context=None)
    tool = type("ShellTool", (), {"name": "shell"})()
    thread.admit("list files", input_id="m")

    async def go():
        await hooks.on_tool_start(plain, None, tool)
        await hooks.on_tool_start(plain, None, tool)
        await hooks.on_tool_end(plain, None, tool, "a.txt")
        await hooks.on_tool_end(plain, None, tool, "b.txt")
        await hooks.on_tool_end(plain, None, tool, "unmatched")  # fails open: nothing to pair

    run(go())
    calls = thread._thread.tool_calls()
    assert [(c.tool, c.status) for c in calls] == [("shell", "ok"), ("shell", "ok")]
    assert len({c.call_id for c in calls}) == 2
