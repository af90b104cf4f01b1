"""Scenarios 10 and 11: a legacy capsule is read; oversized and strange inputs stay in budget."""
from __future__ import annotations

import hashlib
import json
import time

from continuation.prove.agent import Catalog, decide, memory_from_context, normal, read_context
from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    ACTIONABLE,
    catalog,
    checkpoints_of,
    context_states,
    request,
)


@scenario(10, "legacy capsule (schema 1) is read, upgraded and acted on correctly")
def legacy_capsule(box, r):
    from capsule.assemble import assemble_context
    from capsule.model import SCHEMA_VERSION, CapsuleVersionError
    from capsule.decode import decode_capsule

    from continuation.boundary import checkpoints
    from continuation.session.engine import Engine
    from continuation.prove.legacy_capsule import CAPSULE_V1

    original = json.loads(CAPSULE_V1)
    t0 = time.perf_counter()
    cap = decode_capsule(CAPSULE_V1)
    r.metrics["decode_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    r.equal("decoded as the current schema", cap.schema_version, SCHEMA_VERSION)
    want = {i["id"]: i["state"] for i in original["inputs"]}
    r.equal("every input keeps its id and state", {i.id: i.state for i in cap.inputs}, want)
    unknown = {c["call_id"] for c in original["unknown_tool_calls"]}
    r.check("the unknown-outcome tool calls are carried as unsettled",
            unknown <= {c.call_id for c in cap.tool_calls if c.status in ("unknown", "in_flight")},
            f"calls {[(c.call_id, c.status) for c in cap.tool_calls]}")

    text = assemble_context(None, cap).as_text()
    ctx = read_context(text)
    r.check("the upgraded capsule renders as a readable context block", ctx is not None)
    cat = {i["id"]: {"text": i["text"], "tools": [{"tool": "Edit", "input": {"id": i["id"]}}]}
           for i in original["inputs"]}
    memory = memory_from_context(ctx, Catalog(cat)) if ctx else []
    r.equal("the agent reads the same states from it", {m.key: m.state for m in memory}, want)
    acted = {(d.key, d.kind) for d in decide(memory, Catalog(cat))}
    expect = {(k, "verify" if s == "reconciling" else "execute")
              for k, s in want.items() if s in ACTIONABLE}
    r.equal("the agent verifies the reconciling request, does the queued one, leaves the handled one",
            acted, expect)

    # an older version wrote this capsule into the store: the engine reads it back from there
    with Engine(box.state) as engine:
        th = engine.thread(original["runtime"], original["session_id"])
        engine.store.store_checkpoint_row_as_is({
            "checkpoint_id": "cp-legacy-1", "thread_key": th.key, "generation": 1, "seq": 0,
            "reason": original["reason"], "created_at": time.time(), "capsule": CAPSULE_V1,
            "sha256": hashlib.sha256(CAPSULE_V1).hexdigest(), "capsule_version": 1,
            "rendered": ""})
        loaded = checkpoints.load(th)
        r.check("checkpoints.load reads the stored schema-1 capsule without problems",
                loaded is not None and not loaded.problems
                and {i.id for i in loaded.capsule.inputs} == set(want),
                f"problems {loaded.problems if loaded else None}")
    future = dict(original, schema_version=SCHEMA_VERSION + 7)
    try:
        decode_capsule(json.dumps(future).encode())
        r.check("a capsule from a future schema is refused with a clear error", False,
                "it was accepted")
    except CapsuleVersionError as exc:
        r.check("a capsule from a future schema is refused with a clear error",
                str(SCHEMA_VERSION + 7) in str(exc), str(exc))


def _strange_text(size: int) -> str:
    """``size`` characters: a readable head, then emoji, NUL, lone surrogates, RTL marks."""
    head = "Refactor the ingest pipeline as described in the pasted spec below. " * 6
    unit = "row 🚀 naïve café \x00 \ud800 \udfff \u202e Ω 中文 \t|"
    body = unit * ((size - len(head)) // len(unit) + 1)
    return (head + body)[:size]


@scenario(11, "oversized inputs (5 MB prompt, emoji, NUL, surrogates): capsule within budget")
def oversized_inputs(box, r):
    from capsule.budget import Budget

    ws = box.workspace("ws")
    big = _strange_text(5 * 1024 * 1024)
    small = "fix the 🐛 in the parser \x00 then say ok \udc80 ✅"
    cat = catalog({"A": {"text": big, "tools": request("A", "-", 2)["A"]["tools"]}},
                  {"B": {"text": small, "tools": request("B", "-", 1)["B"]["tools"]}})
    s = r.track(SimSession(box, "s11", runtime="codex", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"},
           {"op": "compact", "trigger": "auto", "turn": "t1"}, {"op": "act", "turn": "t1"},
           {"op": "stop", "turn": "t1", "message": "Pipeline refactored."},
           {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act"},
           {"op": "stop", "turn": "t2", "message": "ok"},
           {"op": "compact", "trigger": "manual", "turn": "t2"}, {"op": "act"}], timeout=300)
    codes = [h["rc"] for h in s.hooks()]
    r.check("every hook call succeeded", all(c == 0 for c in codes), f"exit codes {codes}")
    log = box.state / "logs" / "hooks.log"
    r.check("no hook error was logged", not log.exists(),
            log.read_text(encoding="utf-8", errors="replace")[:300] if log.exists() else "")
    budget = Budget()
    cps, _ = checkpoints_of(s)
    sizes = [len(c.capsule_bytes) for c in cps]
    r.check(f"every capsule within {budget.max_bytes} bytes", sizes and max(sizes) <= budget.max_bytes,
            f"sizes {sizes}")
    from capsule.decode import decode_capsule

    caps = [decode_capsule(c.capsule_bytes) for c in cps]
    r.check(f"every capsule within {budget.max_tokens} tokens",
            caps and all(c.budget.tokens <= budget.max_tokens for c in caps),
            f"tokens {[c.budget.tokens for c in caps]}")
    cut = [c for c in caps[0].cuts if c.original_bytes >= 5 * 1024 * 1024] if caps else []
    r.check("the 5 MB text was cut, and the cut recorded with its size and hash", bool(cut),
            f"cuts {[(c.field, c.original_bytes) for c in (caps[0].cuts if caps else [])]}")
    if cut:
        src = box.cli("source", cut[0].pointer, timeout=120)
        out = src.stdout if src.returncode == 0 else b""
        digests = {hashlib.sha256(out).hexdigest(), hashlib.sha256(out[:-1]).hexdigest()}
        r.check("`continuation source` reads the full text back (same sha256 as the cut)",
                cut[0].sha256 in digests,
                f"exit {src.returncode}, {len(out)} bytes, {src.stderr.decode(errors='replace')[:200]}")
    ctx = s.contexts()
    r.check("each context handed to the runtime fits its inline limit (10,000 characters)",
            ctx and all(len(c) <= 10_000 for c in ctx), f"lengths {[len(c) for c in ctx]}")
    states = context_states(ctx[0], cat) if ctx else None
    r.equal("the agent recognises the clipped 5 MB request as pending", (states or {}).get("A"),
            "pending")
    r.equal("A's tool calls ran once each, B's once",
            (s.exec_counts().get(("A", 0)), s.exec_counts().get(("A", 1)), s.executions("B")),
            (1, 1, 1))
    engine, th = s.thread()
    try:
        stored = {normal(i.text): i for i in th.inputs()}
    finally:
        engine.close()
    r.check("the short text keeps its emoji and NUL (lone surrogates as U+FFFD)",
            normal(small) in stored, f"stored texts: {[t[:40] for t in stored]}")
    r.expect_states(s, {"A": "handled", "B": "handled"})
