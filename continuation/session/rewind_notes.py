"""The informed-retry summary: what a rewind undid, rebuilt from the log at every checkpoint.

After a rewind the next context must say what was tried after the checkpoint (inputs, tool calls
with their runtime outcomes, failing checks), the user's stated reason, and that the rewound
work is undone and must not be assumed. The notices are rebuilt from the log (never stored), so
every checkpoint committed after a rewind carries them, until a turn completes after it: by then
the retry has happened and the model has seen the summary.

Anchors: the newest ``rolled_back`` fact (conversation or both), or the newest
``workspace_restored`` fact (files only: the conversation stays, the files changed under it).

The discarded branch does not change once its rollback is appended, so the rewind stores its
digest in the ``rolled_back`` fact (``summary``: the first items of each list, their counts,
and every call of the branch still without an outcome, which a late outcome may settle). A
checkpoint then reads the events after the rollback only, however long the branch: the whole
branch was read and decoded at every checkpoint until a turn completed (313 ms against 21 for
the capsule build after a rewind 50,000 events back). The notices are the same either way:
both go through :func:`branch_digest` and :func:`notices_from_digest`; a rollback without a
digest that fits (older versions, events appended while it was computed) is read in full.
"""
from __future__ import annotations

import json

from capsule.notice import Notice
from statemachine.reducer import alias_of

from continuation.host.own_command import source_command
from continuation.session.branch import WORKSPACE_RESTORED, discarded_branch

ANCHOR_TYPES = ("rolled_back", WORKSPACE_RESTORED)
TITLE_CORE = "rewind: the work after the checkpoint was undone"
TITLE_TRIED = "rewind: what was tried after the checkpoint (undone)"
TITLE_CLAIMS = "rewind: claims from the discarded branch"
TITLE_FILES = "rewind: workspace files restored to a checkpoint"
PRIORITY_CORE, PRIORITY_TRIED, PRIORITY_CLAIMS = 90, 70, 55
MAX_ITEMS = 12
TEXT_MAX = 200


def _clip(text, limit: int = TEXT_MAX) -> str:
    text = " ".join(str(text if text is not None else "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _what(call: dict) -> str:
    args = call.get("args") or {}
    target = next((args[k] for k in ("command", "cmd", "file_path", "path", "notebook_path",
                                     "pattern", "url", "query") if isinstance(args.get(k), str)), None)
    if target is None and args:
        target = json.dumps(args, ensure_ascii=False, sort_keys=True)
    return f"{call.get('tool') or 'tool'} `{_clip(target or '', 120)}`"


def _first_line(output) -> str:
    if not isinstance(output, str):
        return ""
    if output.startswith("{"):  # Claude Code's tool_response, kept as JSON by the hook
        try:
            data = json.loads(output)
        except ValueError:
            data = None
        if isinstance(data, dict):
            output = "\n".join(str(data[k]) for k in ("stderr", "error", "stdout", "output")
                                if isinstance(data.get(k), str) and data[k].strip())
    for line in output.splitlines():
        if line.strip():
            return _clip(line, 120)
    return ""


def _outcome(finish: dict | None, decision: dict | None) -> tuple[str, bool, bool]:
    """(text, failed, unknown) of one call."""
    if decision is not None:
        return f"no outcome; the user reconciled it as {decision.get('decision')}", False, False
    if finish is None:
        return "NO OUTCOME RECORDED: unknown whether it took effect; verify before repeating", False, True
    status = finish.get("status") or "ok"
    code = finish.get("exit_code")
    failed = status == "error" or (isinstance(code, int) and code != 0)
    text = status + (f", exit {code}" if code is not None else "")
    if status == "unknown":
        return f"{text}: unknown whether it took effect; verify before repeating", False, True
    if failed and _first_line(finish.get("output")):
        text += f": {_first_line(finish.get('output'))}"
    return text, failed, False


def _bounded(lines: list[str], more_hint: str, count: int | None = None) -> list[str]:
    """The first :data:`MAX_ITEMS` lines, and how many more there are. ``count``: the list's
    length when only its first lines are at hand (a digest's)."""
    count = len(lines) if count is None else count
    if count <= MAX_ITEMS:
        return lines[:count]
    return lines[:MAX_ITEMS] + [f"  ... and {count - MAX_ITEMS} more ({more_hint})"]


def recovery_notices(events: list[dict], *, thread_key: str,
                     digest: dict | None = None) -> list[Notice]:
    """The rewind notices the next context must carry, or [] when none is due. ``digest``: the
    branch's stored digest (:func:`stored_digest`); ``events`` then start at the anchor.

    Never raises: it runs inside every checkpoint commit, and a log this code cannot read
    must not cost the user the checkpoint; the notice then says where to look instead."""
    anchor = next((e for e in reversed(events) if e["type"] in ANCHOR_TYPES), None)
    if anchor is None:
        return []
    if _retry_completed(events, int(anchor["seq"])):
        return []  # the retry ran and completed a turn: the summary has done its job
    try:
        if anchor["type"] == WORKSPACE_RESTORED:
            return [files_notice(anchor, thread_key)]
        if digest is not None:
            return notices_from_digest(digest, anchor, events, thread_key)
        return conversation_notices(events, anchor, thread_key)
    except Exception as exc:  # an event shape from a newer or broken writer
        return [Notice(
            title=TITLE_CORE, priority=PRIORITY_CORE, pointer=f"event:{thread_key}:{anchor['seq']}",
            lines=[f"The user rewound this thread (event {anchor['seq']}); work after the "
                   "checkpoint was undone and must not be assumed. The detailed summary could "
                   f"not be built ({type(exc).__name__}); read it with `continuation events "
                   f"--thread {thread_key}`."])]


def notices_of(store, thread_key: str, *, upto: int | None = None,
               pending_anchor: dict | None = None, digest: dict | None = None) -> list[Notice]:
    """:func:`recovery_notices` from the part of the log they depend on, whatever its length:
    the newest anchor (through the type index; ``pending_anchor``: one about to be appended,
    for a preview), the events after it, and for a conversation rewind the events after the
    rewound-to position (extended down to the target of any rollback inside them, so the
    discarded branch is computed as over the whole log). ``digest``: the pending rollback's
    (:func:`digest_for_rollback`), computed already."""
    if pending_anchor is not None and digest is not None:
        return recovery_notices([pending_anchor], thread_key=thread_key, digest=digest)
    anchor = pending_anchor
    if anchor is None:
        found = store.events_of_types(thread_key, ANCHOR_TYPES, upto=upto, newest=1)
        if not found:
            return []
        anchor = found[0]
        digest = stored_digest(anchor)
        if digest is not None:  # the branch as the rewind summed it up: read what came after
            events = [anchor, *store.events(thread_key, after=int(anchor["seq"]), upto=upto)]
            return recovery_notices(events, thread_key=thread_key, digest=digest)
    return recovery_notices(_events_from_floor(store, thread_key, anchor, upto, pending_anchor),
                            thread_key=thread_key)


def _events_from_floor(store, thread_key: str, anchor: dict, upto: int | None,
                       pending_anchor: dict | None) -> list[dict]:
    """The events from the anchor's target on (extended down to the target of any rollback
    inside them, so the discarded branch is computed as over the whole log)."""
    anchor_seq = int(anchor["seq"])

    def floor(event: dict) -> int:
        if event["type"] != "rolled_back":
            return int(event["seq"]) - 1
        return min(int((event.get("data") or {}).get("to_seq", 0)), int(event["seq"]) - 1)

    low = floor(anchor)
    while True:
        events = store.events(thread_key, after=low, upto=upto)
        if pending_anchor is not None:
            events.append(pending_anchor)
        lower = min([low, *(floor(e) for e in events
                            if e["type"] == "rolled_back" and int(e["seq"]) < anchor_seq)])
        if lower >= low:
            return events
        low = lower


def digest_for_rollback(store, thread_key: str, pending_anchor: dict) -> dict | None:
    """The digest of the branch the ``rolled_back`` fact ``pending_anchor`` (about to be
    appended with seq ``last_seq + 1``) discards, to be stored in its data as ``summary``;
    None when it would not fit (see :data:`DIGEST_MAX_OPEN`)."""
    covered = int(pending_anchor["seq"]) - 1
    events = _events_from_floor(store, thread_key, pending_anchor, covered, pending_anchor)
    digest = branch_digest(discarded_branch(events, int(pending_anchor["seq"])))
    if len(digest["open"]) > DIGEST_MAX_OPEN:
        return None
    digest["upto"] = covered
    return digest


def _retry_completed(events: list[dict], anchor_seq: int) -> bool:
    """A turn that began after the rewind (it was given an input after it) has completed.

    The end of a turn the rewind discarded (its Stop arriving late from a session still
    running) does not count: the model has not retried anything yet."""
    new_turns: set = set()
    for e in events:
        if e["seq"] <= anchor_seq:
            continue
        d = e["data"] or {}
        if e["type"] in ("input_admitted", "input_delivered") and d.get("turn_id"):
            new_turns.add(d["turn_id"])
        elif e["type"] == "turn_completed" and d.get("turn_id") in new_turns:
            return True
    return False


def _files_lines(files: dict, more_hint: str) -> list[str]:
    counts = ", ".join(f"{len(files.get(k) or [])} {label}" for k, label in
                       (("restored", "modified"), ("recreated", "re-created"), ("deleted", "deleted")))
    lines = [f"Workspace files were restored to the checkpoint too ({counts})."]
    changed = [f"  - {p}" for k in ("restored", "recreated", "deleted") for p in files.get(k) or []]
    lines += _bounded(changed, more_hint)
    if files.get("safety_ref"):
        lines.append(f"The files as they were before the restore are kept in the safety snapshot "
                     f"{files['safety_ref']}.")
    return lines


def files_notice(anchor: dict, thread_key: str) -> Notice:
    d = anchor["data"]
    # the restore's own event names every file
    every_file = f"every file: {source_command()} event:{thread_key}:{anchor['seq']}"
    if d.get("undo_of"):
        first = (f"The user undid the files restore of event {d['undo_of']}: the workspace files "
                 "are back as they were just before that restore. The conversation did not "
                 "change: re-read a file before editing it.")
        lines = [first, _reason_line(d), *_files_lines(d, every_file)[1:]]
        return Notice(title=TITLE_FILES, lines=lines, priority=PRIORITY_CORE,
                      pointer=f"event:{thread_key}:{anchor['seq']}")
    who = ("The recovery loop (the project's check failed) automatically restored"
           if d.get("by") == "guard" else "The user restored")
    lines = [
        f"{who} the workspace files to checkpoint {d.get('checkpoint_id')} "
        f"(event {d.get('to_seq')}). The conversation was NOT rewound: edits made after that "
        "checkpoint are gone from disk even where earlier messages say they were made. Re-read a "
        "file before editing it, and do not assume any later change still exists.",
        _reason_line(d),
        *_files_lines(d, every_file)[1:],
    ]
    return Notice(title=TITLE_FILES, lines=lines, priority=PRIORITY_CORE,
                  pointer=f"event:{thread_key}:{anchor['seq']}")


def _reason_line(d: dict) -> str:
    reason = (d.get("reason") or "").strip()
    if d.get("by") == "guard":
        return f"Why: {_clip(reason, 600)}" if reason else "Why: the check failed."
    return f"The user's reason: {_clip(reason, 600)}" if reason else "The user gave no reason."


def _call_key(calls: dict, data: dict, *, starting: bool = False) -> str:
    """The call an event names, keyed like the reducer (statemachine.reducer.call_key): a
    runtime id reused in another turn is a call of its own, ``id@turn``."""
    call_id, turn = data.get("call_id"), data.get("turn_id")
    if turn and alias_of(call_id, turn) in calls:
        return alias_of(call_id, turn)
    known = calls.get(call_id)
    if known is None or not turn or known.get("turn_id") in (None, turn):
        return call_id
    return alias_of(call_id, turn) if starting else call_id


def conversation_notices(events: list[dict], anchor: dict, thread_key: str) -> list[Notice]:
    branch = discarded_branch(events, int(anchor["seq"]))
    return notices_from_digest(branch_digest(branch), anchor, events, thread_key)


DIGEST_VERSION = 1
#: calls without an outcome past which a rewind stores no digest (each is kept: a late outcome
#: may still settle it); such a branch is read in full at each checkpoint
DIGEST_MAX_OPEN = 500


def branch_digest(branch) -> dict:
    """What the notices need of a discarded branch, as plain data: the first
    :data:`MAX_ITEMS` lines of each list with its count, and every call without an outcome in
    the branch (a late outcome, after the rollback, settles it: :func:`notices_from_digest`)."""
    inputs, calls, order, turns, claims = [], {}, [], [], []
    finishes: dict[str, dict] = {}
    decisions: dict[str, dict] = {}
    for e in branch.events:
        t, data = e["type"], e["data"]
        if t == "input_admitted":
            inputs.append(data)
        elif t == "tool_started":
            key = _call_key(calls, data, starting=True)
            calls[key] = data
            order.append(key)
        elif t == "tool_finished":
            finishes.setdefault(_call_key(calls, data), data)
        elif t == "reconciled":
            decisions[data.get("call_id")] = data
        elif t == "turn_aborted":
            turns.append(f"  - turn {data.get('turn_id')} was aborted ({data.get('reason') or 'no reason'})")
        elif t == "crash_detected":
            turns.append(f"  - the session ended without a clean end ({data.get('reason')})")
        elif t == "assistant_claim":
            claims.append(data.get("text") or "")

    # [position, line] of the calls with an outcome in the branch; the others are kept whole
    lines, failing, unknown, open_calls = [], [], [], []
    for pos, call_id in enumerate(order):
        call, finish = calls[call_id], finishes.get(call_id)
        if finish is None:  # settled later by a late outcome, or not
            open_calls.append({"pos": pos, "key": call_id, "what": _what(call),
                               "decision": decisions.get(call_id)})
            continue
        text, failed, is_unknown = _outcome(finish, decisions.get(call_id))
        lines.append([pos, f"  - {_what(call)} -> {text}"])
        if failed or is_unknown:
            (failing if failed else unknown).append(lines[-1])
    pos = len(order)
    for call_id, finish in finishes.items():  # outcomes whose start we never saw
        if call_id not in calls:
            text, failed, _ = _outcome(finish, None)
            lines.append([pos, f"  - call {call_id} -> {text}"])
            if failed:
                failing.append(lines[-1])
            pos += 1
    return {
        "version": DIGEST_VERSION, "to_seq": branch.to_seq,
        "inputs": [_clip(i.get("text")) for i in inputs[:MAX_ITEMS]], "inputs_count": len(inputs),
        "lines": lines[:MAX_ITEMS], "lines_count": pos,
        "failing": failing[:MAX_ITEMS], "failing_count": len(failing),
        "unknown": unknown[:MAX_ITEMS], "unknown_count": len(unknown), "open": open_calls,
        "turns": turns[:MAX_ITEMS], "turns_count": len(turns),
        "claims": [_clip(c) for c in claims[:MAX_ITEMS]], "claims_count": len(claims),
    }


def stored_digest(anchor: dict) -> dict | None:
    """The digest a ``rolled_back`` fact carries, when it covers exactly the events before the
    fact and is of this version and shape; else None (read the branch instead)."""
    digest = (anchor.get("data") or {}).get("summary") if anchor.get("type") == "rolled_back" else None
    if not isinstance(digest, dict) or digest.get("version") != DIGEST_VERSION:
        return None
    if digest.get("upto") != int(anchor["seq"]) - 1 or not isinstance(digest.get("to_seq"), int):
        return None
    for name in ("inputs", "lines", "failing", "unknown", "open", "turns", "claims"):
        if not isinstance(digest.get(name), list):
            return None
    for name in ("inputs", "lines", "failing", "unknown", "turns", "claims"):
        if not isinstance(digest.get(f"{name}_count"), int):
            return None
    if not all(isinstance(o, dict) and isinstance(o.get("pos"), int) and isinstance(o.get("key"), str)
               and isinstance(o.get("what"), str) for o in digest["open"]):
        return None
    if not all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], int)
               and isinstance(item[1], str) for name in ("lines", "failing", "unknown")
               for item in digest[name]):
        return None
    return digest


def notices_from_digest(digest: dict, anchor: dict, events: list[dict], thread_key: str) -> list[Notice]:
    """The conversation notices of a branch's digest; ``events``: at least those after the
    anchor (the outcomes that arrived after the rollback)."""
    d = anchor["data"]
    to_seq = digest["to_seq"]
    pointer = f"event:{thread_key}:{anchor['seq']}"
    hint = f"continuation events --thread {thread_key} --after {to_seq}"

    # an outcome logged after the rollback names a call of the branch still open (the store
    # keeps no second outcome of a call): its key is the open call's alias, if it has one
    open_keys = {o["key"] for o in digest["open"]}
    late: dict[str, dict] = {}
    for e in events:
        if e["seq"] > anchor["seq"] and e["type"] == "tool_finished":
            data = e["data"]
            call_id, turn = data.get("call_id"), data.get("turn_id")
            alias = alias_of(call_id, turn) if turn else None
            key = alias if alias in open_keys else call_id
            if key in open_keys:
                late[key] = data

    lines = [tuple(item) for item in digest["lines"]]
    failing = [tuple(item) for item in digest["failing"]]
    unknown = [tuple(item) for item in digest["unknown"]]
    failing_count, unknown_count = digest["failing_count"], digest["unknown_count"]
    for call in digest["open"]:
        text, failed, is_unknown = _outcome(None, call.get("decision"))
        if call["key"] in late:
            text, failed, is_unknown = _outcome(late[call["key"]], None)
            text += " (outcome arrived after the rewind)"
        line = (call["pos"], f"  - {call['what']} -> {text}")
        lines.append(line)
        if failed:
            failing.append(line)
            failing_count += 1
        elif is_unknown:
            unknown.append(line)
            unknown_count += 1

    def first(items: list[tuple]) -> list[str]:
        return [line for _, line in sorted(items)[:MAX_ITEMS]]

    core = [
        f"The user rewound the conversation to checkpoint {d.get('checkpoint_id')} (event "
        f"{to_seq}). Everything after that point, listed in the rewind notices, has been "
        "UNDONE: do not assume any of it happened, and do not rely on its results or on what "
        "the assistant said about it.",
        _reason_line(d),
    ]
    files = d.get("files")
    if isinstance(files, dict):
        core += _files_lines(files, f"every file: {source_command()} {pointer}")
    else:
        core.append("Workspace files were NOT restored by this rewind: files the undone work "
                    "changed may still be changed on disk; check them before relying on them.")
    core.append("Effects outside the workspace (network, databases, services, other folders) "
                "are not undone by a rewind.")
    if unknown_count:
        core += ["Tool calls with no recorded outcome (they may or may not have taken effect):",
                 *_bounded(first(unknown), hint, unknown_count)]
    if failing_count:
        core += ["Failing checks (tool calls that failed after the checkpoint):",
                 *_bounded(first(failing), hint, failing_count)]
    notices = [Notice(title=TITLE_CORE, lines=core, priority=PRIORITY_CORE, pointer=pointer)]

    tried: list[str] = []
    if digest["inputs_count"]:
        tried += ["User inputs after the checkpoint (rolled back):",
                  *_bounded([f"  - {text}" for text in digest["inputs"]], hint,
                            digest["inputs_count"])]
    if digest["lines_count"]:
        tried += ["Tool calls after the checkpoint and their runtime outcomes:",
                  *_bounded(first(lines), hint, digest["lines_count"])]
    if digest["turns_count"]:
        tried += ["Turns:", *_bounded(digest["turns"], hint, digest["turns_count"])]
    if not tried:
        tried = ["Nothing but bookkeeping happened after the checkpoint."]
    notices.append(Notice(title=TITLE_TRIED, lines=tried, priority=PRIORITY_TRIED,
                          pointer=pointer))
    if digest["claims_count"]:
        claims = [f"claim from the discarded branch (what the assistant said; not a fact, and "
                  f"undone): {text}" for text in digest["claims"]]
        notices.append(Notice(title=TITLE_CLAIMS,
                              lines=_bounded(claims, hint, digest["claims_count"]),
                              priority=PRIORITY_CLAIMS, pointer=pointer))
    return notices
