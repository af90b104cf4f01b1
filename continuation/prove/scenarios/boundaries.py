"""Scenarios 1-5, 12, 13: what a context boundary keeps, for each input."""
from __future__ import annotations

from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    ACTIONABLE,
    catalog,
    checkpoints_of,
    context_ids,
    context_states,
    events_of,
    request,
    state_totals,
)


def _last_context(r, s, label: str) -> str:
    ctx = s.contexts()
    r.check(f"{label}: a context block was delivered after the boundary", ctx,
            f"{len(ctx)} contexts received")
    return ctx[-1] if ctx else ""


@scenario(1, "completed objective across a boundary stays completed")
def completed_stays_completed(box, r):
    for runtime in ("codex", "claude"):
        ws = box.workspace(f"ws-{runtime}")
        cat = catalog(request("A", "add a changelog entry for the parser fix", 2),
                      request("B", "now bump the version to 1.2.0", 1))
        s = r.track(SimSession(box, f"s1-{runtime}", runtime=runtime, cwd=ws, catalog=cat))
        s.run([{"op": "start", "source": "startup"},
               {"op": "prompt", "key": "A", "turn": "t-a"}, {"op": "act"},
               {"op": "stop", "turn": "t-a", "message": "Added the changelog entry."},
               {"op": "compact", "trigger": "auto", "turn": "t-a"},
               {"op": "act", "turn": "t-a"}])
        ctx = _last_context(r, s, runtime)
        states = context_states(ctx, cat) or {}
        r.equal(f"{runtime}: the context lists A as handled (not actionable)", states.get("A"), "handled")
        s.run([{"op": "prompt", "key": "B", "turn": "t-b"}, {"op": "act"},
               {"op": "stop", "turn": "t-b", "message": "Bumped."}])
        r.equal(f"{runtime}: A's tool calls ran once each (none after the boundary)",
                [s.executions("A")], [2])
        r.equal(f"{runtime}: B ran once", s.executions("B"), 1)
        r.expect_states(s, {"A": "handled", "B": "handled"}, f" ({runtime})")


@scenario(2, "request accepted just before an automatic boundary is answered exactly once")
def accepted_before_boundary(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "run the unit tests and fix the failing import", 1),
                  request("B", "also add a regression test for the import fix", 2))
    s = r.track(SimSession(box, "s2", runtime="codex", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Fixed the import."},
           {"op": "prompt", "key": "B", "turn": "t2"},
           {"op": "compact", "trigger": "auto", "turn": "t2"}])
    r.expect_states(s, {"A": "handled", "B": "pending"}, " right after the boundary")
    ctx = _last_context(r, s, "codex")
    states = context_states(ctx, cat) or {}
    r.equal("the context lists B as pending", states.get("B"), "pending")
    r.check("the context lists A as not actionable", states.get("A") not in ACTIONABLE,
            f"A is {states.get('A')!r}")
    s.run([{"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Added the test."},
           {"op": "compact", "trigger": "auto", "turn": "t2"}, {"op": "act", "turn": "t2"}])
    after = [e for e in s.ledger() if e.get("kind") == "exec" and e["key"] == "B"]
    r.equal("B answered exactly once after the boundary (each of its 2 tool calls once)",
            sorted((e["tool_index"], e["boundaries"]) for e in after), [(0, 1), (1, 1)])
    r.equal("A never re-executed", s.executions("A"), 1)
    r.expect_states(s, {"A": "handled", "B": "handled"}, " at the end")


@scenario(3, "two steered inputs in one turn keep separate states")
def steered_inputs(box, r):
    for runtime in ("codex", "claude"):
        ws = box.workspace(f"ws-{runtime}")
        cat = catalog(request("A", "rename the config loader to load_settings", 1),
                      request("B", "and keep a deprecated alias for the old name", 1))
        s = r.track(SimSession(box, f"s3-{runtime}", runtime=runtime, cwd=ws, catalog=cat))
        # B is typed while the turn of A runs: same turn (Codex turn_id, Claude prompt_id)
        s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "turn-1"}, {"op": "act"},
               {"op": "prompt", "key": "B", "turn": "turn-1"},
               {"op": "compact", "trigger": "auto", "turn": "turn-1"}])
        ids = s.input_ids()
        r.check(f"{runtime}: A and B are two inputs with two ids",
                len(ids.get("A", [])) == 1 and len(ids.get("B", [])) == 1
                and ids["A"] != ids["B"], f"ids by request: {ids}")
        ctx = _last_context(r, s, runtime)
        states = context_states(ctx, cat) or {}
        r.check(f"{runtime}: the context lists A and B separately",
                "A" in states and "B" in states and len(set(context_ids(ctx))) >= 2,
                f"context states {states}")
        s.run([{"op": "act", "turn": "turn-1"},
               {"op": "stop", "turn": "turn-1", "message": "Renamed, alias kept."}])
        r.equal(f"{runtime}: A's tool call ran once, B's once",
                (s.executions("A"), s.executions("B")), (1, 1))
        r.expect_states(s, {"A": "handled", "B": "handled"}, f" ({runtime})")


@scenario(4, "input queued while a compaction runs survives it")
def queued_during_compaction(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "format the whole repository with black", 1),
                  request("B", "then update the contributing guide", 1))
    s = r.track(SimSession(box, "s4", runtime="codex", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Formatted."},
           {"op": "compact", "trigger": "manual", "turn": "t1",
            "prompts_during": [{"key": "B", "turn": "t2"}]}])
    r.expect_states(s, {"A": "handled", "B": "pending"}, " after the compaction")
    ctx = _last_context(r, s, "codex")
    states = context_states(ctx, cat) or {}
    r.check("the delivered context does not offer A again", states.get("A") not in ACTIONABLE,
            f"A is {states.get('A')!r} in the context")
    memory = [x.get("memory") for x in s.log() if x.get("kind") == "boundary"][-1:] or [{}]
    r.check("after the compaction the agent has B as an open request (context or its message)",
            memory[0].get("B") in ("new", "pending", "queued"), f"agent memory {memory[0]}")
    s.run([{"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Guide updated."}])
    r.equal("B ran exactly once, A never again", (s.executions("B"), s.executions("A")), (1, 1))
    r.expect_states(s, {"A": "handled", "B": "handled"}, " at the end")


@scenario(5, "interrupted turn stays actionable, marked interrupted")
def interrupted_turn(box, r):
    # Claude Code: Esc sends no hook; the user then leaves (SessionEnd) and resumes later
    ws = box.workspace("ws")
    cat = catalog(request("P", "migrate the three settings files to TOML", 3),
                  request("Q", "continue", 0))
    s = r.track(SimSession(box, "s5", runtime="claude", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "P", "turn": "p-1"},
           {"op": "act", "limit": 1}, {"op": "interrupt"},
           {"op": "end", "reason": "prompt_input_exit"}])
    r.expect_states(s, {"P": "interrupted"}, " (claude) after the interruption")
    s.run([{"op": "start", "source": "resume"}])
    ctx = _last_context(r, s, "claude resume")
    states = context_states(ctx, cat) or {}
    r.equal("claude: the resume context marks P interrupted", states.get("P"), "interrupted")
    s.run([{"op": "prompt", "key": "Q", "turn": "p-2"}, {"op": "act"},
           {"op": "stop", "turn": "p-2", "message": "Migrated the remaining files."}])
    counts = s.exec_counts()
    r.equal("claude: P's finished tool call is not repeated; the other two run once",
            [counts.get(("P", i), 0) for i in range(3)], [1, 1, 1])
    # P was in the context of Q's turn (marked interrupted), and that turn completed cleanly
    # after doing P's remaining work: the runtime facts make P handled now
    r.expect_states(s, {"P": "handled", "Q": "handled"}, " (claude) at the end")

    # Codex: Ctrl-C sends Interrupt; the user goes on in the same session, a compaction follows
    ws = box.workspace("ws-codex")
    cat = catalog(request("P", "convert the five fixtures to JSON", 3),
                  request("Q", "go on with the fixtures", 0))
    s = r.track(SimSession(box, "s5-codex", runtime="codex", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "P", "turn": "t1"},
           {"op": "act", "limit": 1}, {"op": "interrupt", "turn": "t1"}])
    r.expect_states(s, {"P": "interrupted"}, " (codex) after Interrupt")
    s.run([{"op": "prompt", "key": "Q", "turn": "t2"},
           {"op": "compact", "trigger": "auto", "turn": "t2"}])
    ctx = _last_context(r, s, "codex compact")
    states = context_states(ctx, cat) or {}
    r.equal("codex: the context after the compaction marks P interrupted", states.get("P"),
            "interrupted")
    s.run([{"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Converted."}])
    counts = s.exec_counts()
    r.equal("codex: P's finished tool call is not repeated; the other two run once",
            [counts.get(("P", i), 0) for i in range(3)], [1, 1, 1])
    r.expect_states(s, {"P": "handled", "Q": "handled"}, " (codex) at the end")


@scenario(12, "manual and automatic boundaries (and one whose PreCompact never came)")
def manual_and_auto(box, r):
    cases = (("claude", "manual", False), ("codex", "auto", False), ("claude", "auto", True))
    for runtime, trigger, skip_pre in cases:
        label = f"{runtime}/{trigger}" + ("/no PreCompact" if skip_pre else "")
        ws = box.workspace(f"ws-{runtime}-{trigger}-{int(skip_pre)}")
        cat = catalog(request("A", f"write the release notes ({label})", 1),
                      request("B", f"tag the release ({label})", 1))
        s = r.track(SimSession(box, f"s12-{runtime}-{trigger}-{int(skip_pre)}", runtime=runtime,
                               cwd=ws, catalog=cat))
        steps = [{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                 {"op": "stop", "turn": "t1", "message": "Notes written."},
                 {"op": "prompt", "key": "B", "turn": "t2"}]
        if skip_pre:  # claude-code #15174: the compaction happened, PreCompact was never sent
            steps.append({"op": "hook", "payload": {
                "session_id": s.session_id, "cwd": str(ws), "transcript_path": "",
                "hook_event_name": "SessionStart", "source": "compact"}})
        else:
            steps.append({"op": "compact", "trigger": trigger, "turn": "t2"})
        s.run(steps)
        ctx = s.log()
        delivered = [h for h in s.hooks("SessionStart") if h.get("source") == "compact"
                     and h.get("context_chars")]
        if skip_pre:
            delivered = [h for h in s.hooks("SessionStart") if h.get("context_chars")]
        r.equal(f"{label}: the compact SessionStart answered with context", len(delivered), 1)
        cps, row = checkpoints_of(s)
        expected_reason = "compact" if skip_pre else trigger
        r.check(f"{label}: a checkpoint was committed with reason {expected_reason!r}",
                cps and cps[-1].reason == expected_reason,
                f"reasons {[c.reason for c in cps]}")
        boundaries = events_of(s, "boundary")
        want = "unknown" if skip_pre else trigger
        r.check(f"{label}: the boundary fact records trigger {want!r}",
                [b["data"].get("trigger") for b in boundaries] == [want],
                f"boundary facts {[b['data'] for b in boundaries]}")
        r.equal(f"{label}: context delivered once for one boundary",
                len(events_of(s, "context_delivered")), 1)
        s.run([{"op": "act", "turn": "t2"}, {"op": "stop", "turn": "t2", "message": "Tagged."}])
        r.equal(f"{label}: A once, B once", (s.executions("A"), s.executions("B")), (1, 1))
        r.expect_states(s, {"A": "handled", "B": "handled"}, f" ({label})")
        del ctx


@scenario(13, "50 boundaries in a row: no drift, capsule within budget, handled stays handled")
def fifty_boundaries(box, r):
    from capsule.budget import Budget

    n = 50
    ws = box.workspace("ws")
    cat = catalog(*(request(f"R{i}", f"step {i}: update module_{i}.py docstring", 1)
                    for i in range(1, n + 1)))
    s = r.track(SimSession(box, "s13", runtime="codex", cwd=ws, catalog=cat, hook="fork"))
    steps = [{"op": "start"}]
    for i in range(1, n + 1):
        steps += [{"op": "prompt", "key": f"R{i}", "turn": f"t{i}"}, {"op": "act"},
                  {"op": "stop", "turn": f"t{i}", "message": f"Updated module_{i}.py."},
                  {"op": "compact", "trigger": "auto", "turn": f"t{i}"}, {"op": "act"}]
    s.run(steps, timeout=300)
    contexts = s.contexts()
    r.equal("one context per boundary", len(contexts), n)
    drift, reappeared = [], []
    for i, text in enumerate(contexts, start=1):
        totals = state_totals(text)
        if totals.get("handled") != i or any(totals.get(k) for k in ACTIONABLE):
            drift.append((i, totals))
        states = context_states(text, cat) or {}
        reappeared += [(i, k) for k, v in states.items() if v in ACTIONABLE]
    r.check("no drift: after boundary i the context counts exactly i handled inputs and "
            "nothing actionable", not drift, f"first drifts: {drift[:3]}")
    r.check("handled inputs never reappear as actionable", not reappeared,
            f"reappeared: {reappeared[:5]}")
    r.equal("no tool call ran twice", s.repeated_tool_calls(), 0)
    cps, row = checkpoints_of(s)
    budget = Budget()
    sizes = [len(c.capsule_bytes) for c in cps]
    r.equal("50 checkpoints, generation 50", (len(cps), row["generation"]), (n, n))
    r.check(f"every capsule within its budget ({budget.max_bytes} bytes)",
            sizes and max(sizes) <= budget.max_bytes, f"largest {max(sizes or [0])} bytes")
    r.check("capsule size levels off (last <= budget, no unbounded growth)",
            sizes and sizes[-1] <= budget.max_bytes, f"first {sizes[:1]}, last {sizes[-1:]}")
    r.metrics["capsule_bytes_first_last"] = [sizes[0], sizes[-1]] if sizes else None
    r.expect_states(s, {f"R{i}": "handled" for i in range(1, n + 1)})
