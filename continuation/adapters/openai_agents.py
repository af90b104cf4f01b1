"""The OpenAI Agents SDK: ``RunHooks`` that record a run's tool calls and its end, and the next
run's input built from :meth:`continuation.api.Thread.context` after the harness trims history.

    from agents import Runner
    from continuation.adapters.openai_agents import ContinuationRunHooks, next_input

    thread.admit(text, input_id=message_id)               # the user's input, exactly once
    hooks = ContinuationRunHooks(thread)
    async with hooks.turn():                              # an exception aborts the turn
        result = await Runner.run(agent, history + [{"role": "user", "content": text}],
                                  hooks=hooks)
    history = result.to_input_list()
    # too long: checkpoint, drop old items, start the next run from the context
    thread.checkpoint()
    history = next_input(thread, history[-4:])

Mapping (one run of ``Runner.run`` is one turn):

- ``on_tool_start`` -> :meth:`~continuation.api.Thread.tool_intent`, before the tool runs;
  ``on_tool_end`` -> :meth:`~continuation.api.Thread.tool_outcome` (ok: the call finished; a
  tool error the SDK turned into text for the model is still a finished call, with that text).
  Function and custom tools give their call id (``ToolContext.tool_call_id``); tools that get a
  plain run context (computer, shell, apply_patch) are paired by tool name, first in first out.
- ``on_agent_end`` (the final output) -> :meth:`~continuation.api.Thread.turn_completed` with the
  output as a claim. A run that raises never reaches it: :meth:`ContinuationRunHooks.turn` records
  the turn as aborted (a call started and not finished is then left for reconciliation).

Fail open: an error of ours is logged and the run goes on.
"""
from __future__ import annotations

import json
import logging
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from itertools import count
from typing import TYPE_CHECKING, Any

try:
    from agents import RunHooks
except ImportError as exc:  # the optional extra is not installed
    raise ImportError("continuation.adapters.openai_agents needs openai-agents: "
                      "pip install 'continuation-engine[openai-agents]'") from exc

from continuation.api import Thread

if TYPE_CHECKING:
    from agents import Agent, RunContextWrapper, Tool
    from agents.items import TResponseInputItem

log = logging.getLogger("continuation.adapters")
OUTPUT_LIMIT = 100_000  # the engine keeps an excerpt; don't build a huge string for it


class ContinuationRunHooks(RunHooks[Any]):
    """Records one run's tool calls and its end into ``thread`` (see the module docstring)."""

    def __init__(self, thread: Thread):
        super().__init__()
        self.thread = thread
        self._unnamed: dict[str, deque[str]] = defaultdict(deque)
        self._numbers = count(1)
        self.completed = False

    def _call_id(self, context: RunContextWrapper[Any], tool: Tool, starting: bool) -> str | None:
        call_id = getattr(context, "tool_call_id", None)
        if isinstance(call_id, str) and call_id:
            return call_id
        name = getattr(tool, "name", type(tool).__name__)
        if starting:
            made = f"{self.thread.key}:{name}:{next(self._numbers)}"
            self._unnamed[name].append(made)
            return made
        waiting = self._unnamed.get(name)
        return waiting.popleft() if waiting else None

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any],
                            tool: Tool) -> None:
        try:
            call_id = self._call_id(context, tool, starting=True)
            self.thread.tool_intent(call_id, getattr(tool, "name", ""),
                                    _arguments(getattr(context, "tool_arguments", None)))
        except Exception:
            log.exception("continuation: recording a tool start failed")

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool,
                          result: object) -> None:
        try:
            call_id = self._call_id(context, tool, starting=False)
            if call_id is not None:
                self.thread.tool_outcome(call_id, ok=True, output=_text(result))
        except Exception:
            log.exception("continuation: recording a tool end failed")

    async def on_agent_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                           output: Any) -> None:
        try:
            claim = output if isinstance(output, str) else _text(output)
            self.thread.turn_completed(claim=claim or None)
            self.completed = True
        except Exception:
            log.exception("continuation: recording the end of the run failed")

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[ContinuationRunHooks]:
        """Wrap ``Runner.run``: a run that raises (or is cancelled) before its final output
        records the turn as aborted, then the exception goes on."""
        self.completed = False
        try:
            yield self
        except BaseException as exc:
            if not self.completed:
                try:
                    self.thread.turn_aborted(f"run failed: {type(exc).__name__}: {exc}"[:500])
                except Exception:
                    log.exception("continuation: recording the aborted run failed")
            raise


def next_input(thread: Thread, kept: Iterable[TResponseInputItem] = (), *,
               instructions: str | None = None) -> list[TResponseInputItem]:
    """The input of the next ``Runner.run`` after the harness trimmed its history to ``kept``
    (call :meth:`Thread.checkpoint` before trimming): the fresh context from
    :meth:`Thread.context` as input items, then ``kept``. Instructions become a ``developer``
    message; the checkpoint block and each actionable input (in its id-carrying markers, as
    the hooks inject them) a ``user`` message. The context is recorded as delivered."""
    from capsule.context import AssembledContext

    context = thread.context(instructions=instructions)
    notes = "".join(f"[continuation: {p}]\n" for p in context.problems)
    items: list[Any] = []
    for message in context:
        role = "developer" if message.role == "instructions" else "user"
        text = AssembledContext((message,)).as_text().rstrip("\n")
        if message.kind == "capsule":
            text, notes = notes + text, ""
        items.append({"role": role, "content": text})
    return items + list(kept)


def _arguments(raw: object) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str) and raw:
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {}


def _text(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text[:OUTPUT_LIMIT]
