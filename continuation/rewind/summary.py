"""The informed-retry summary: what a rewind undid, rebuilt from the log at every checkpoint.

After a rewind the next context must say what was tried after the checkpoint (inputs, tool calls
with their runtime outcomes, failing checks), the user's stated reason, and that the rewound
work is undone and must not be assumed. The notices are rebuilt from the log (never stored), so
every checkpoint committed after a rewind carries them, until a turn completes after it: by then
the retry has happened and the model has seen the summary.

Anchors: the newest ``rolled_back`` fact (conversation or both), or the newest
``workspace_restored`` fact (files only: the conversation stays, the files changed under it).
"""
from __future__ import annotations

import json

from capsule.notice import Notice
from statemachine.reducer import alias_of

from .timeline import WORKSPACE_RESTORED, discarded_branch

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


def _bounded(lines: list[str], more_hint: str) -> list[str]:
    if len(lines) <= MAX_ITEMS:
        return lines
    return lines[:MAX_ITEMS] + [f"  ... and {len(lines) - MAX_ITEMS} more ({more_hint})"]


def recovery_notices(events: list[dict], *, thread_key: str) -> list[Notice]:
    """The rewind notices the next context must carry, or [] when none is due.

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
        return conversation_notices(events, anchor, thread_key)
    except Exception as exc:  # an event shape from a newer or broken writer
        return [Notice(
            title=TITLE_CORE, priority=PRIORITY_CORE, pointer=f"event:{thread_key}:{anchor['seq']}",
            lines=[f"The user rewound this thread (event {anchor['seq']}); work after the "
                   "checkpoint was undone and must not be assumed. The detailed summary could "
                   f"not be built ({type(exc).__name__}); read it with `continuation events "
                   f"--thread {thread_key}`."])]


def notices_of(store, thread_key: str, *, upto: int | None = None,
               pending_anchor: dict | None = None) -> list[Notice]:
    """:func:`recovery_notices` from the part of the log they depend on, whatever its length:
    the newest anchor (through the type index; ``pending_anchor``: one about to be appended,
    for a preview), the events after it, and for a conversation rewind the events after the
    rewound-to position (extended down to the target of any rollback inside them, so the
    discarded branch is computed as over the whole log)."""
    anchor = pending_anchor
    if anchor is None:
        found = store.events_of_types(thread_key, ANCHOR_TYPES, upto=upto, newest=1)
        if not found:
            return []
        anchor = found[0]
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
            return recovery_notices(events, thread_key=thread_key)
        low = lower


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


def _files_lines(files: dict) -> list[str]:
    counts = ", ".join(f"{len(files.get(k) or [])} {label}" for k, label in
                       (("restored", "modified"), ("recreated", "re-created"), ("deleted", "deleted")))
    lines = [f"Workspace files were restored to the checkpoint too ({counts})."]
    changed = [f"  - {p}" for k in ("restored", "recreated", "deleted") for p in files.get(k) or []]
    lines += _bounded(changed, "continuation checkpoints --json")
    if files.get("safety_ref"):
        lines.append(f"The files as they were before the restore are kept in the safety snapshot "
                     f"{files['safety_ref']}.")
    return lines


def files_notice(anchor: dict, thread_key: str) -> Notice:
    d = anchor["data"]
    if d.get("undo_of"):
        first = (f"The user undid the files restore of event {d['undo_of']}: the workspace files "
                 "are back as they were just before that restore. The conversation did not "
                 "change: re-read a file before editing it.")
        lines = [first, _reason_line(d), *_files_lines(d)[1:]]
        return Notice(title=TITLE_FILES, lines=lines, priority=PRIORITY_CORE,
                      pointer=f"event:{thread_key}:{anchor['seq']}")
    lines = [
        f"The user restored the workspace files to checkpoint {d.get('checkpoint_id')} "
        f"(event {d.get('to_seq')}). The conversation was NOT rewound: edits made after that "
        "checkpoint are gone from disk even where earlier messages say they were made. Re-read a "
        "file before editing it, and do not assume any later change still exists.",
        _reason_line(d),
        *_files_lines(d)[1:],
    ]
    return Notice(title=TITLE_FILES, lines=lines, priority=PRIORITY_CORE,
                  pointer=f"event:{thread_key}:{anchor['seq']}")


def _reason_line(d: dict) -> str:
    reason = (d.get("reason") or "").strip()
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
    d = anchor["data"]
    pointer = f"event:{thread_key}:{anchor['seq']}"
    hint = f"continuation events --thread {thread_key} --after {branch.to_seq}"

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
    late = {}
    for e in events:
        if e["seq"] > anchor["seq"] and e["type"] == "tool_finished":
            key = _call_key(calls, e["data"])
            if key in calls and key not in finishes:
                late[key] = e["data"]

    call_lines, failing, unknown = [], [], []
    for call_id in order:
        call = calls[call_id]
        finish = finishes.get(call_id)
        text, failed, is_unknown = _outcome(finish, decisions.get(call_id))
        if finish is None and call_id in late:
            text, failed, is_unknown = _outcome(late[call_id], None)
            text += " (outcome arrived after the rewind)"
        line = f"  - {_what(call)} -> {text}"
        call_lines.append(line)
        (failing if failed else unknown if is_unknown else []).append(line)
    for call_id, finish in finishes.items():  # outcomes whose start we never saw
        if call_id not in calls:
            text, failed, _ = _outcome(finish, None)
            call_lines.append(f"  - call {call_id} -> {text}")
            if failed:
                failing.append(call_lines[-1])

    core = [
        f"The user rewound the conversation to checkpoint {d.get('checkpoint_id')} (event "
        f"{branch.to_seq}). Everything after that point, listed in the rewind notices, has been "
        "UNDONE: do not assume any of it happened, and do not rely on its results or on what "
        "the assistant said about it.",
        _reason_line(d),
    ]
    files = d.get("files")
    if isinstance(files, dict):
        core += _files_lines(files)
    else:
        core.append("Workspace files were NOT restored by this rewind: files the undone work "
                    "changed may still be changed on disk; check them before relying on them.")
    core.append("Effects outside the workspace (network, databases, services, other folders) "
                "are not undone by a rewind.")
    if unknown:
        core += ["Tool calls with no recorded outcome (they may or may not have taken effect):",
                 *_bounded(unknown, hint)]
    if failing:
        core += ["Failing checks (tool calls that failed after the checkpoint):",
                 *_bounded(failing, hint)]
    notices = [Notice(title=TITLE_CORE, lines=core, priority=PRIORITY_CORE, pointer=pointer)]

    tried: list[str] = []
    if inputs:
        tried += ["User inputs after the checkpoint (rolled back):",
                  *_bounded([f"  - {_clip(i.get('text'))}" for i in inputs], hint)]
    if call_lines:
        tried += ["Tool calls after the checkpoint and their runtime outcomes:",
                  *_bounded(call_lines, hint)]
    if turns:
        tried += ["Turns:", *_bounded(turns, hint)]
    if not tried:
        tried = ["Nothing but bookkeeping happened after the checkpoint."]
    notices.append(Notice(title=TITLE_TRIED, lines=tried, priority=PRIORITY_TRIED,
                          pointer=pointer))
    if claims:
        lines = [f"claim from the discarded branch (what the assistant said; not a fact, and "
                 f"undone): {_clip(c)}" for c in claims]
        notices.append(Notice(title=TITLE_CLAIMS, lines=_bounded(lines, hint),
                              priority=PRIORITY_CLAIMS, pointer=pointer))
    return notices
