"""Helpers the scenarios share: catalogs of requests, context reading, checkpoint reads."""
from __future__ import annotations

import re

from continuation.prove.agent import Catalog, memory_from_context, read_context
from statemachine.lifecycle import ACTIONABLE


def request(key: str, text: str, tools: int = 1, file: str = "notes.txt") -> dict:
    """One catalog entry: a request and the tool calls doing it (each appends a line)."""
    return {key: {"text": text, "tools": [
        {"tool": "Bash", "input": {"command": f"echo {key}-{i} >> {file}"},
         "effect": {"append": file, "line": f"{key}-{i}"}} for i in range(tools)]}}


def catalog(*entries: dict) -> dict:
    out: dict = {}
    for e in entries:
        out.update(e)
    return out


def context_states(text: str, cat: dict) -> dict[str, str] | None:
    """Catalog key -> state, as a context block lists it (None: no block at all)."""
    ctx = read_context(text)
    if ctx is None:
        return None
    return {i.key: i.state for i in memory_from_context(ctx, Catalog(cat)) if i.key}


def context_ids(text: str) -> list[str]:
    ctx = read_context(text)
    return [str(f.get("input")) for f in ctx.inputs] if ctx else []


def state_totals(text: str) -> dict[str, int]:
    m = re.search(r"## user inputs \(total by state: ([^;)]*)", text)
    if not m:
        return {}
    out = {}
    for part in m.group(1).split():
        if "=" in part:
            k, v = part.split("=", 1)
            if v.isdigit():
                out[k] = int(v)
    return out


def checkpoints_of(session):
    from continuation.boundary import checkpoints

    engine, th = session.thread()
    try:
        return checkpoints.list_checkpoints(th), th.row
    finally:
        engine.close()


def events_of(session, etype: str | None = None) -> list[dict]:
    engine, th = session.thread()
    try:
        return [e for e in th.events() if etype is None or e["type"] == etype]
    finally:
        engine.close()
