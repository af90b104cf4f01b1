"""``recover``: interrupted threads (owner gone without a clean end), resume or dismiss them.

    continuation recover [--json]            list them; records nothing
    continuation recover --record [--json]   list them and record crash_detected for new ones
                                             (their pending inputs become interrupted, their
                                             in-flight calls unknown: inputs reconciling),
                                             and remove temp files killed writers left
    continuation recover --resume THREAD     record THREAD's crash, then the assembled context
                                             + the runtime command
    continuation recover --dismiss THREAD    a fact: the user dismissed it (no longer listed)

A plain listing changes nothing, so it is safe to run while wondering what happened; the
states it shows are the states now, and each thread says whether its crash is recorded.
"""
from __future__ import annotations

import json

from continuation.commands import CommandError, add_json_arg, open_engine
from continuation.commands.output import Column, echo, emit_json, paint, table, when


def register(sub) -> None:
    p = sub.add_parser("recover", help="interrupted threads: list them (read-only), --record "
                       "their crashes, --resume or --dismiss one")
    add_json_arg(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--record", action="store_true",
                       help="record the crash of every thread listed: its pending inputs become "
                       "interrupted, inputs held by a call of unknown outcome reconciling; "
                       "also remove the temp files killed writers left")
    group.add_argument("--resume", metavar="THREAD", help="print the context to continue THREAD "
                       "and the runtime command that resumes it")
    group.add_argument("--dismiss", metavar="THREAD", help="record that THREAD needs no recovery")
    p.add_argument("--note", default="", help="a note stored with --dismiss")
    p.add_argument("--no-drift", action="store_true", help="skip the workspace drift check")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="with --record: remove temp files of killed writers older than this "
                   "(default 60)")
    p.set_defaults(func=cmd_recover)


def _detect(engine, *, record: bool, drift: bool):
    """The interrupted threads, and the keys of those whose crash was recorded now."""
    from continuation.session.engine import Thread
    from continuation.recovery import interrupted

    items = interrupted.detect(engine)
    recorded = []
    if record:
        for item in items:
            thread = Thread(engine, item.thread_key)
            if interrupted.record_crash(thread, item, source="cli:recover"):
                recorded.append(item.thread_key)
        # re-read: recording moved inputs to interrupted / reconciling and calls to unknown
        items = [interrupted.examine(Thread(engine, i.thread_key)) or i for i in items]
    if drift:
        items = [interrupted.with_drift(Thread(engine, i.thread_key), i) for i in items]
    return items, recorded


def cmd_recover(args) -> int:
    from continuation.recovery.cleanup import STALE_AFTER_S, remove_stale, stale_temps

    with open_engine() as engine:
        min_age = STALE_AFTER_S if args.stale_after is None else args.stale_after
        if args.dismiss:
            return _dismiss(engine, args)
        if args.resume:
            _record_one(engine, args.resume)
            return _resume(engine, args)
        removed = remove_stale(engine.home, min_age=min_age) if args.record else []
        stale = [] if args.record else stale_temps(engine.home, min_age=min_age)
        items, recorded = _detect(engine, record=args.record, drift=not args.no_drift)
        unrecorded = [i.thread_key for i in items if i.status == "needs_crash"]
        if args.json:
            emit_json({"interrupted": [i.to_dict() | {"resume_command": i.resume_command}
                                       for i in items],
                       "crash_recorded": recorded, "record": args.record,
                       "crash_not_recorded": unrecorded,
                       "temps_removed": [str(p) for p in removed],
                       "temps_stale": [str(p) for p in stale]})
            return 0
        if removed:
            echo(f"removed {len(removed)} temp file(s) left by killed writers")
        if not items:
            echo("no interrupted threads")
            return 0
        echo(f"{len(items)} interrupted thread(s)" + (
            f"; recorded the crash of {len(recorded)} now" if recorded else
            f"; {len(unrecorded)} crash(es) not recorded yet: `continuation recover --record` "
            "records them (pending inputs become interrupted, inputs held by a call of "
            "unknown outcome reconciling)" if unrecorded else "; every crash is recorded"))
        if stale:
            echo(f"({len(stale)} temp file(s) left by killed writers; --record removes them)")
        print()
        for it in items:
            _print_item(it, it.thread_key in recorded)
    return 0


def _record_one(engine, selector: str) -> None:
    """``--resume``: the thread's crash recorded first (its context must say what is open)."""
    from continuation.recovery import interrupted

    thread = engine.get_thread(selector)
    item = interrupted.examine(thread)
    if item is not None:
        interrupted.record_crash(thread, item, source="cli:recover")


#: the inputs and calls of ``recover``
INPUT_COLUMNS = [Column("input_id", "input", "id"), Column("state", "state", "fixed"),
                 Column("text", "text")]
CALL_COLUMNS = [Column("call_id", "call", "id"), Column("tool", "tool", "id", 16),
                Column("started", "started", "fixed"), Column("args", "arguments")]


def _print_item(it, recorded: bool) -> None:
    cp = it.last_checkpoint
    state = ("crash recorded now" if recorded else "crash recorded" if it.status == "crashed"
             else paint("crash not recorded", "interrupted"))
    echo(f"thread {it.thread_key}",
         f"  {it.runtime} session {it.session_id}",
         f"  repository:      {it.workspace_root or '-'}",
         f"  interrupted:     {it.reason}  [{state}]",
         f"  last activity:   {when(it.last_activity)}",
         "  last checkpoint: " + (f"{cp['checkpoint_id']} at {when(cp['created_at'])}" if cp
                                  else "none"),
         f"  unfinished inputs: {len(it.inputs)}")
    if it.inputs:
        table(it.inputs, INPUT_COLUMNS, indent=4)
    echo(f"  tool calls with unknown outcome: {len(it.unknown_calls)}")
    if it.unknown_calls:
        table([{"call_id": c["call_id"], "tool": c["tool"],
                "started": when(c["started_at"]),
                "args": json.dumps(c["args"], ensure_ascii=False, default=str)}
               for c in it.unknown_calls], CALL_COLUMNS, indent=4)
    if it.drift:
        d = it.drift
        if "error" in d:
            echo(f"  drift: not available ({d['error']})")
        else:
            changed = len(d["modified"]) + len(d["added"]) + len(d["deleted"])
            echo(f"  drift since the checkpoint: {changed} file(s) changed "
                 f"({len(d['outside_session'])} not by the session tools)"
                 + ("; HEAD moved" if d["head_moved"] else ""))
    echo(f"  continue: continuation recover --resume {it.thread_key}",
         f"    then: {it.resume_command}",
         f"  settle tool calls: continuation reconcile --thread {it.thread_key}",
         f"  dismiss: continuation recover --dismiss {it.thread_key}")
    print()


def _dismiss(engine, args) -> int:
    from continuation.recovery import interrupted

    thread = engine.get_thread(args.dismiss)
    item = interrupted.examine(thread)
    if item is None:
        raise CommandError(f"thread {thread.key} is not interrupted (see `continuation recover`)")
    interrupted.record_crash(thread, item, source="cli:recover")
    interrupted.dismiss(thread, args.note)
    if args.json:
        emit_json({"thread": thread.key, "dismissed": True})
    else:
        echo(f"dismissed the recovery of {thread.key}; its inputs keep their states "
             f"(see `continuation inputs --thread {thread.key}`)")
    return 0


def _resume(engine, args) -> int:
    from continuation.boundary import crossing as boundary, checkpoints
    from continuation.recovery.interrupted import resume_command

    thread = engine.get_thread(args.resume)
    row = thread.row
    cps = checkpoints.list_checkpoints(thread)
    if not cps or cps[-1].seq < int(row["last_seq"]):
        # events after the newest checkpoint (the crash, unknown calls): commit what is true now
        boundary.commit_checkpoint(thread, reason="recover")
    loaded = checkpoints.load(thread)
    if loaded is None:
        raise CommandError(f"thread {thread.key} has no checkpoint to resume from")
    text = boundary.assembled_text(thread, loaded)
    for problem in loaded.problems:
        text = f"[continuation: {problem}]\n" + text
    command = resume_command(row["runtime"], row["session_id"])
    if args.json:
        emit_json({"thread": thread.key, "checkpoint_id": loaded.checkpoint.checkpoint_id,
                   "command": command, "cwd": row["workspace_root"], "context": text,
                   "problems": loaded.problems})
        return 0
    print(text.rstrip("\n"))
    print()
    where = f"cd {row['workspace_root']} && " if row["workspace_root"] else ""
    echo(f"# to continue in the runtime: {where}{command}",
         "# (the resumed session receives this context at its SessionStart)")
    return 0
