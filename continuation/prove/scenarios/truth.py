"""Scenarios 20-23: the handoff tells the truth about failed calls mid-turn, a
reconciliation decision, a reused call id, and a runtime that was killed."""
from __future__ import annotations

import json

from continuation.prove.payloads import PayloadShape
from continuation.prove.sandbox import wait_for
from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import catalog, context_states, request


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
    # finished calls are in the work ledger, one line per command here
    from capsule.work_line import parse_work_line

    work = [f for x in text.splitlines() if (f := parse_work_line(x))]
    for call, command, code in (("call_ls", "ls /nonexistent", 2), ("call_exit", "exit 3", 3)):
        listed = [f for f in work if f["text"] == f"$ {command}"]
        r.check(f"{call} (exit {code}) is listed as an error with its exit code, before any Stop",
                listed and all(f["status"] == "error" and f["exit"] == code for f in listed),
                f"call list: {listed}")
        facts = _lines_with(text, f"tool call {call} finished")
        r.check(f"{call}: the runtime facts say the same as the call list",
                facts and all(f"finished: error exit {code}" in x for x in facts),
                f"facts: {facts}")
    ok = [f for f in work if f["text"] == "$ test -d ."]
    r.check("the command that succeeded stays ok (exit 0)",
            ok and all(f["status"] == "ok" and f["exit"] in (None, 0) for f in ok), f"{ok}")

    s.run([{"op": "stop", "turn": "t1", "message": "Two paths are missing."},
           {"op": "compact", "trigger": "manual", "turn": "t1"}])
    after = s.contexts()[-1]
    finished = _lines_with(after, "finished:")
    r.check("after Stop and a second boundary no fact calls a failed command ok",
            not any(("call_ls" in x or "call_exit" in x) and "finished: ok" in x for x in finished),
            f"facts: {finished}")
    r.expect_states(s, {"A": "handled"})


@scenario(21, "a call id reused in a later turn is its own call: reconciled after kill -9, not retried")
def reused_call_id(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "list the release notes folder", 0),
                  request("B", "deploy the release to staging", 0))
    s = r.track(SimSession(box, "s21", runtime="codex", cwd=ws, catalog=cat))
    shape = _shape(s)
    # a provider that numbers its calls per process: `call_0_0` in both turns
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
           *_call_steps(shape, "t1", "call_0_0", "ls release-notes"),
           {"op": "stop", "turn": "t1", "message": "Listed."},
           {"op": "prompt", "key": "B", "turn": "t2"},
           *_call_steps(shape, "t2", "call_0_0", "./deploy staging", finished=False)])
    # the runtime's process is gone (it exited inside the call: no Stop, no SessionEnd)
    engine, th = s.thread()
    try:
        calls = {c.call_id: (c.args.get("command"), c.status) for c in th.tool_calls()}
    finally:
        engine.close()
    r.equal("both calls named call_0_0 are recorded, each in its own turn", calls,
            {"call_0_0": ("ls release-notes", "ok"),
             "call_0_0@t2": ("./deploy staging", "in_flight")})
    rec = box.cli("recover", "--record", "--json")
    r.check("`continuation recover` ran", rec.returncode == 0,
            rec.stderr.decode(errors="replace")[-300:])
    r.expect_states(s, {"A": "handled", "B": "reconciling"}, " after recover")
    listed = box.cli("reconcile", "--thread", s.session_id, "--json")
    try:
        waiting = json.loads(listed.stdout.decode() or "{}").get("calls", [])
    except ValueError:
        waiting = []
    r.equal("reconcile lists the deploy (the reused id's second call) as unknown",
            [(c["call_id"], c["args"].get("command")) for c in waiting],
            [("call_0_0@t2", "./deploy staging")])
    s.run([{"op": "start", "source": "resume"}])
    ctx = s.contexts()
    text = ctx[-1] if ctx else ""
    r.check("the resumed context asks to reconcile the deploy before any retry",
            "reconcile_tool_call" in text and "call_0_0@t2" in text, text[-600:])


def _killed_in_second_call(box, r, name: str, cat: dict) -> tuple[SimSession, str | None]:
    """A Codex session killed (SIGKILL) inside B's second tool call, then `recover`."""
    ws = box.workspace(f"ws-{name}")
    s = r.track(SimSession(box, name, runtime="codex", cwd=ws, catalog=cat))
    proc = s.start([{"op": "start"}, {"op": "prompt", "key": "B", "turn": "t1"},
                    {"op": "act", "limit": 1, "hang": True}])
    hung = wait_for(lambda: any(x.get("kind") == "hanging" for x in s.log()), timeout=60)
    r.check(f"{name}: the runtime blocked inside B's second call", hung)
    proc.kill()
    proc.wait(timeout=30)
    rec = box.cli("recover", "--record", "--json")
    r.check(f"{name}: `continuation recover` ran", rec.returncode == 0,
            rec.stderr.decode(errors="replace")[-300:])
    return s, next((x["call"] for x in s.log() if x.get("kind") == "hanging"), None)


@scenario(22, "a reconciliation decision reaches the model at the next resume or prompt")
def decision_delivered(box, r):
    cat = catalog(request("B", "run the release migration against staging", 2),
                  request("C", "what does the release checklist say about rollbacks?", 0))

    # --not-applied, then a resume: the resume carries the decision
    s, call = _killed_in_second_call(box, r, "s22-not-applied", cat)
    r.expect_states(s, {"B": "reconciling"}, " after recover")
    decided = box.cli("reconcile", call or "-", "--thread", s.session_id, "--not-applied")
    r.check("`reconcile --not-applied` is recorded", decided.returncode == 0,
            decided.stderr.decode(errors="replace")[-300:])
    r.expect_states(s, {"B": "pending"}, " after the decision")
    s.run([{"op": "start", "source": "resume"}])
    resumed = [h for h in s.hooks("SessionStart") if h.get("source") == "resume"]
    text = s.contexts()[-1] if resumed and resumed[-1].get("context_file") else ""
    states = context_states(text, cat) if text else None
    r.check("the resume delivered a context listing B pending",
            states is not None and states.get("B") == "pending", f"context states {states}")
    r.check("the context says the call was not applied (its work is still to do)",
            f"call {call}:" in text and "not applied: it did not take effect" in text,
            text[-800:])
    r.check("the not-applied call is not listed as work done (its command in no work line)",
            not any(line.startswith("#") and "echo B-1 " in line for line in text.splitlines()),
            text[-800:])
    s.run([{"op": "act", "turn": "t1"}, {"op": "stop", "turn": "t1", "message": "Migrated."}])
    r.equal("the agent then ran the not-applied call again, once, and redid nothing else",
            [s.exec_counts().get(("B", i)) for i in range(2)], [1, 2])

    # --applied, then a resume whose delivery is lost: the next prompt carries the decision,
    # and only then may that unrelated prompt's clean turn decide B
    s, call = _killed_in_second_call(box, r, "s22-applied", cat)
    decided = box.cli("reconcile", call or "-", "--thread", s.session_id, "--applied")
    r.check("`reconcile --applied` is recorded", decided.returncode == 0,
            decided.stderr.decode(errors="replace")[-300:])
    s.run([{"op": "start", "source": "resume", "fault": "event.before_commit"}])
    r.check("the resume's SessionStart hook died before delivering anything",
            not any(h.get("context_file") for h in s.hooks("SessionStart")
                    if h.get("source") == "resume"))
    r.expect_states(s, {"B": "pending"}, " while the decision has not reached the model")
    s.run([{"op": "prompt", "key": "C", "turn": "t2"}, {"op": "act", "turn": "t2"},
           {"op": "stop", "turn": "t2", "message": "Rollbacks need a ticket."}])
    carried = [h for h in s.hooks("UserPromptSubmit") if h.get("context_file")]
    text = s.contexts()[-1] if carried else ""
    r.check("the next prompt carried the context with the decision",
            "applied: it took effect; do not run it again" in text
            and "reconciled by the user: applied" in text, text[-800:])
    r.equal("B's calls ran once each (the applied call was not repeated)",
            [s.exec_counts().get(("B", i)) for i in range(2)], [1, 1])
    r.expect_states(s, {"B": "handled", "C": "handled"},
                    " (B decided by a clean turn after its state reached the model)")


def _cli_json(box, *argv) -> dict:
    done = box.cli(*argv, "--json")
    try:
        return json.loads(done.stdout.decode() or "{}")
    except ValueError:
        return {}


@scenario(23, "`status` says a killed runtime is killed, not active, before `recover` runs")
def killed_runtime_status(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "regenerate the API reference", 2))
    s = r.track(SimSession(box, "s23", runtime="claude", cwd=ws, catalog=cat))
    proc = s.start([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "p1"},
                    {"op": "act", "limit": 1, "hang": True}])
    r.check("the runtime blocked inside a tool call",
            wait_for(lambda: any(x.get("kind") == "hanging" for x in s.log()), timeout=60))

    def verdicts():
        status = _cli_json(box, "status", "--thread", s.session_id)
        inputs = _cli_json(box, "inputs", "--thread", s.session_id)
        [thread] = status.get("threads") or [{}]
        return ((thread.get("thread") or {}).get("status"),
                (inputs.get("runtime") or {}).get("verdict"),
                [i["state"] for i in inputs.get("inputs", [])])

    r.equal("while it runs: status and inputs say running, A pending", verdicts(),
            ("running", "running", ["pending"]))
    proc.kill()
    proc.wait(timeout=30)
    r.equal("killed: status and inputs say killed (A still pending: nothing recorded yet)",
            verdicts(), ("killed", "killed", ["pending"]))
    text = box.cli("status", "--thread", s.session_id).stdout.decode()
    r.check("the text of `status` names the verdict and the command to run",
            "runtime: killed" in text and "continuation recover" in text, text[:400])
    box.cli("recover", "--record", "--json")
    r.equal("after `recover`: crashed, A reconciling (its call has no outcome)", verdicts(),
            ("crashed", "crashed", ["reconciling"]))
