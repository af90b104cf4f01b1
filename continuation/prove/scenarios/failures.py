"""Scenarios 6 and 7: a runtime killed inside a tool call, and hooks killed at persistence points."""
from __future__ import annotations

import json
import time

from continuation.prove.report import NotAvailable
from continuation.prove.sandbox import wait_for
from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    ACTIONABLE,
    catalog,
    checkpoints_of,
    context_states,
    request,
)


@scenario(6, "crash mid-tool: reconciling after `continuation recover`, never retried blindly")
def crash_mid_tool(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "create the staging database schema", 1),
                  request("B", "run the data migration against staging", 2),
                  request("C", "continue", 0))
    s = r.track(SimSession(box, "s6", runtime="codex", cwd=ws, catalog=cat))
    proc = s.start([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                    {"op": "stop", "turn": "t1", "message": "Schema created."},
                    {"op": "prompt", "key": "B", "turn": "t2"},
                    {"op": "act", "limit": 1, "hang": True}])
    hung = wait_for(lambda: any(x.get("kind") == "hanging" for x in s.log()), timeout=60)
    r.check("the simulated runtime blocked inside B's second tool call", hung)
    proc.kill()  # SIGKILL: no hook, no cleanup, the tool call's outcome is unknown
    proc.wait(timeout=30)
    hung_call = next((x["call"] for x in s.log() if x.get("kind") == "hanging"), None)
    r.expect_states(s, {"A": "handled", "B": "pending"}, " while the dead runtime is unnoticed")

    t_restart = time.time()
    rec = box.cli("recover", "--record", "--json")
    r.check("`continuation recover` ran", rec.returncode == 0,
            rec.stderr.decode(errors="replace")[-300:])
    try:
        listed = json.loads(rec.stdout.decode() or "null")
    except ValueError:
        listed = None
    r.check("recover lists the thread as interrupted", s.session_id in json.dumps(listed),
            f"recover said: {json.dumps(listed)[:300]}")
    r.expect_states(s, {"A": "handled", "B": "reconciling"}, " after recover")
    engine, th = s.thread()
    try:
        calls = {c.call_id: c.status for c in th.tool_calls()}
    finally:
        engine.close()
    r.check("the killed call is recorded with an unknown outcome",
            calls.get(hung_call) in ("unknown", "in_flight"), f"{hung_call}: {calls.get(hung_call)}")

    s.run([{"op": "start", "source": "resume"}, {"op": "act", "turn": "t2"}])
    seen = [x for x in s.log() if x.get("kind") == "hook" and x["event"] == "SessionStart"
            and x.get("source") == "resume" and x.get("context_chars")]
    if seen:
        # from the restart (recover, then the runtime's resume) to the context in the agent's hands
        r.metrics["recovery_latency_ms"] = round((seen[-1]["t"] - t_restart) * 1000, 1)
    ctx = s.contexts()
    states = context_states(ctx[-1], cat) if ctx else None
    r.check("the resumed session got a context marking B reconciling",
            states is not None and states.get("B") == "reconciling", f"context states {states}")
    r.equal("the unknown call was not re-run; the agent verified instead",
            (s.exec_counts().get(("B", 1)), s.verifications("B") >= 1), (1, True))

    rec2 = box.cli("reconcile", hung_call or "-", "--thread", s.session_id, "--applied",
                   "--note", "migration log shows it finished")
    r.check("`continuation reconcile --applied` records the decision", rec2.returncode == 0,
            rec2.stderr.decode(errors="replace")[-300:])
    s.run([{"op": "prompt", "key": "C", "turn": "t3"}, {"op": "act"},
           {"op": "stop", "turn": "t3", "message": "Migration confirmed."},
           {"op": "compact", "trigger": "auto", "turn": "t3"}, {"op": "act"}])
    r.equal("after reconciliation and another boundary, B's tool calls ran once each in total",
            [s.exec_counts().get(("B", i)) for i in range(2)], [1, 1])
    r.equal("A never re-executed", s.executions("A"), 1)
    final = s.engine_states()
    r.check("B is no longer reconciling", final.get("B") != "reconciling", f"B: {final.get('B')}")


BEFORE = ("checkpoint.before_commit", "snapshot.mid")
#: the checkpoint and its boundary fact are one transaction: after it, the hook has appended
#: everything it will
AFTER = ("checkpoint.after_commit",)


@scenario(7, "faults before and after checkpoint persistence")
def persistence_faults(box, r):
    from continuation.host import faults

    missing = [p for p in BEFORE + AFTER if p not in faults.POINTS]
    if missing:
        raise NotAvailable(f"fault points {missing} in continuation/host/faults.py")
    from continuation.boundary import checkpoints

    for point in BEFORE + AFTER:
        ws = box.workspace(f"ws-{point}")
        cat = catalog(request("A", f"document the cache layer ({point})", 1),
                      request("B", f"then add cache metrics ({point})", 1))
        s = r.track(SimSession(box, f"s7-{point}", runtime="codex", cwd=ws, catalog=cat,
                               hook="fork"))
        s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
               {"op": "stop", "turn": "t1", "message": "Documented."},
               {"op": "compact", "trigger": "manual", "turn": "t1"},
               {"op": "prompt", "key": "B", "turn": "t2"},
               {"op": "compact", "trigger": "auto", "turn": "t2",
                "faults": {"PreCompact": point}},
               {"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Metrics added."}])
        pre = s.hooks("PreCompact")
        killed = len(pre) == 2 and pre[1]["rc"] not in (0, None)
        r.check(f"{point}: the PreCompact hook process was killed at the point", killed,
                f"exit codes {[h['rc'] for h in pre]}")
        ctx = s.contexts()
        states = context_states(ctx[-1], cat) if ctx else None
        r.check(f"{point}: the compact SessionStart still delivered a context listing B actionable",
                states is not None and states.get("B") in ACTIONABLE, f"context states {states}")
        r.equal(f"{point}: B once, A once", (s.executions("B"), s.executions("A")), (1, 1))
        cps, row = checkpoints_of(s)
        bad = [c.checkpoint_id for c in cps if checkpoints.verify(c)]
        r.check(f"{point}: every committed checkpoint verifies (sha256)", cps and not bad,
                f"{len(cps)} checkpoints, corrupt: {bad}")
        gens = [c.generation for c in cps]
        r.check(f"{point}: generations are consecutive (no hole, no duplicate)",
                gens == list(range(1, len(gens) + 1)), f"generations {gens}")
        r.expect_states(s, {"A": "handled", "B": "handled"}, f" ({point})")
    for point in ("event.before_commit", "event.after_commit"):
        _delivery_fault(box, r, point)  # the first event the compact SessionStart commits
    doctor = box.cli("doctor", "--json")
    r.check("`continuation doctor` runs on the store after the kills",
            doctor.returncode in (0, 1) and doctor.stdout.strip(),
            doctor.stderr.decode(errors="replace")[-300:])


def _delivery_fault(box, r, point: str) -> None:
    """The compact SessionStart hook dies at ``point`` while delivering the context: the runtime
    goes on with its own compaction (fail-open) and the agent never saw the context. The engine
    must not count that answer as delivered: the next prompt carries the context."""
    label = f"compact SessionStart killed at {point} (its first event)"
    ws = box.workspace(f"ws-delivery-{point}")
    cat = catalog(request("A", f"write the cache design note ({label})", 1),
                  request("B", f"then benchmark the cache ({label})", 1),
                  request("C", f"and summarise the numbers ({label})", 1))
    s = r.track(SimSession(box, f"s7-delivery-{point}", runtime="codex", cwd=ws, catalog=cat,
                           hook="fork"))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Note written."},
           {"op": "prompt", "key": "B", "turn": "t2"},
           {"op": "compact", "trigger": "auto", "turn": "t2", "faults": {"SessionStart": point}},
           {"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Benchmarked."},
           {"op": "prompt", "key": "C", "turn": "t3"}, {"op": "act"},
           {"op": "stop", "turn": "t3", "message": "Summarised."}])
    starts = [h for h in s.hooks("SessionStart") if h.get("source") == "compact"]
    r.check(f"{label}: the hook process was killed", starts and starts[-1]["rc"] not in (0, None),
            f"exit codes {[h['rc'] for h in starts]}")
    prompt_ctx = [h for h in s.hooks("UserPromptSubmit") if h.get("context_chars")]
    r.check(f"{label}: the lost context is delivered at the next prompt (at-least-once delivery)",
            prompt_ctx, "the engine recorded the delivery, the runtime never received it, and "
            "no later hook carried it" if not prompt_ctx else "")
    late = context_states(s.contexts()[-1], cat) if prompt_ctx else None
    r.check(f"{label}: the late context is current: B, handled by then, is not offered again",
            late is not None and late.get("B") == "handled",
            f"the context at the prompt lists B as {(late or {}).get('B')!r}"
            + ("" if late is not None and late.get("B") == "handled" else " (a stale checkpoint)"))
    r.equal(f"{label}: B and C each ran once", (s.executions("B"), s.executions("C")), (1, 1))
    r.expect_states(s, {"A": "handled", "B": "handled", "C": "handled"}, f" ({label})")
