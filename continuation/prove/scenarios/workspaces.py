"""Scenarios 8 and 9: several threads in one repository; awkward workspaces."""
from __future__ import annotations

from continuation.prove.session import SimSession
from continuation.prove.scenarios.registry import scenario
from continuation.prove.scenarios.common import (
    ACTIONABLE,
    catalog,
    checkpoints_of,
    context_states,
    request,
)

_UNTOUCHABLE = ("head_file", "head", "index", "stash", "config", "branches")


@scenario(8, "concurrent threads in one repository keep separate states and refs")
def concurrent_threads(box, r):
    ws = box.workspace("shared")
    before = box.git_fingerprint(ws)
    sessions = []
    for name, runtime in (("left", "codex"), ("right", "claude")):
        cat = catalog(request(f"{name}-1", f"{name}: refactor the {name} panel", 1),
                      request(f"{name}-2", f"{name}: add tests for the {name} panel", 2))
        s = r.track(SimSession(box, f"s8-{name}", runtime=runtime, cwd=ws, catalog=cat))
        sessions.append((name, s, cat))
    procs = []
    for name, s, _ in sessions:
        procs.append(s.start([
            {"op": "start"}, {"op": "prompt", "key": f"{name}-1", "turn": f"{name}-t1"},
            {"op": "act"}, {"op": "stop", "turn": f"{name}-t1", "message": "Refactored."},
            {"op": "prompt", "key": f"{name}-2", "turn": f"{name}-t2"},
            {"op": "compact", "trigger": "auto", "turn": f"{name}-t2"}, {"op": "act"},
            {"op": "stop", "turn": f"{name}-t2", "message": "Tests added."},
            {"op": "compact", "trigger": "auto", "turn": f"{name}-t2"}, {"op": "act"}]))
    for p in procs:
        _, err = p.communicate(timeout=180)
        r.check(f"simulated runtime {p.pid} finished cleanly", p.returncode == 0,
                err.decode(errors="replace")[-300:])
    spans = [(min(x["t"] for x in s.log()), max(x["t"] for x in s.log())) for _, s, _ in sessions]
    r.check("the two sessions ran at the same time", spans[0][0] < spans[1][1]
            and spans[1][0] < spans[0][1], f"spans {spans}")
    keys, refs = [], []
    for name, s, cat in sessions:
        engine, th = s.thread()
        try:
            keys.append(th.key)
            texts = {i.text for i in th.inputs()}
        finally:
            engine.close()
        r.equal(f"{name}: the thread holds exactly its own inputs", texts,
                {v["text"] for v in cat.values()})
        for ctx in s.contexts():
            states = context_states(ctx, cat) or {}
            foreign = [line for line in ctx.splitlines() if line.startswith("- input=")
                       and ("left" if name == "right" else "right") + ":" in line]
            r.check(f"{name}: every context lists only its own inputs", not foreign and states,
                    f"foreign lines: {foreign[:2]}")
        cps, _ = checkpoints_of(s)
        own = [(c.workspace or {}).get("snapshot_ref") for c in cps]
        r.check(f"{name}: each checkpoint has a snapshot ref under the thread's own namespace",
                own and all(ref and f"/{th.key}/" in ref for ref in own), f"refs {own}")
        refs += own
        r.expect_states(s, {f"{name}-1": "handled", f"{name}-2": "handled"}, f" ({name})")
    r.check("two threads, two keys", len(set(keys)) == 2, f"keys {keys}")
    r.check("no snapshot ref is shared", len(set(refs)) == len(refs), f"refs {refs}")
    listed = box.git(ws, "for-each-ref", "--format=%(refname)", "refs/continuation").split()
    r.check("every snapshot ref exists in the repository", set(refs) <= set(listed),
            f"missing {sorted(set(refs) - set(listed))}")
    after = box.git_fingerprint(ws)
    changed = [k for k in _UNTOUCHABLE if before.get(k) != after.get(k)]
    r.check("the user's HEAD, branch, index, stash and config are untouched", not changed,
            f"changed: {changed}")


def _no_effects(cat: dict) -> dict:
    for v in cat.values():
        for t in v["tools"]:
            t.pop("effect", None)
    return cat


@scenario(9, "dirty tree, detached HEAD, unborn branch, non-git folder: user's git untouched")
def awkward_workspaces(box, r):
    for kind in ("dirty", "detached", "unborn", "plain"):
        ws = box.workspace(f"ws-{kind}", kind)
        before = box.git_fingerprint(ws)
        cat = _no_effects(catalog(request("A", f"explain the layout of this {kind} folder", 1),
                                  request("B", f"list open questions about the {kind} folder", 1)))
        s = r.track(SimSession(box, f"s9-{kind}", runtime="codex", cwd=ws, catalog=cat))
        s.run([{"op": "start"}, {"op": "prompt", "key": "A", "turn": "t1"}, {"op": "act"},
               {"op": "stop", "turn": "t1", "message": "Explained."},
               {"op": "prompt", "key": "B", "turn": "t2"},
               {"op": "compact", "trigger": "auto", "turn": "t2"}, {"op": "act"},
               {"op": "stop", "turn": "t2", "message": "Listed."}])
        after = box.git_fingerprint(ws)
        changed = [k for k in before if before.get(k) != after.get(k)]
        r.check(f"{kind}: the user's HEAD, branch, index, stash, config, status untouched",
                not changed, f"changed: {changed}")
        cps, _ = checkpoints_of(s)
        ref = (cps[-1].workspace if cps else None) or {}
        r.check(f"{kind}: the checkpoint carries a workspace snapshot without error",
                ref and not ref.get("error"), f"workspace: {str(ref)[:300]}")
        if kind == "detached":
            r.check("detached: the snapshot says HEAD is detached", ref.get("detached") is True,
                    f"detached={ref.get('detached')!r}")
        if kind == "unborn":
            r.check("unborn: the snapshot says the branch is unborn", ref.get("unborn") is True,
                    f"unborn={ref.get('unborn')!r}")
        if kind == "dirty":
            dirty = ref.get("dirty") or {}
            r.check("dirty: modified, staged and untracked files are summarised",
                    dirty.get("modified") and dirty.get("untracked") and dirty.get("added"),
                    f"dirty={dirty}")
        if kind != "plain":
            snap = ref.get("snapshot_ref")
            ok = bool(snap) and bool(box.git(ws, "rev-parse", "-q", "--verify", snap or "-",
                                             check=False).strip())
            r.check(f"{kind}: the snapshot ref resolves in the repository", ok, f"ref {snap}")
        else:
            r.check("plain: the workspace is recorded as not a git repository",
                    ref.get("kind") not in (None, "git"), f"kind={ref.get('kind')!r}")
        ctx = s.contexts()
        states = context_states(ctx[-1], cat) if ctx else None
        r.check(f"{kind}: the context lists B actionable after the boundary",
                states is not None and states.get("B") in ACTIONABLE, f"states {states}")
        r.equal(f"{kind}: A once, B once", (s.executions("A"), s.executions("B")), (1, 1))
        r.expect_states(s, {"A": "handled", "B": "handled"}, f" ({kind})")
