"""``recover``: interrupted threads (owner gone without a clean end), resume or dismiss them.

    continuation recover [--json]            list them, record crash_detected for new ones
    continuation recover --resume THREAD     the assembled context + the runtime command
    continuation recover --dismiss THREAD    a fact: the user dismissed it (no longer listed)
"""
from __future__ import annotations

import json
import time

from continuation.commands import CommandError, add_json_arg, open_engine
from continuation.commands.output import clip, emit_json


def register(sub) -> None:
    p = sub.add_parser("recover", help="interrupted threads: list, --resume or --dismiss them")
    add_json_arg(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--resume", metavar="THREAD", help="print the context to continue THREAD "
                       "and the runtime command that resumes it")
    group.add_argument("--dismiss", metavar="THREAD", help="record that THREAD needs no recovery")
    p.add_argument("--note", default="", help="a note stored with --dismiss")
    p.add_argument("--no-drift", action="store_true", help="skip the workspace drift check")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="remove temp files of killed writers older than this (default 60)")
    p.set_defaults(func=cmd_recover)


def _when(ts) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _detect_and_record(engine, *, drift: bool):
    from continuation.session.engine import Thread
    from continuation.recovery import interrupted

    items = interrupted.detect(engine)
    recorded = []
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
    from continuation.recovery.cleanup import STALE_AFTER_S, remove_stale

    with open_engine() as engine:
        removed = remove_stale(engine.home, min_age=STALE_AFTER_S if args.stale_after is None
                               else args.stale_after)
        if args.dismiss:
            return _dismiss(engine, args)
        items, recorded = _detect_and_record(engine, drift=not args.no_drift and not args.resume)
        if args.resume:
            return _resume(engine, args)
        if args.json:
            emit_json({"interrupted": [i.to_dict() | {"resume_command": i.resume_command}
                                       for i in items],
                       "crash_recorded": recorded, "temps_removed": [str(p) for p in removed]})
            return 0
        if removed:
            print(f"removed {len(removed)} temp file(s) left by killed writers")
        if not items:
            print("no interrupted threads")
            return 0
        for it in items:
            _print_item(it, it.thread_key in recorded)
    return 0


def _print_item(it, recorded: bool) -> None:
    cp = it.last_checkpoint
    print(f"thread {it.thread_key}  ({it.runtime} session {it.session_id})")
    print(f"  repository:      {it.workspace_root or '-'}")
    print(f"  interrupted:     {it.reason}" + ("  [crash recorded now]" if recorded else ""))
    print(f"  last activity:   {_when(it.last_activity)}")
    print("  last checkpoint: " + (f"{cp['checkpoint_id']} at {_when(cp['created_at'])}" if cp
                                    else "none"))
    print(f"  unfinished inputs: {len(it.inputs)}")
    for i in it.inputs:
        print(f"    {clip(i['input_id'], 28):28}  {i['state']:11}  {clip(i['text'], 60)}")
    print(f"  tool calls with unknown outcome: {len(it.unknown_calls)}")
    for c in it.unknown_calls:
        args = json.dumps(c["args"], ensure_ascii=False, default=str)
        print(f"    {c['call_id']}  {c['tool']}  {clip(args, 80)}  started {_when(c['started_at'])}")
    if it.drift:
        d = it.drift
        if "error" in d:
            print(f"  drift: not available ({d['error']})")
        else:
            changed = len(d["modified"]) + len(d["added"]) + len(d["deleted"])
            print(f"  drift since the checkpoint: {changed} file(s) changed "
                  f"({len(d['outside_session'])} not by the session tools)"
                  + ("; HEAD moved" if d["head_moved"] else ""))
    print(f"  continue: continuation recover --resume {it.thread_key}   then: {it.resume_command}")
    print(f"  settle tool calls: continuation reconcile --thread {it.thread_key}")
    print(f"  dismiss: continuation recover --dismiss {it.thread_key}")
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
        print(f"dismissed the recovery of {thread.key}; its inputs keep their states "
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
    print(f"# to continue in the runtime: {where}{command}")
    print("# (the resumed session receives this context at its SessionStart)")
    return 0
