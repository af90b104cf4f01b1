"""Scenarios 14 and 15: rewind (conversation and files) with an informed retry; fork."""
from __future__ import annotations

from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    ACTIONABLE,
    catalog,
    checkpoints_of,
    context_states,
    events_of,
    request,
)

#: events that record a boundary, not work: a checkpoint's aligned position may include them
BOOKKEEPING = {"checkpoint_committed", "boundary", "session_started", "settings",
               "context_delivered", "session_ended", "assistant_claim"}

_UNTOUCHABLE = ("head_file", "head", "index", "stash", "config", "branches")


@scenario(14, "rewind both (conversation + files), then an informed retry")
def rewind_both(box, r):
    ws = box.workspace("ws")
    reason = "approach Y broke the integration tests"
    cat = catalog(request("A", "add input validation to the upload endpoint", 1, "upload.py"),
                  request("B", "approach Y: rewrite the upload parser as a state machine", 2,
                          "upload.py"),
                  request("C", "retry the parser rewrite, keeping the old tokenizer", 1, "upload.py"))
    s = r.track(SimSession(box, "s14", runtime="codex", cwd=ws, catalog=cat))
    s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
           {"op": "stop", "turn": "t1", "message": "Validation added."},
           {"op": "compact", "trigger": "manual", "turn": "t1"},
           {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act"},
           {"op": "stop", "turn": "t2", "message": "Parser rewritten."}])
    at_checkpoint = None
    cps, _ = checkpoints_of(s)
    cp = cps[0] if cps else None
    r.check("a checkpoint exists before B", cp is not None)
    if cp is None:
        return
    before = box.git_fingerprint(ws)
    upload_after_a = "A-0\n"
    at_checkpoint = (ws / "upload.py").read_text(encoding="utf-8")
    r.equal("B changed the file after the checkpoint", at_checkpoint, upload_after_a + "B-0\nB-1\n")
    rw = box.cli("rewind", cp.checkpoint_id, "--both", "--reason", reason, "--yes", "--json")
    r.check("`continuation rewind --both` succeeded", rw.returncode == 0,
            rw.stderr.decode(errors="replace")[-300:])
    r.expect_states(s, {"A": "handled", "B": "rolled_back"}, " after the rewind")
    r.equal("the files are back as they were at the checkpoint",
            (ws / "upload.py").read_text(encoding="utf-8"), upload_after_a)
    after = box.git_fingerprint(ws)
    changed = [k for k in _UNTOUCHABLE if before.get(k) != after.get(k)]
    r.check("the user's HEAD, branch, index, stash and config are untouched", not changed,
            f"changed: {changed}")
    n_before = len(s.contexts())
    s.run([{"op": "start", "source": "resume"}, {"op": "prompt", "key": "C", "turn": "t3"},
           {"op": "act"}, {"op": "stop", "turn": "t3", "message": "Retried."}])
    new = s.contexts()[n_before:]
    r.check("the next context after the rewind reached the runtime", new,
            f"{len(new)} new contexts")
    text = new[0] if new else ""
    states = context_states(text, cat) or {}
    r.check("it lists B as rolled back, not actionable", states.get("B") == "rolled_back",
            f"B is {states.get('B')!r}")
    r.check("it carries the user's reason", reason in text)
    r.check("it says what was tried and undone (B's commands)",
            "undone" in text and "echo B-0" in text, "no summary of the undone work")
    r.equal("informed retry: B's undone calls are not re-run; C runs once",
            (s.executions("B"), s.executions("C")), (2, 1))
    r.expect_states(s, {"A": "handled", "B": "rolled_back", "C": "handled"}, " at the end")


@scenario(15, "fork: a new thread from a checkpoint, with lineage, sharing nothing after it")
def fork(box, r):
    ws = box.workspace("ws")
    cat = catalog(request("A", "sketch the plugin interface", 1, "plugins.md"),
                  request("B", "implement plugin loading with entry points", 1, "plugins.md"),
                  request("C", "implement plugin loading from a folder instead", 1, "plugins.md"))
    parent = r.track(SimSession(box, "s15-parent", runtime="codex", cwd=ws, catalog=cat))
    parent.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
                {"op": "stop", "turn": "t1", "message": "Sketched."},
                {"op": "compact", "trigger": "manual", "turn": "t1"},
                {"op": "prompt", "key": "B", "turn": "t2"}, {"op": "act"},
                {"op": "stop", "turn": "t2", "message": "Entry points done."}])
    cps, prow = checkpoints_of(parent)
    if not cps:
        r.check("the parent has a checkpoint to fork from", False)
        return
    fork_sid = "prove-s15-fork"
    fk = box.cli("fork", cps[0].checkpoint_id, "--session-id", fork_sid, "--name", "folder-loading",
                 "--json")
    r.check("`continuation fork` succeeded", fk.returncode == 0,
            fk.stderr.decode(errors="replace")[-300:])
    child = r.track(SimSession(box, "s15-fork", runtime="codex", cwd=ws, catalog=cat,
                               session_id=fork_sid))
    child.run([{"op": "start", "source": "resume"}, {"op": "prompt", "key": "C", "turn": "f1"},
               {"op": "act"}, {"op": "stop", "turn": "f1", "message": "Folder loading done."}])
    engine, th = child.thread()
    try:
        row = th.row
    finally:
        engine.close()
    r.equal("the fork records its parent", row["forked_from"], prow["thread_key"])
    at = row["forked_at_seq"] or 0
    between = [e["type"] for e in events_of(parent) if cps[0].seq < e["seq"] <= at]
    work = [t for t in between if t not in BOOKKEEPING]
    r.check("the fork point is the checkpoint's position (only bookkeeping events between)",
            at >= cps[0].seq and not work,
            f"checkpoint seq {cps[0].seq}, forked_at_seq {at}, events between {between}")
    ctx = child.contexts()
    states = context_states(ctx[0], cat) if ctx else None
    r.check("the fork's first context lists A handled and does not list B",
            states is not None and states.get("A") == "handled" and "B" not in states,
            f"states {states}")
    r.check("nothing in the fork's context is actionable before its own prompt",
            states is not None and not [k for k, v in states.items() if v in ACTIONABLE])
    r.equal("the fork re-ran nothing; C ran once",
            (child.executions("A"), child.executions("B"), child.executions("C")), (0, 0, 1))
    r.expect_states(child, {"A": "handled", "C": "handled"}, " (fork)")
    r.check("the fork holds no input from after the fork point", "B" not in child.engine_states(),
            f"fork states {child.engine_states()}")
    r.expect_states(parent, {"A": "handled", "B": "handled"}, " (parent, unchanged)")
    r.check("the parent holds none of the fork's inputs", "C" not in parent.engine_states())
    fcps, _ = checkpoints_of(child)
    refs = [(c.workspace or {}).get("snapshot_ref") or "" for c in fcps]
    r.check("the fork's snapshots live under its own ref namespace",
            refs and all(f"/{row['thread_key']}/" in ref for ref in refs), f"refs {refs}")
