"""Scenario 16: the whole record of finished work reaches the model after a boundary.

Plans of distinct shell steps (every step another file and text), sessions and turns with
36-character UUIDs as the runtimes give them; an automatic compaction cuts a turn, and the
agent then does every step the context, and the files it names (read one read each, within a
runtime tool's output limit: ``agent.READ_LIMIT``), does not show as finished. Cases: one long
turn, two compactions in one turn, and a prompt finished before a later prompt's compaction.
:func:`long_turn` is also what ``scripts/measure_long_turn.py`` runs at 40, 150 and 1,000 steps.
"""
from __future__ import annotations

import hashlib
import uuid

from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import catalog, checkpoints_of

#: scenario 16's long-turn runs (the script adds 1,000 steps; prove stays quick)
RUNS = (("claude", 40), ("codex", 150))


def step_command(key: str, k: int, file: str) -> tuple[str, str]:
    """(command, line) of step ``k``: distinct names and texts, ~60-110 characters."""
    name = hashlib.sha256(f"{key}:{k}".encode()).hexdigest()[:10]
    line = f"{key} step {k + 1}: record {name}"
    shapes = (f"printf '%s\\n' '{line}' >> {file}",
              f"echo '{line}' | tee -a {file} > /dev/null",
              f"printf '{line}\\n' >> {file} && test -s {file}")
    return shapes[k % len(shapes)], line


def plan_request(key: str, text: str, steps: int, file: str = "notes.txt") -> dict:
    """A request done by ``steps`` distinct shell commands, each appending its own line."""
    tools = []
    for k in range(steps):
        command, line = step_command(key, k, file)
        tools.append({"tool": "Bash", "input": {"command": command},
                      "effect": {"append": file, "line": line}})
    return {key: {"text": text, "tools": tools}}


def real_id(seed: str) -> str:
    """A 36-character UUID, the same for the same seed (runs are reproducible)."""
    return str(uuid.UUID(hashlib.sha256(seed.encode()).hexdigest()[:32]))


def _outcome(s: SimSession, ws, keys: tuple[str, ...], steps: dict[str, int]) -> dict:
    contexts = s.contexts()
    context = contexts[-1] if contexts else ""
    lines = (ws / "notes.txt").read_text(encoding="utf-8").splitlines() if (ws / "notes.txt").exists() else []
    counts = s.exec_counts()
    lost = sum(1 for key in keys for k in range(steps[key]) if counts.get((key, k), 0) == 0)
    written = sum(1 for x in lines if x.startswith(tuple(f"{key} step " for key in keys)))
    return {"session": s, "redone": s.repeated_tool_calls(), "lost": lost,
            "lines_written": written, "context": context, "context_chars": len(context),
            "contexts": len(contexts)}


def _session(box, name: str, runtime: str, *requests: dict) -> tuple[SimSession, object]:
    """A simulated session with a UUID session id, in a workspace of its own."""
    ws = box.workspace(f"ws-{name}-{runtime}")
    s = SimSession(box, real_id(f"session {name} {runtime}"), runtime=runtime, cwd=ws,
                   catalog=catalog(*requests), hook="fork")
    return s, ws


def long_turn(box, runtime: str, calls: int, *, done_before: int | None = None) -> dict:
    """One long turn cut by an automatic compaction after 80% of it."""
    done_before = done_before if done_before is not None else calls * 8 // 10
    turn = real_id(f"turn {runtime} {calls}")
    s, ws = _session(box, f"long{calls}", runtime,
                     plan_request("L", f"write the migration log, {calls} steps, one line each", calls))
    s.run([{"op": "start"}, {"op": "prompt", "key": "L", "turn": turn},
           {"op": "act", "limit": done_before},
           {"op": "compact", "trigger": "auto", "turn": turn},
           {"op": "act", "turn": turn},
           {"op": "stop", "turn": turn, "message": "The migration log is written."}],
          timeout=900)
    got = _outcome(s, ws, ("L",), {"L": calls})
    cps, _ = checkpoints_of(s)
    from capsule.decode import decode_capsule

    budget = decode_capsule(cps[-1].capsule_bytes).budget if cps else None
    got.update(calls=calls, done_before=done_before, executions=s.executions("L"),
               capsule_bytes=budget.bytes if budget else None,
               capsule_tokens=budget.tokens if budget else None,
               full_context_chars=_spill_size(got["context"]) or got["context_chars"],
               spilled=_spill_size(got["context"]) is not None)
    return got


def two_compactions(box, runtime: str, calls: int = 60, cuts: tuple[int, int] = (25, 50)) -> dict:
    """One turn compacted twice: the second context must reach every step before it."""
    turn = real_id(f"two {runtime}")
    s, ws = _session(box, "two", runtime, plan_request("L", f"write the release log, {calls} steps", calls))
    s.run([{"op": "start"}, {"op": "prompt", "key": "L", "turn": turn},
           {"op": "act", "limit": cuts[0]}, {"op": "compact", "trigger": "auto", "turn": turn},
           {"op": "act", "turn": turn, "limit": cuts[1] - cuts[0]},
           {"op": "compact", "trigger": "auto", "turn": turn},
           {"op": "act", "turn": turn}, {"op": "stop", "turn": turn, "message": "Written."}],
          timeout=900)
    return _outcome(s, ws, ("L",), {"L": calls})


def finished_then_compacted(box, runtime: str, first: int = 25, second: int = 40) -> dict:
    """Prompt A finishes; prompt B is compacted mid-way: neither A nor B's done steps rerun."""
    ta, tb = real_id(f"A {runtime}"), real_id(f"B {runtime}")
    s, ws = _session(box, "ab", runtime, plan_request("A", "prompt A: write the first log", first),
                     plan_request("B", "prompt B: write the second log", second))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": ta}, {"op": "act", "turn": ta},
           {"op": "stop", "turn": ta, "message": "A is written."},
           {"op": "prompt", "key": "B", "turn": tb}, {"op": "act", "turn": tb, "limit": second // 2},
           {"op": "compact", "trigger": "auto", "turn": tb},
           {"op": "act", "turn": tb}, {"op": "stop", "turn": tb, "message": "B is written."}],
          timeout=900)
    return _outcome(s, ws, ("A", "B"), {"A": first, "B": second})


def _spill_size(context: str) -> int | None:
    import re

    m = re.search(r"The full text \((\d+) characters\) is in", context)
    return int(m.group(1)) if m else None


@scenario(16, "the whole record of finished work reaches the model (distinct steps, real ids)")
def long_turn_ledger(box, r):
    for runtime, calls in RUNS:
        got = long_turn(box, runtime, calls)
        r.track(got["session"])
        label = f"{runtime}, {calls} distinct steps"
        r.check(f"{label}: a context was delivered after the boundary", got["context"],
                f"{got['context_chars']} characters")
        r.equal(f"{label}: no finished step was redone, none lost", (got["redone"], got["lost"]), (0, 0))
        r.equal(f"{label}: every step ran once ({calls} lines written)",
                (got["executions"], got["lines_written"]), (calls, calls))
        r.metrics[f"redone_{runtime}_{calls}"] = got["redone"]
        r.metrics[f"context_chars_{runtime}_{calls}"] = got["context_chars"]
    got = two_compactions(box, "claude")
    r.track(got["session"])
    r.equal("two compactions in one turn (60 steps, after 25 and 50): redone, lost",
            (got["redone"], got["lost"], got["contexts"] >= 2), (0, 0, True))
    got = finished_then_compacted(box, "codex")
    r.track(got["session"])
    r.equal("prompt A finished, prompt B compacted at its step 20: redone, lost",
            (got["redone"], got["lost"]), (0, 0))
    r.metrics["redone_two_compactions"] = 0
