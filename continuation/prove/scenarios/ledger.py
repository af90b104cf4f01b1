"""Scenario 16: a long turn keeps every finished call across a boundary (the work ledger).

One request whose turn makes many tool calls (long shell commands, each appending a line); an
automatic compaction cuts the turn after 90% of them finished. The agent reads the delivered
context and redoes whatever it is not told finished. :func:`long_turn` is also what
``scripts/measure_long_turn.py`` runs at 40, 200 and 1,000 calls.
"""
from __future__ import annotations

from ..session import SimSession
from . import scenario
from .common import catalog, checkpoints_of

#: scenario 16's runs (the script adds 1,000 and both runtimes at each size; prove stays quick)
RUNS = (("codex", 40), ("codex", 200), ("claude", 40))


def long_request(key: str, text: str, calls: int, file: str = "notes.txt") -> dict:
    """A request done by ``calls`` shell commands of ~95 characters, each appending its line."""
    tools = []
    for i in range(calls):
        line = f"step {i + 1} of the migration log: moved record batch {i + 1} to the new table"
        tools.append({"tool": "Bash", "input": {"command": f'echo "{line}" >> {file}'},
                      "effect": {"append": file, "line": line}})
    return {key: {"text": text, "tools": tools}}


def long_turn(box, runtime: str, calls: int, *, done_before: int | None = None) -> dict:
    """Run one long turn cut by an automatic compaction; what the agent redid and was told."""
    done_before = done_before if done_before is not None else calls * 9 // 10
    ws = box.workspace(f"ws-{runtime}-{calls}")
    cat = catalog(long_request("L", f"write the migration log, {calls} steps, one line each", calls))
    s = SimSession(box, f"s16-{runtime}-{calls}", runtime=runtime, cwd=ws, catalog=cat, hook="fork")
    s.run([{"op": "start"}, {"op": "prompt", "key": "L", "turn": "t-long"},
           {"op": "act", "limit": done_before},
           {"op": "compact", "trigger": "auto", "turn": "t-long"},
           {"op": "act", "turn": "t-long"},
           {"op": "stop", "turn": "t-long", "message": "The migration log is written."}],
          timeout=900)
    contexts = s.contexts()
    context = contexts[-1] if contexts else ""
    lines = (ws / "notes.txt").read_text(encoding="utf-8").splitlines()
    spill = _spill_size(context)
    cps, _ = checkpoints_of(s)
    from capsule.model import decode_capsule

    budget = decode_capsule(cps[-1].capsule_bytes).budget if cps else None
    return {"capsule_bytes": budget.bytes if budget else None,
            "capsule_tokens": budget.tokens if budget else None,"session": s, "calls": calls, "done_before": done_before,
            "redone": s.repeated_tool_calls(), "executions": s.executions("L"),
            "lines_written": sum(1 for x in lines if x.startswith("step ")),
            "context_chars": len(context), "full_context_chars": spill or len(context),
            "spilled": spill is not None, "context": context}


def _spill_size(context: str) -> int | None:
    import re

    m = re.search(r"The full text \((\d+) characters\) is in the file", context)
    return int(m.group(1)) if m else None


@scenario(16, "a long turn keeps every finished call across a boundary (work ledger)")
def long_turn_ledger(box, r):
    for runtime, calls in RUNS:
        got = long_turn(box, runtime, calls)
        r.track(got["session"])
        label = f"{runtime}, {calls} calls"
        r.check(f"{label}: a context was delivered after the boundary", got["context"],
                f"{got['context_chars']} characters")
        r.equal(f"{label}: no finished call was redone", got["redone"], 0)
        r.equal(f"{label}: every call ran once ({calls} lines written)",
                (got["executions"], got["lines_written"]), (calls, calls))
        r.check(f"{label}: the context fits inline (no spill file)", not got["spilled"],
                f"{got['context_chars']} characters inline, {got['full_context_chars']} in all")
        r.metrics[f"redone_{runtime}_{calls}"] = got["redone"]
        r.metrics[f"context_chars_{runtime}_{calls}"] = got["context_chars"]
