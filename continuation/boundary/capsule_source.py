"""Fill the capsule builder's input from a thread's store (a boundary-time read, never the hot path).

Pointers name where a full text can be read back (``continuation source POINTER``):
``event:<thread_key>:<seq>`` for the text of an event (input, claim, tool call, outcome).
"""
from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Iterable

from capsule.notice import notice_data

from statemachine.lifecycle import ACTIONABLE
from statemachine.reducer import resolve_call

from continuation.session.engine import Thread
from continuation.boundary import work_pages
from continuation.boundary.prefix_counts import PrefixCounts
from continuation.session import guard_notes
from continuation.session.rewind_notes import notices_of
from continuation.session.branch import ROLLED_BACK, in_ranges, live_ranges

#: runtime facts worth carrying into the next context (the rest stay in the log)
FACT_TYPES = (
    "turn_completed", "turn_aborted", "crash_detected", "boundary", "reconciled", "rolled_back",
    "tool_finished", "context_delivered", "session_started", "session_ended",
)
MAX_FACTS = 40
MAX_CLAIMS = 20
#: finished tool calls carried from turns with no open input (the newest); unsettled ones, and
#: every finished call of a turn that has an open input (the work ledger), are always carried
MAX_FINISHED_CALLS = 100
#: historical inputs (handled, superseded, rolled back) read at a boundary: the newest ones; the
#: older ones are counted in a "(not gathered)" cut (a capsule keeps a few dozen rows anyway)
MAX_HISTORICAL_INPUTS = 200
_HISTORICAL = ("handled", "rolled_back", "superseded")
FINISHED = ("ok", "error", "reconciled")
CURSOR_TYPES = ("tool_finished", "turn_completed", "turn_aborted", "reconciled")


def pointer(thread_key: str, seq: int | None) -> str:
    return f"event:{thread_key}:{seq}" if seq else ""


def _when(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, timezone.utc) if ts else None


def _tool_status(call) -> str:
    if call.status == "reconciled":
        return "ok" if call.decision in ("applied", "retry_safe") else "error"
    if call.status in ("in_flight", "ok", "error", "unknown"):
        return call.status
    return "unknown"


def _verdict(data: dict, call) -> str:
    """A finished call's status and exit code, from its record when there is one: the record is
    the one source of truth (a Codex exit code is learnt after the tool_finished fact, from the
    rollout), so the facts, the cursor and the call list never disagree."""
    if call is not None and call.finished_seq is not None and call.status != "rolled_back":
        status, code = _tool_status(call), (call.outcome or {}).get("exit_code")
    else:
        status, code = data.get("status", "ok"), data.get("exit_code")
    return f"{status}" + (f" exit {code}" if code is not None else "")


def _fact_text(event: dict, call=None) -> str:
    d = event["data"]
    t = event["type"]
    if t in ("turn_completed", "turn_aborted"):
        return f"turn {d.get('turn_id')} {'completed' if t == 'turn_completed' else 'aborted'}" + (
            f" ({d['reason']})" if d.get("reason") else "")
    if t == "tool_finished":
        name = call.call_id if call is not None else d.get("call_id")
        return f"tool call {name} finished: {_verdict(d, call)}"
    if t == "reconciled":
        return f"tool call {d.get('call_id')} reconciled by the user: {d.get('decision')}"
    if t == "boundary":
        return f"context boundary: {d.get('kind')} ({d.get('trigger') or 'n/a'})"
    if t == "rolled_back":
        return f"rewound to event {d.get('to_seq')}" + (f": {d['reason']}" if d.get("reason") else "")
    if t == "crash_detected":
        return f"session ended without a clean end: {d.get('reason')}"
    if t == "context_delivered":
        return f"context generation {d.get('generation')} delivered via {d.get('via')}"
    if t == "session_started":
        return f"session started ({d.get('source')})"
    if t == "session_ended":
        return f"session ended ({d.get('reason')})"
    return t


def gather(thread: Thread, *, generation: int, reason: str, upto_seq: int | None = None,
           workspace: dict | None = None, transcript: dict | None = None,
           notices: Iterable = (), now: datetime | None = None):
    """Everything the builder needs, as of the thread's current state: a validated
    :class:`capsule.source.CapsuleSource` (:func:`gather_plain`'s data)."""
    from capsule.source import CapsuleSource

    return CapsuleSource.model_validate(
        gather_plain(thread, generation=generation, reason=reason, upto_seq=upto_seq,
                     workspace=workspace, transcript=transcript, notices=notices, now=now))


def gather_plain(thread: Thread, *, generation: int, reason: str, upto_seq: int | None = None,
                 workspace: dict | None = None, transcript: dict | None = None,
                 notices: Iterable = (), now: datetime | None = None) -> dict:
    """What :func:`gather` validates: the fields of ``CapsuleSource`` as plain data (dicts,
    lists, strings, numbers, datetimes), read without importing pydantic, so that a boundary's
    process can gather while a worker process imports the capsule stack
    (``continuation.boundary.capsule_worker``). ``notices``: ``capsule.notice.Notice`` objects,
    ``SourceNotice`` models or dicts."""
    notices = [notice_data(n) for n in notices]
    row = thread.row
    key = thread.key
    store = thread.store
    inputs, older_inputs, input_counts = _bounded_inputs(store, key)
    # every unsettled call, every finished call of an open input's turn (the work ledger), and
    # only the newest other finished ones; indexed reads, not the whole history of a long thread
    view = store.state_view(key)
    open_turns = {r.turn_id for r in inputs if r.state in ACTIONABLE and r.turn_id}
    by_start = {c.started_seq: c for c in view.newest_calls(MAX_FINISHED_CALLS, FINISHED)}
    open_calls = view.calls_of_turns(sorted(open_turns), FINISHED)
    by_start.update((c.started_seq, c) for c in open_calls)
    by_start.update((c.started_seq, c) for c in view.calls_in_statuses(("in_flight", "unknown")))
    calls = [by_start[k] for k in sorted(by_start)]
    last_seq = upto_seq if upto_seq is not None else int(row["last_seq"])
    # Targeted reads (indexed by type), never a scan of the whole log. After a rewind
    # only the current branch feeds facts, claims and cursor: its seq ranges come from the
    # rollback facts alone; the recovery summary of a recent rewind is rebuilt from the part of
    # the log after the rewound-to position, until a turn completes after the rewind.
    rollbacks = store.events_of_types(key, [ROLLED_BACK], upto=upto_seq)
    ranges = live_ranges(rollbacks, last_seq) if rollbacks else None
    titles = {m["title"] for m in notices}
    rewind_notices = [notice_data(n) for n in notices_of(store, key, upto=upto_seq)
                      if n.title not in titles]
    guard = guard_notes.status(store, key, upto=upto_seq)
    if guard is not None:
        failing = guard_notes.capsule_notice(store, key, upto=upto_seq)
        if failing is not None and failing.title not in titles:
            rewind_notices.append(notice_data(failing))
    facts_src = _newest_live(store, key, FACT_TYPES, upto_seq, MAX_FACTS, ranges)
    # a few: a reconcile that leaves the call's work to do is no completed step (see _cursor)
    cursor_src = _newest_live(store, key, CURSOR_TYPES, upto_seq, 4, ranges)
    background_src = [e for e in store.events_of_types(key, ["background_task"], upto=upto_seq)
                      if ranges is None or in_ranges(e["seq"], ranges)]
    counts = PrefixCounts(thread.engine.home, key)
    claims_src, older_claims = _bounded_claims(store, key, upto_seq, ranges, counts)
    meta = thread.meta()
    not_gathered = _not_gathered(store, key, calls, facts_src, older_claims, upto_seq, ranges,
                                 counts)
    counts.save()
    not_gathered += older_inputs

    src_inputs = [
        dict(id=r.input_id, text=r.text, state=r.state, turn_id=r.turn_id,
             admitted_seq=r.admitted_seq, queued=r.state == "queued",
             attachments=[str(a.get("ref", a)) if isinstance(a, dict) else str(a)
                          for a in r.attachments],
             pointer=pointer(key, r.admitted_seq))
        for r in inputs
    ]
    # a call reconciled as not applied or retry-safe is work still to do: never finished work
    # (the decision notice tells the model); only its record and the notice name it
    to_do = [c.call_id for c in calls if c.status == "reconciled" and c.decision != "applied"]
    calls = [c for c in calls if c.status != "reconciled" or c.decision == "applied"]
    src_calls = [
        dict(call_id=c.call_id, tool=c.tool or "?", args=c.args or {},
             status=_tool_status(c), started_at=_when(c.started_at), turn_id=c.turn_id,
             exit_code=(c.outcome or {}).get("exit_code"),
             pointer=pointer(key, c.started_seq))
        for c in calls
    ]
    # the record each tool_finished fact is about (a reused runtime id names one per turn)
    known = {e["seq"]: resolve_call(view, e["data"]["call_id"], e["data"].get("turn_id"))
             for e in [*facts_src, *cursor_src]
             if e["type"] in ("tool_finished", "reconciled") and e["data"].get("call_id")}
    facts = [dict(seq=e["seq"], kind=e["type"], text=_fact_text(e, known.get(e["seq"])),
                  pointer=pointer(key, e["seq"]))
             for e in facts_src]
    checks = _claim_checks(view, claims_src)
    delivered = store.events_of_types(key, ["context_delivered"], upto=upto_seq, newest=1)
    supersedes = delivered[-1]["data"].get("generation") if delivered else None
    claims = [dict(turn_id=c["turn_id"], text=c["text"], seq=c["seq"],
                   pointer=pointer(key, c["seq"]), checks=note)
              for c, note in zip(claims_src, checks)]
    attachments = [dict(ref=str(a.get("ref", a)) if isinstance(a, dict) else str(a),
                        kind=_text_or_none(a.get("kind")) if isinstance(a, dict) else None,
                        input_id=r.input_id, pointer=pointer(key, r.admitted_seq))
                   for r in inputs if r.state not in ("rolled_back",) for a in r.attachments]
    settings = {k: _text_or_none(v) for k, v in (meta.get("settings") or {}).items()}
    plan = meta.get("plan_updated")
    return dict(
        thread=dict(runtime=row["runtime"], session_id=row["session_id"], thread_id=key),
        generation=generation,
        reason=reason,
        created_at=now or datetime.now(timezone.utc),
        inputs=src_inputs,
        tool_calls=src_calls,
        facts=facts,
        claims=claims,
        cursor=_cursor(key, cursor_src, known),
        workspace=source_workspace(row, workspace),
        permissions=dict(permission_mode=settings.get("permission_mode"),
                         sandbox=settings.get("sandbox"),
                         approval=settings.get("approval")),
        model_settings=dict(model=settings.get("model"),
                            provider=settings.get("provider")),
        attachments=attachments,
        plan=_plan(key, plan) if plan else None,
        background=[dict(description=f"{b.get('tool')} {b.get('args')}",
                         handle=b["handle"], handle_kind="shell", seq=b.get("seq"),
                         pointer=pointer(key, b.get("seq")))
                    for b in _background(background_src)],
        pointers=dict(event_seq_first=1 if last_seq else None,
                      event_seq_last=last_seq or None,
                      **_transcript_pointer(store, key, transcript, upto_seq)),
        notices=[*notices, *rewind_notices],
        guard=_guard_source(guard),
        supersedes_generation=supersedes if isinstance(supersedes, int) else None,
        not_gathered=not_gathered,
        input_counts=input_counts,
        calls_to_do=to_do,
        work_record=finish_work_record(thread, generation, work_pages.gather(
            store, key, inputs, read=(open_turns, open_calls))),
    )


_GUARD_FIELDS = ("command", "verdict", "action", "exit_code", "at_seq", "failures_in_row",
                 "good_checkpoint", "good_seq", "rewinds_used", "rewinds_budget", "runs")


def _guard_source(status: dict | None) -> dict | None:
    """``capsule.source.SourceGuard``'s fields of the loop's status (a value of the wrong
    type, from a damaged or foreign fact, is left out rather than failing the boundary)."""
    if status is None:
        return None
    out = {}
    for name in _GUARD_FIELDS:
        value = status.get(name)
        if name in ("command", "verdict", "action", "good_checkpoint"):
            out[name] = value if isinstance(value, str) else None
        elif isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def finish_work_record(thread: Thread, generation: int, gathered: dict) -> dict | None:
    """Write the work record's pages for ``generation`` (``continuation.boundary.work_pages``) and
    return the capsule's index of them (None: no finished call). A page that cannot be
    written leaves the capsule without the index rather than failing the boundary: the ledger
    and ``continuation source`` still hold the calls."""
    sealer = thread.engine.store.codec.sealer
    pages, index = work_pages.build(thread.key, generation, gathered)
    if index is None:
        return None
    try:
        return work_pages.write(thread.engine.home, thread.key, generation, pages, index, sealer=sealer)
    except OSError:
        return None


def _text_or_none(value) -> str | None:
    """A recorded value for a capsule's text field: a runtime's payload may hold a number or
    anything else where a name is expected (``"model": 5``), and one such value must not fail
    the whole capsule. Scalars become their text; anything else is left out."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):  # bool included
        return str(value)
    return None


def source_workspace(row: dict, workspace: dict | None) -> dict | None:
    """The capsule's workspace: the snapshot's description, else the thread's root alone."""
    return workspace or ({"root": row["workspace_root"]} if row["workspace_root"] else None)


def _newest_live(store, key: str, types, upto: int | None, n: int,
                 ranges: list[tuple[int, int]] | None) -> list[dict]:
    """The newest ``n`` events of ``types`` on the current branch (``ranges``: its seq ranges,
    newest first; None: the whole log is the branch), in seq order."""
    if ranges is None:
        return store.events_of_types(key, types, upto=upto, newest=n)
    found: list[dict] = []
    for lo, hi in ranges:
        if len(found) >= n:
            break
        hi = hi if upto is None else min(hi, upto)
        if hi >= lo:
            found = store.events_of_types(key, types, after=lo - 1, upto=hi,
                                          newest=n - len(found)) + found
    return found


def _bounded_inputs(store, key: str):
    """(inputs, older, counts): every input not yet historical and the newest
    ``MAX_HISTORICAL_INPUTS`` historical ones, in admission order (the only ones decoded); the
    cut counting the older historical ones (none of them is read); and, with that cut, how many
    inputs are in each state (``CapsuleSource.input_counts``), else None."""
    from statemachine.lifecycle import STATES
    from statemachine.records import InputRecord

    still_open = [s for s in STATES if s not in _HISTORICAL]  # few rows: read by the state index
    rows, newest = store.open_and_newest_inputs(key, still_open, _HISTORICAL,
                                                MAX_HISTORICAL_INPUTS)
    inputs = sorted((InputRecord.from_row(d) for d in [*rows, *(n[0] for n in newest)]),
                    key=lambda r: r.admitted_seq)
    if len(newest) < MAX_HISTORICAL_INPUTS:
        return inputs, [], None
    by_state = store.state_view(key).input_totals()
    total = [sum(by_state.get(s, (0, 0))[i] for s in _HISTORICAL) for i in (0, 1)]
    read = (len(newest), sum(n[2] for n in newest))
    below = min(n[1] for n in newest)  # the older ones: every historical input before these
    older = _cut("inputs[handled,rolled_back,superseded](not gathered)", key,
                 *store.unread_inputs(key, _HISTORICAL, total, read, below))
    return inputs, older, {s: n for s, (n, _) in by_state.items()} if older else None


def _claim_checks(view, claims_src: list[dict]) -> list[list[str]]:
    """What each claim's turn recorded against it (``capsule.claim_check``): every call of the
    claims' turns is read (a few turns, one indexed statement)."""
    from capsule.claim_check import TurnCall, check_claims, claimed_kinds

    turns = sorted({c["turn_id"] for c in claims_src if c["turn_id"] and claimed_kinds(c["text"])})
    by_turn: dict[str, list] = {}
    for call in view.calls_of_turns(turns, ("in_flight", "ok", "error", "unknown", "reconciled")):
        by_turn.setdefault(call.turn_id, []).append(
            TurnCall(call.args or {}, _tool_status(call), (call.outcome or {}).get("exit_code")))
    return check_claims(((c["text"], c["turn_id"]) for c in claims_src), by_turn)


def _bounded_claims(store, key: str, upto: int | None, ranges,
                    counts: PrefixCounts) -> tuple[list[dict], list]:
    """The newest ``MAX_CLAIMS`` claims on the branch (texts read), and the cut counting the
    older ones (an aggregate: their texts are not read)."""
    claims = store.newest_claims(key, upto, ranges, MAX_CLAIMS)
    older: list = []
    if len(claims) >= MAX_CLAIMS:
        older = _count_older(store, counts, ranges, "assistant_claims(not gathered)", key,
                             "claims", claims[0]["seq"], upto=upto)
    return claims, older


def _not_gathered(store, key: str, calls, facts_src: list[dict], older_claims: list,
                  upto_seq: int | None,
                  ranges: list[tuple[int, int]] | None,
                  counts: PrefixCounts) -> list[dict]:
    """Count what the bounds above leave unread (older finished calls, facts, claims), so the
    capsule records every dropped item in a cut: counted by the database, no unread row (not
    even a size or a seq) is brought into Python, so a boundary stays flat in thread length."""
    out = _cut("tool_calls[ok,error](not gathered)", key,
               *store.unread_finished_calls(key, FINISHED, sorted({c.call_id for c in calls}),
                                            upto_seq))
    if len(facts_src) >= MAX_FACTS:
        out += _count_older(store, counts, ranges, "runtime_facts(not gathered)", key,
                            "events", facts_src[0]["seq"], types=FACT_TYPES)
    return out + older_claims


def _count_older(store, counts: PrefixCounts, ranges, field: str, key: str, selection: str,
                 before: int, *, upto: int | None = None, types=()) -> list[dict]:
    """The "(not gathered)" cut of the rows of ``selection`` (``claims``, or ``events`` of
    ``types``) below ``before`` on the current branch (``ranges``): extended from the counts
    kept at earlier boundaries (``continuation.boundary.prefix_counts``)."""
    def totals(lo: int, hi: int):
        return store.seq_size_totals(selection, key, lo, hi, upto=upto, types=types)

    signature = [selection, key, upto, list(types)]
    return _cut(field, key, *counts.count(totals, field, signature, before, ranges))


def cut_pointers_sha256(field: str, key: str, items: int, first: int | None,
                        last: int | None) -> str:
    """What a "(not gathered)" cut's ``pointers_sha256`` hashes: one line naming the selection,
    ``<field> <first pointer>..<last pointer> <items>``. The store is append-only, so the field
    (which items), the seq range and the count identify the unread items without reading them
    (hashing each item's pointer meant bringing every seq of a long thread into Python)."""
    line = f"{field} {pointer(key, first)}..{pointer(key, last)} {items}"
    return hashlib.sha256(line.encode()).hexdigest()


def _cut(field: str, key: str, items: int, size: int, first: int | None,
         last: int | None) -> list[dict]:
    if not items:
        return []
    return [dict(
        field=field, items=items, original_bytes=size,
        pointers_sha256=cut_pointers_sha256(field, key, items, first, last),
        pointer=pointer(key, first), last_pointer=pointer(key, last) if items > 1 else None)]


#: the event an import closes with (continuation.importers.apply.CURSOR_EVENT)
IMPORT_CURSOR_EVENT = "transcript_imported"


def _transcript_pointer(store, key: str, given: dict | None, upto_seq: int | None) -> dict:
    """The transcript the capsule was built from: the one the boundary hook read, else where the
    latest import of the thread stopped (path, byte offset, sha256 of the bytes before it)."""
    if given and given.get("transcript_offset") is not None:
        return given
    last = store.events_of_types(key, [IMPORT_CURSOR_EVENT], upto=upto_seq, newest=1)
    if not last:
        return given or {}
    d = last[-1]["data"]
    if given and given.get("transcript_path") and given["transcript_path"] != d.get("path"):
        return given  # the boundary names another file: its path, unread, stands
    return {"transcript_path": d.get("path"), "transcript_offset": d.get("offset"),
            "transcript_prefix_sha256": d.get("prefix_sha256")}


def _cursor(key: str, last: list[dict], calls: dict) -> dict:
    """The last completed step (a finished tool call or an ended turn) and its outcome. A call
    reconciled as not applied or retry-safe did not complete: the cursor stays before it."""
    last = [e for e in last if e["type"] != "reconciled" or e["data"].get("decision") == "applied"]
    if not last:
        return dict()
    e = last[-1]
    d = e["data"]
    if e["type"] in ("tool_finished", "reconciled"):
        call = calls.get(e["seq"])
        args = (call.args if call is not None else None) or {}
        what = args.get("command") or args.get("file_path") or args.get("path") or ""
        tool = (call.tool if call is not None else "") or d.get("tool") or "tool"
        step = f"{tool} {what}".strip()
        if e["type"] == "tool_finished":
            outcome = _verdict(d, call).replace(" exit", ", exit")
        else:  # the user settled a call the runtime left without an outcome
            outcome = f"reconciled by the user: {str(d.get('decision')).replace('_', ' ')}"
    else:
        step = f"turn {d.get('turn_id')} {e['type'].split('_')[1]}"
        outcome = e["type"]
    return dict(last_completed_step=step, last_runtime_outcome=outcome,
                pointer=pointer(key, e["seq"]))


def _plan(key: str, plan: dict) -> dict:
    items = []
    for item in plan.get("items") or []:
        if isinstance(item, dict):
            text = item.get("content") or item.get("step") or item.get("text") or ""
            items.append(dict(text=str(text), status=str(item.get("status") or "pending")))
    return dict(tool=plan.get("tool"), seq=plan.get("seq"), items=items,
                pointer=pointer(key, plan.get("seq")))


def _background(events: list[dict]) -> list[dict]:
    out: dict[str, dict] = {}
    for e in events:
        if e["type"] == "background_task":
            out[e["data"]["handle"]] = {**e["data"], "seq": e["seq"]}
    return list(out.values())
