"""Scenarios 20-23: the handoff tells the truth (issue 12) about failed calls mid-turn, a
reconciliation decision, a reused call id, and a runtime that was killed."""
from __future__ import annotations

import json

from ..payloads import PayloadShape
from ..session import SimSession
from . import scenario
from .common import catalog, request


def _shape(s: SimSession) -> PayloadShape:
    return PayloadShape(s.runtime, s.session_id, str(s.cwd), str(_transcript(s)))


def _transcript(s: SimSession):
    return s.box.home / ".sim" / f"{s.session_id}.jsonl"


def _codex_outputs(s: SimSession, outputs) -> None:
    """What Codex writes to its rollout when a command returns: the exit code is only there."""
    path = _transcript(s)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for call_id, code in outputs:
            fh.write(json.dumps({"type": "response_item", "payload": {
                "type": "function_call_output", "call_id": call_id,
                "output": f"Exit code: {code}\nWall time: 0.0 seconds\nOutput:\n"}}) + "\n")


def _call_steps(shape: PayloadShape, turn: str, call_id: str, command: str,
                finished: bool = True) -> list[dict]:
    args = {"command": command}
    steps = [{"op": "hook", "payload": shape.pre_tool(turn, call_id, "Bash", args)}]
    if finished:
        steps.append({"op": "hook", "payload": shape.post_tool(turn, call_id, "Bash", args,
                                                              output="")})
    return steps


def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


@scenario(20, "a command that failed mid-turn reaches the model as failed after a compaction (Codex)")
def failed_mid_turn(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "check the deployment paths and report what is missing", 0))
    s = r.track(SimSession(box, "s20", runtime="codex", cwd=ws, catalog=cat))
    shape = _shape(s)
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
           *_call_steps(shape, "t1", "call_ls", "ls /nonexistent"),
           *_call_steps(shape, "t1", "call_exit", "exit 3"),
           *_call_steps(shape, "t1", "call_ok", "test -d .")])
    # Codex's PostToolUse carried only output text; the exit codes are in its rollout
    _codex_outputs(s, [("call_ls", 2), ("call_exit", 3), ("call_ok", 0)])
    s.run([{"op": "compact", "trigger": "auto", "turn": "t1"}])
    ctx = s.contexts()
    text = ctx[-1] if ctx else ""
    r.check("the compaction delivered a context", bool(text))
    for call, code in (("call_ls", 2), ("call_exit", 3)):
        listed = [x for x in _lines_with(text, f'call="{call}"') if "status=" in x]
        r.check(f"{call} (exit {code}) is listed as an error with its exit code, before any Stop",
                listed and all("status=error" in x and f"exit_code={code}" in x for x in listed),
                f"call list: {listed}")
        facts = _lines_with(text, f"tool call {call} finished")
        r.check(f"{call}: the runtime facts say the same as the call list",
                facts and all(f"finished: error exit {code}" in x for x in facts),
                f"facts: {facts}")
    ok = [x for x in _lines_with(text, 'call="call_ok"') if "status=" in x]
    r.check("the command that succeeded stays ok (exit 0)",
            ok and all("status=ok" in x and "exit_code=0" in x for x in ok), f"{ok}")

    s.run([{"op": "stop", "turn": "t1", "message": "Two paths are missing."},
           {"op": "compact", "trigger": "manual", "turn": "t1"}])
    after = s.contexts()[-1]
    finished = _lines_with(after, "finished:")
    r.check("after Stop and a second boundary no fact calls a failed command ok",
            not any(("call_ls" in x or "call_exit" in x) and "finished: ok" in x for x in finished),
            f"facts: {finished}")
    r.expect_states(s, {"A": "handled"})
