"""What the timeline page shows, read from the store and aggregated there.

A page never loads a whole long thread. :func:`outline` is the thread at a glance: its header,
lineage, checkpoints, the cut points of its pages, and the log counted per bucket by the
database (events by type, calls by status) with the rare marks (compactions, crashes,
rewinds) at their exact positions. :func:`window` is one page: a run of turns with their
inputs (each with its state over time), calls, claims and the boundaries between them, read
through the indexes by position. :func:`checkpoint_detail` is one checkpoint: the capsule as
the model received it, what a rewind to it reaches, and the exact command.

An input's state over time is read backwards from its row: each transition records the seq
that made it (``updated_seq``) and the row before it is kept at that seq (``row_versions``),
so a few point reads per page give every input's trail on the current branch (a rewind puts
the rows back as they were, so a discarded branch's transitions are not on it). A thread
recorded before the store kept versions shows the transitions it has, marked partial.
"""
from __future__ import annotations

import shlex

from statemachine import events as ev

from continuation.commands.timeline.shown import shown

#: a page holds this many turns at most, and ends at the first turn starting this many events
#: after its start (a turn is never split: a 1,000-call turn is a page of its own)
PAGE_TURNS = 20
PAGE_EVENTS = 600
#: a page without turns (a log of boundaries only) is cut every this many events
PAGE_EVENTS_MAX = 4000
#: the outline's strip: the log counted in this many buckets
BUCKETS = 240
#: the event types the strip counts (calls are counted by status from the calls' own rows)
STRIP_TYPES = (ev.INPUT_ADMITTED,)
#: exact marks the outline carries at most (the newest)
MARKS_MAX = 2000
#: characters of a text kept on the page (the page says how long the whole is)
TEXT_MAX = 4000
ARGS_MAX = 600
OUTPUT_MAX = 1200
CAPSULE_MAX = 200_000
#: inputs and calls a rewind preview lists (the counts are whole)
PREVIEW_LIST = 20

#: the events drawn between turns: boundaries, crashes, rewinds and the rest of what the
#: runtime or the user did outside a turn's calls
MARK_TYPES = (ev.BOUNDARY, ev.CRASH_DETECTED, ev.ROLLED_BACK, "workspace_restored",
              ev.CHECKPOINT_COMMITTED, ev.SESSION_STARTED, ev.SESSION_ENDED, ev.RECONCILED,
              ev.INPUT_SUPERSEDED, ev.INPUT_REOPENED, ev.CONTEXT_DELIVERED, ev.PLAN_UPDATED)
#: the marks the outline places exactly (the others are frequent and only counted)
OUTLINE_MARK_TYPES = (ev.BOUNDARY, ev.CRASH_DETECTED, ev.ROLLED_BACK, "workspace_restored",
                      ev.CHECKPOINT_COMMITTED)


# -- the outline --------------------------------------------------------------------------------
def thread_row(thread) -> dict:
    row = thread.row
    keep = ("thread_key", "runtime", "session_id", "name", "workspace_root", "forked_from",
            "forked_at_seq", "created_at", "updated_at", "last_seq", "generation")
    return {k: row.get(k) for k in keep}


def threads(engine) -> list[dict]:
    """Every thread, for the lineage tree (forks under the thread they came from)."""
    keep = ("thread_key", "runtime", "session_id", "name", "forked_from", "forked_at_seq",
            "last_seq", "updated_at")
    return [{k: r.get(k) for k in keep} for r in engine.by_workspace()]


def page_starts(turns: list[tuple], last_seq: int) -> list[int]:
    """The first seq of each page: pages are cut at turn starts (see ``PAGE_TURNS``)."""
    starts = [1]
    in_page = 0
    for _, _, started, _ in turns:
        lo = starts[-1]
        while started - lo > PAGE_EVENTS_MAX and in_page == 0:
            lo += PAGE_EVENTS_MAX
            starts.append(lo)
        if in_page and (in_page >= PAGE_TURNS or started - lo >= PAGE_EVENTS) and started > lo:
            starts.append(started)
            in_page = 0
        in_page += 1
    lo = starts[-1]
    while in_page == 0 and last_seq - lo >= PAGE_EVENTS_MAX:
        lo += PAGE_EVENTS_MAX
        starts.append(lo)
    return starts


def outline(engine, thread, turns: list[tuple] | None = None) -> dict:
    """``turns``: the thread's ``turn_outline`` when the caller read it already."""
    store, key = thread.store, thread.key
    row = thread_row(thread)
    last_seq = int(row["last_seq"] or 0)
    turns = store.turn_outline(key) if turns is None else turns
    starts = page_starts(turns, last_seq)
    width = max(1, -(-last_seq // BUCKETS))
    series: dict[str, dict[int, int]] = {}
    for bucket, etype, n in store.event_density(key, width, STRIP_TYPES):
        series.setdefault(etype, {})[bucket] = n
    calls: dict[str, dict[int, int]] = {}
    for bucket, status, n in store.call_density(key, width):
        calls.setdefault(status, {})[bucket] = n
    marks = [_mark(e) for e in store.events_of_types(key, OUTLINE_MARK_TYPES, newest=MARKS_MAX)]
    from continuation.recovery.interrupted import runtime_verdict

    return {
        "thread": row,
        "threads": threads(engine),
        "runtime": runtime_verdict(thread),
        "counts": store.input_counts(key),
        "turns": len(turns),
        "calls": {s: sum(v.values()) for s, v in calls.items()},
        "pages": [{"lo": lo, "hi": (starts[i + 1] - 1 if i + 1 < len(starts) else last_seq)}
                  for i, lo in enumerate(starts)],
        "strip": {"width": width, "buckets": -(-last_seq // width) if last_seq else 0,
                  "events": {t: sorted(v.items()) for t, v in series.items()},
                  "calls": {s: sorted(v.items()) for s, v in calls.items()}},
        "marks": marks,
        "checkpoints": [_checkpoint(r) for r in store.checkpoint_outline(key)],
    }


def _checkpoint(r: dict) -> dict:
    from continuation.host import jsontext

    ws = jsontext.loads(r["workspace"]) if r.get("workspace") else None
    return {"checkpoint_id": r["checkpoint_id"], "generation": r["generation"], "seq": r["seq"],
            "reason": r["reason"], "created_at": r["created_at"],
            "pruned": not r.get("capsule_bytes"),
            "snapshot": bool(ws and ws.get("snapshot_ref") and not ws.get("error"))}


def _mark(e: dict) -> dict:
    """An event drawn on the timeline: its seq, type, time and what the page says of it."""
    d = e.get("data") or {}
    label = {
        ev.BOUNDARY: lambda: " ".join(str(x) for x in (d.get("kind"), d.get("trigger")) if x),
        ev.CRASH_DETECTED: lambda: d.get("reason") or "",
        ev.ROLLED_BACK: lambda: f"to event {d.get('to_seq')}"
                                + (f" ({d.get('checkpoint_id')})" if d.get("checkpoint_id") else ""),
        "workspace_restored": lambda: "files restored"
                                      + (f" to {d.get('checkpoint_id')}" if d.get("checkpoint_id") else ""),
        ev.CHECKPOINT_COMMITTED: lambda: f"{d.get('checkpoint_id')} ({d.get('reason') or ''})",
        ev.RECONCILED: lambda: f"{d.get('call_id')}: {d.get('decision')}",
        ev.INPUT_SUPERSEDED: lambda: f"{d.get('input_id')}",
        ev.INPUT_REOPENED: lambda: f"{d.get('input_id')}",
        ev.CONTEXT_DELIVERED: lambda: f"generation {d.get('generation')} via {d.get('via')}",
        ev.PLAN_UPDATED: lambda: "plan updated",
    }.get(e["type"], lambda: "")()
    out = {"seq": e["seq"], "type": e["type"], "ts": e.get("ts"),
           "label": shown(label, 300)["text"]}
    if e["type"] == ev.ROLLED_BACK:
        out["to_seq"] = d.get("to_seq")
    if e["type"] == ev.CHECKPOINT_COMMITTED:
        out["checkpoint_id"] = d.get("checkpoint_id")
    if e["type"] == ev.BOUNDARY:
        out["kind"] = d.get("kind")
    return out


# -- one page -------------------------------------------------------------------------------
def window(thread, lo: int, hi: int, turns: list[tuple] | None = None) -> dict:
    """The turns starting in ``lo``..``hi`` with their inputs, calls and claims, and the marks
    between them; a turn that started on an earlier page and goes on here is named too.
    ``turns``: the thread's ``turn_outline`` when the caller read it already."""
    store, key = thread.store, thread.key
    turns = [t for t in (store.turn_outline(key) if turns is None else turns)
             if lo <= t[2] <= hi or (t[2] < lo and (t[3] is None or t[3] >= lo))]
    inputs = store.inputs_admitted_between(key, lo, hi)
    calls = store.calls_started_between(key, lo, hi)
    claims = store.events_of_types(key, (ev.ASSISTANT_CLAIM,), after=lo - 1, upto=hi)
    marks = [_mark(e) for e in store.events_of_types(key, MARK_TYPES, after=lo - 1, upto=hi)]
    trails = input_trails(store, key, inputs)
    last_seq = store.last_seq(key)
    times = store.event_times(key, [s for t in turns for s in (t[2], t[3] or 0) if s]
                              + [lo, min(hi, last_seq)])
    return {
        "lo": lo, "hi": hi, "last_seq": last_seq,
        "first_ts": times.get(lo), "last_ts": times.get(min(hi, last_seq)),
        "turns": [{"turn_id": t, "status": s, "started_seq": a, "ended_seq": b,
                   "started_ts": times.get(a), "ended_ts": times.get(b) if b else None,
                   "earlier": a < lo} for t, s, a, b in turns],
        "inputs": [_input(r, trails.get(r.input_id)) for r in inputs],
        "calls": [_call(c) for c in calls],
        "claims": [{"seq": e["seq"], "turn_id": (e["data"] or {}).get("turn_id"),
                    "text": shown((e["data"] or {}).get("text"), TEXT_MAX)} for e in claims],
        "marks": marks,
    }


def input_trails(store, key: str, inputs) -> dict[str, dict]:
    """Each input's states over time, oldest first: ``{"steps": [[seq, state, trigger]],
    "partial": the earliest transitions are not kept}``, walking back through the rows as
    they were before each transition (one read per round, rounds = the longest trail)."""
    trails = {r.input_id: {"steps": [], "partial": False} for r in inputs}
    reach = store.versions_reach(key)
    todo = {r.input_id: r.to_row() for r in inputs}
    for _ in range(64):  # a trail longer than this is cut (marked partial)
        if not todo:
            break
        for input_id, row in list(todo.items()):
            trails[input_id]["steps"].append([row["updated_seq"], row["state"], row["last_trigger"]])
            if row["updated_seq"] <= row["admitted_seq"]:
                del todo[input_id]
            elif row["updated_seq"] < reach:
                trails[input_id]["partial"] = True
                del todo[input_id]
        wanted = {row["updated_seq"]: None for row in todo.values()}
        found: dict[tuple[int, str], dict | None] = {
            (s, k): d for s, k, d in store.input_versions(key, wanted)}
        for input_id, row in list(todo.items()):
            before = found.get((row["updated_seq"], input_id))
            if before is None or int(before.get("updated_seq") or 0) >= row["updated_seq"]:
                trails[input_id]["partial"] = True
                del todo[input_id]
            else:
                todo[input_id] = before
    for input_id in todo:
        trails[input_id]["partial"] = True
    for t in trails.values():
        t["steps"].reverse()
    return trails


def _input(r, trail) -> dict:
    return {"input_id": r.input_id, "state": r.state, "turn_id": r.turn_id, "queued": r.queued,
            "admitted_seq": r.admitted_seq, "updated_seq": r.updated_seq,
            "last_trigger": r.last_trigger, "unknown_calls": list(r.unknown_calls),
            "awaits_delivery": r.awaits_delivery, "text": shown(r.text, TEXT_MAX),
            "trail": trail or {"steps": [], "partial": True}}


def _call(c) -> dict:
    from continuation.host import jsontext

    outcome = c.outcome or {}
    args = c.args if isinstance(c.args, dict) else {"args": c.args}
    command = args.get("command") if isinstance(args.get("command"), str) else None
    text = command if command is not None else jsontext.dumps(args, ensure_ascii=False)
    output = outcome.get("output") or outcome.get("output_excerpt") or outcome.get("error")
    return {"call_id": c.runtime_call_id or c.call_id, "turn_id": c.turn_id, "tool": c.tool,
            "status": c.status, "started_seq": c.started_seq, "finished_seq": c.finished_seq,
            "exit_code": outcome.get("exit_code"), "decision": c.decision,
            "args": shown(text, ARGS_MAX),
            "output": shown(output if isinstance(output, str) else
                            (jsontext.dumps(output, ensure_ascii=False) if output else ""),
                            OUTPUT_MAX)}


# -- one checkpoint ------------------------------------------------------------------------------
def checkpoint_detail(engine, thread, checkpoint_id: str) -> dict:
    """The capsule as the model received it (the committed rendering, checked against its
    hash), what ``rewind --conversation`` to it reaches (counted in full, the first
    ``PREVIEW_LIST`` listed) and the exact commands."""
    from continuation.boundary import checkpoints as cps
    from continuation.rewind.operation import (
        STAYING_CALL_STATUSES,
        STAYING_INPUT_STATES,
        aligned_position,
    )

    try:
        cp = cps.find_checkpoint(engine, checkpoint_id)
    except cps.CheckpointError:
        cp = None
    if cp is None or cp.checkpoint_id != checkpoint_id or cp.thread_key != thread.key:
        raise LookupError(f"thread {thread.key} has no checkpoint {checkpoint_id!r}")
    problem = cps.verify(cp)
    if cp.pruned:
        capsule, problem = "", cps.pruned_message(cp)
    elif problem is None:
        capsule = cps.LoadedCapsule(cp, None, []).rendered()
    else:
        capsule = ""
    to_seq = aligned_position(thread, cp)
    reach = thread.store.rewind_reach(thread.key, to_seq, STAYING_INPUT_STATES,
                                      STAYING_CALL_STATUSES, PREVIEW_LIST)
    base = ["continuation", "rewind", cp.checkpoint_id, "--thread", thread.key]
    modes = ["conversation"] + (["files", "both"] if (cp.workspace or {}).get("snapshot_ref")
                                and not (cp.workspace or {}).get("error") else [])
    return {
        "checkpoint_id": cp.checkpoint_id, "generation": cp.generation, "seq": cp.seq,
        "reason": cp.reason, "created_at": cp.created_at, "sha256": cp.sha256,
        "problem": problem, "capsule": shown(capsule, CAPSULE_MAX),
        "workspace": _workspace(cp.workspace),
        "rewind": {
            "to_seq": to_seq, "last_seq": thread.store.last_seq(thread.key),
            "inputs": {"counts": reach["input_counts"],
                       "first": [{"input_id": r.input_id, "state": r.state,
                                  "text": shown(r.text, 200)} for r in reach["inputs"]]},
            "calls": {"counts": reach["call_counts"],
                      "first": [{"call_id": c.runtime_call_id or c.call_id, "tool": c.tool,
                                 "status": c.status} for c in reach["calls"]]},
            "commands": {m: shlex.join(base + [f"--{m}"]) for m in modes},
            "dry_run": shlex.join(base + [f"--{modes[-1]}", "--dry-run"]),
        },
    }


def _workspace(ws: dict | None) -> dict | None:
    if not ws:
        return None
    dirty = ws.get("dirty") if isinstance(ws.get("dirty"), dict) else {}
    return {"root": ws.get("root"), "kind": ws.get("kind"), "head": ws.get("head"),
            "branch": ws.get("branch"), "snapshot_ref": ws.get("snapshot_ref"),
            "error": ws.get("error"), "dirty": dirty.get("count", len(dirty.get("paths") or []))}
