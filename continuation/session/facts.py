"""The shape of each fact a thread records: ``(type, data)`` built in one place.

The live path (:mod:`.recording`, through :class:`~continuation.session.engine.Thread`) appends
them one at a time; the transcript importer yields them inside one transaction. Both build
them here, so an input, a call or a turn's end reads the same whoever recorded it. Light on
purpose: the hook hot path imports it.
"""
from __future__ import annotations

from statemachine import events as ev

#: the most of a tool's output a thread keeps (its head and tail, the middle cut)
OUTPUT_EXCERPT = 2000
#: tools whose arguments are the agent's plan (Claude Code's, Codex's)
PLAN_TOOLS = ("TodoWrite", "update_plan")


def excerpt(text: str) -> str:
    """``text``, or its head and tail with the middle cut when longer than
    :data:`OUTPUT_EXCERPT`."""
    if len(text) <= OUTPUT_EXCERPT:
        return text
    half = OUTPUT_EXCERPT // 2
    return text[:half] + f"\n[... {len(text) - OUTPUT_EXCERPT} chars cut ...]\n" + text[-half:]


def input_identity(thread_key: str, turn_id: str | None, ordinal: int, text: str,
                   runtime_id: str | None = None) -> tuple[str, str]:
    """(input id, id source) of an input: the runtime's id when it sent one, else the hash of
    (thread, turn, ordinal, text). ``ordinal``: how many inputs were first admitted in the
    turn before this one; a hook process counts them in the store, the importer in the
    transcript, and both land on the same id."""
    if runtime_id:
        return runtime_id, "runtime"
    from statemachine.ids import derived_input_id

    return derived_input_id(thread_key, turn_id, ordinal, text), "hash"


def input_admitted(input_id: str, text: str, *, turn_id: str | None, ordinal: int,
                   queued: bool, id_source: str, attachments: list | None = None):
    data = {"input_id": input_id, "text": text, "turn_id": turn_id, "ordinal": ordinal,
            "queued": queued, "id_source": id_source}
    if attachments:
        data["attachments"] = attachments
    return ev.INPUT_ADMITTED, data


def input_delivered(input_id: str, turn_id: str | None, via: str | None = None):
    data = {"input_id": input_id, "turn_id": turn_id}
    if via:
        data["via"] = via
    return ev.INPUT_DELIVERED, data


def tool_started(call_id: str, tool: str, args: dict, turn_id: str | None, *,
                 started_at: float | None = None):
    data = {"call_id": call_id, "tool": tool, "args": args, "turn_id": turn_id}
    if started_at is not None:
        data["started_at"] = started_at
    return ev.TOOL_STARTED, data


def tool_finished(call_id: str, status: str = "ok", *, exit_code: int | None = None,
                  output: str | None = None, turn_id: str | None = None):
    data: dict = {"call_id": call_id, "status": status, "turn_id": turn_id}
    if exit_code is not None:
        data["exit_code"] = exit_code
    if output is not None:
        data["output"] = output
    return ev.TOOL_FINISHED, data


def plan_updated(tool: str, items, call_id: str | None = None):
    data = {"tool": tool, "items": items}
    if call_id is not None:
        data["call_id"] = call_id
    return ev.PLAN_UPDATED, data


def plan_items(tool: str, args: dict):
    """The plan a call of a :data:`PLAN_TOOLS` tool states, or ``None`` for any other call."""
    if tool not in PLAN_TOOLS:
        return None
    return args.get("todos") or args.get("plan") or []


def turn_completed(turn_id: str, via: str | None = None):
    data = {"turn_id": turn_id}
    if via:
        data["via"] = via
    return ev.TURN_COMPLETED, data


def turn_aborted(turn_id: str, reason: str):
    return ev.TURN_ABORTED, {"turn_id": turn_id, "reason": reason}


def assistant_claim(text: str, turn_id: str | None, via: str | None = None):
    data = {"text": text, "turn_id": turn_id}
    if via:
        data["via"] = via
    return ev.ASSISTANT_CLAIM, data
