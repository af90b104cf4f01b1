"""``rewind``, ``fork``, ``thread delete``, ``restore``, ``drift``, ``gc``.

Every command that changes something previews first; ``--dry-run`` stops after the preview and
changes nothing. On a terminal the change is confirmed unless ``--yes`` is given; without a
terminal (scripts, tests) it proceeds after printing the preview.
"""
from __future__ import annotations

import sys

from continuation.commands import (CommandError, add_json_arg, add_thread_arg, add_verbose_arg,
                                   open_engine)
from continuation.commands.output import LIST_SAMPLE, echo, emit_json, line_width, note, sample


CHECKPOINT_THREAD_HELP = ("look the CHECKPOINT up among this thread's checkpoints only (key, "
                          "session id or a unique prefix); default: every thread's")


def register(sub) -> None:
    p = sub.add_parser("rewind", help="rewind the conversation, the files or both to a checkpoint")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="checkpoint id or a unique prefix")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--conversation", dest="mode", action="store_const", const="conversation",
                      help="roll the conversation back (inputs after it become rolled_back)")
    what.add_argument("--files", dest="mode", action="store_const", const="files",
                      help="restore the workspace files only")
    what.add_argument("--both", dest="mode", action="store_const", const="both",
                      help="conversation and files together, under one rollback")
    add_thread_arg(p, CHECKPOINT_THREAD_HELP)
    p.add_argument("--reason", default="", help="why (carried into the next context)")
    _change_args(p)
    p.add_argument("--print-prompt", action="store_true",
                   help="print the handoff prompt and the command to start a fresh Codex or "
                        "Claude Code session from the rewound state")
    _files_args(p)
    p.set_defaults(func=cmd_rewind)

    p = sub.add_parser("restore", help="restore the workspace files of a checkpoint "
                       "(same as `rewind CHECKPOINT --files`), or undo the last restore")
    p.add_argument("checkpoint", metavar="CHECKPOINT", nargs="?",
                   help="checkpoint id or a unique prefix")
    p.add_argument("--undo", action="store_true",
                   help="undo the thread's newest files restore (back to its safety snapshot)")
    add_thread_arg(p)
    p.add_argument("--reason", default="", help="why (carried into the next context)")
    _change_args(p)
    _files_args(p)
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("fork", help="start a new thread from a checkpoint (forked_from lineage)")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="checkpoint id or a unique prefix")
    add_thread_arg(p, CHECKPOINT_THREAD_HELP)
    p.add_argument("--name", help="a name for the new thread (shown by status, taken by "
                   "--thread)")
    p.add_argument("--session-id", help="session id of the new thread (default: a new UUID)")
    p.add_argument("--files", action="store_true",
                   help="also restore the shared workspace files to the checkpoint")
    p.add_argument("--print-prompt", action="store_true",
                   help="print the handoff prompt and the command to start the fork's session")
    add_json_arg(p)
    p.set_defaults(func=cmd_fork)

    p = sub.add_parser("thread", help="thread maintenance")
    tsub = p.add_subparsers(dest="thread_command", metavar="ACTION")
    d = tsub.add_parser("delete", help="delete a thread's data, capsules and snapshot refs")
    d.add_argument("thread_selector", metavar="THREAD", help="thread key or session id")
    d.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    d.add_argument("--force", action="store_true", help="delete even with a live session")
    add_json_arg(d)
    d.set_defaults(func=cmd_thread_delete)
    p.set_defaults(func=lambda args, _p=p: _usage(_p))

    p = sub.add_parser("drift", help="files changed since the thread's last checkpoint snapshot")
    add_thread_arg(p)
    add_json_arg(p)
    add_verbose_arg(p, "every changed file")
    p.set_defaults(func=cmd_drift)

    p = sub.add_parser("gc", help="delete snapshot refs of deleted threads, prune old ones and "
                                  "old checkpoint data")
    p.add_argument("--keep", type=int, default=None,
                   help="generations kept whole per thread: snapshot refs (and safety "
                        "snapshots), renderings and context files (default "
                        "$CONTINUATION_KEEP_GENERATIONS, else 20); older capsules stay")
    p.add_argument("--keep-bytes", default=None, metavar="SIZE",
                   help="cap on the checkpoint data of the state home, e.g. 256M: past it the "
                        "oldest capsules are pruned, never a thread's newest (default "
                        "$CONTINUATION_KEEP_BYTES, else 256M)")
    p.add_argument("--root", action="append", default=[],
                   help="also clean this workspace folder (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="show what would go; change nothing")
    add_json_arg(p)
    p.set_defaults(func=cmd_gc)


def _files_args(p) -> None:
    p.add_argument("--all", action="store_true",
                   help="files: restore every change since the checkpoint, your own edits too "
                        "(by default a file no agent call can have changed is kept)")
    p.add_argument("--keep-unsure", action="store_true",
                   help="files: also keep the files changed while an agent call ran that no call "
                        "names (by default they are restored; the preview lists them)")


def _change_args(p) -> None:
    p.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_json_arg(p)
    add_verbose_arg(p, "every input, call and file of the preview")


def _preview(plan, args) -> None:
    echo(plan.describe(None if args.verbose else LIST_SAMPLE, width=line_width()))


def _usage(p) -> int:
    p.print_help()
    return 2


def _asks(args) -> bool:
    """A confirmation will be asked (``--yes`` not given, a terminal to ask on)."""
    return not getattr(args, "yes", False) and sys.stdin.isatty()


def _confirm(question: str, args) -> None:
    if not _asks(args):
        return
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CommandError("cancelled; nothing was changed")


def _workspace_errors():
    from continuation.workspace import WorkspaceError

    return WorkspaceError


def _checkpoint_of(engine, args) -> str:
    """The CHECKPOINT argument as one checkpoint's id: an id or a unique prefix of one; with
    ``--thread``, among that thread's checkpoints only. A prefix several threads share (every
    thread has a ``cp-1-…``) is taken in the thread of the workspace you are in, the most
    recently active one holding a match (stderr names the others); elsewhere it is refused,
    naming the matches."""
    from continuation.boundary.checkpoints import (CheckpointError, ambiguous_message,
                                                   checkpoints_matching, find_checkpoint,
                                                   list_checkpoints)

    wanted = args.checkpoint.removesuffix("…").removesuffix("...") or args.checkpoint
    if getattr(args, "thread", None):
        thread = engine.select(args.thread)
        cps = list_checkpoints(thread)
        matches = [cp for cp in cps if cp.checkpoint_id == wanted] or [
            cp for cp in cps if cp.checkpoint_id.startswith(wanted)]
        if len(matches) == 1:
            return matches[0].checkpoint_id
        if not matches:
            raise CommandError(f"thread {thread.key} has no checkpoint {wanted!r} "
                               f"(see `continuation checkpoint list --thread {thread.key}`)")
        raise CommandError(ambiguous_message(wanted, matches))
    try:
        return find_checkpoint(engine, wanted).checkpoint_id
    except CheckpointError as exc:
        ambiguous = str(exc)
    matches = checkpoints_matching(engine, wanted)
    if not matches:
        raise CommandError(ambiguous)
    for row in engine.workspace_threads():
        here = [cp for cp in matches if cp.thread_key == row["thread_key"]]
        if len(here) == 1:
            others = [cp for cp in matches if cp is not here[0]]
            note(f"{wanted!r} is {here[0].checkpoint_id} of thread {row['thread_key']}, the "
                 "workspace you are in (also "
                 + ", ".join(f"{cp.checkpoint_id} of {cp.thread_key}" for cp in others[:5])
                 + (" …" if len(others) > 5 else "") + ")")
            return here[0].checkpoint_id
        if here:
            break
    raise CommandError(ambiguous)


# -- rewind / restore ---------------------------------------------------------------------------
def _steps(args):
    """The progress line of a long step (a large work tree's snapshot); not around a question."""
    from continuation.host.progress import StepLine

    return StepLine(f"continuation {args.command}")


def _run_rewind(args, mode: str) -> int:
    from continuation.rewind.operation import apply_rewind, plan_rewind

    with open_engine() as engine:
        selected = _checkpoint_of(engine, args)
        try:
            with _steps(args):
                plan = plan_rewind(engine, selected, mode, reason=args.reason,
                                   applying=not args.dry_run, at_once=not _asks(args),
                                   whole_tree=getattr(args, "all", False),
                                   keep_unsure=getattr(args, "keep_unsure", False))
        except _workspace_errors() as exc:
            raise CommandError(str(exc)) from None
        if args.dry_run:
            if args.json:
                emit_json({"dry_run": True, "plan": plan.to_dict()})
            else:
                _preview(plan, args)
                echo("(dry run: nothing was changed)")
            return 0
        if not args.json:
            _preview(plan, args)
        _confirm("apply this rewind?", args)
        try:
            with _steps(args):
                result = apply_rewind(engine, plan)
        except _workspace_errors() as exc:
            raise CommandError(str(exc)) from None
        prompt = None
        if getattr(args, "print_prompt", False):
            from continuation.rewind.handoff import handoff

            prompt = handoff(engine.get_thread(plan.thread_key))
        if args.json:
            emit_json({"dry_run": False, "result": result.to_dict(),
                       "handoff": prompt.to_dict() if prompt else None})
            return 0
        cp = result.checkpoint
        echo(f"rewound: event {result.anchor_seq} records it; new checkpoint {cp.checkpoint_id} "
             f"(generation {cp.generation}) carries the recovery summary into the next context")
        if result.files:
            echo(f"files: {len(result.files['restored'])} modified, "
                 f"{len(result.files['recreated'])} re-created, {len(result.files['deleted'])} "
                 f"deleted, {len(result.files.get('kept', []))} kept (new since the checkpoint, "
                 f"not created by the agent), {len(result.files.get('kept_edits', []))} of "
                 f"your edits kept; safety snapshot {result.files['safety_ref']}; every file: "
                 f"continuation source event:{plan.thread_key}:{result.anchor_seq}")
        if prompt:
            echo(prompt.describe())
            print(prompt.text)
    return 0


def cmd_rewind(args) -> int:
    return _run_rewind(args, args.mode)


def cmd_restore(args) -> int:
    if args.undo == bool(args.checkpoint):
        raise CommandError("give a CHECKPOINT to restore, or --undo (not both)", code=2)
    if args.checkpoint:
        return _run_rewind(args, "files")
    from continuation.rewind.operation import apply_undo_restore, plan_undo_restore

    with open_engine() as engine:
        thread = engine.select(args.thread)
        try:
            plan = plan_undo_restore(engine, thread, reason=args.reason)
        except _workspace_errors() as exc:
            raise CommandError(str(exc)) from None
        if args.json and args.dry_run:
            emit_json({"dry_run": True, "plan": plan.to_dict()})
            return 0
        if not args.json:
            _preview(plan, args)
        if args.dry_run:
            echo("(dry run: nothing was changed)")
            return 0
        _confirm("undo that restore?", args)
        with _steps(args):
            result = apply_undo_restore(engine, plan)
        if args.json:
            emit_json({"dry_run": False, "result": result.to_dict()})
            return 0
        echo(f"undone: event {result.anchor_seq} records it; new checkpoint "
             f"{result.checkpoint.checkpoint_id}; safety snapshot {result.files['safety_ref']}")
    return 0


# -- fork -----------------------------------------------------------------------------------------
def cmd_fork(args) -> int:
    from continuation.rewind.fork import fork_thread

    with open_engine() as engine:
        if args.name:
            _check_name(engine, args.name)
        selected = _checkpoint_of(engine, args)
        try:
            with _steps(args):
                result = fork_thread(engine, selected, name=args.name,
                                     session_id=args.session_id, restore_files=args.files)
        except _workspace_errors() as exc:
            raise CommandError(str(exc)) from None
        prompt = None
        if args.print_prompt:
            from continuation.rewind.handoff import handoff

            prompt = handoff(result.thread, session_id=result.thread.row["session_id"])
        if args.json:
            emit_json({**result.to_dict(), "handoff": prompt.to_dict() if prompt else None})
            return 0
        row = result.thread.row
        named = f' "{row["name"]}"' if row.get("name") else ""
        echo(f"forked {result.parent} at {result.from_checkpoint.checkpoint_id} (event "
             f"{result.forked_at_seq}) into thread {row['thread_key']}{named} (session "
             f"{row['session_id']}); first checkpoint {result.checkpoint.checkpoint_id}",
             f"select it with --thread {row.get('name') or row['thread_key']}")
        if prompt:
            echo(prompt.describe())
            print(prompt.text)
    return 0


def _check_name(engine, name: str) -> None:
    """A thread's name is taken by --thread: it must not be another thread's name, key or
    session id."""
    for row in engine.store.threads():
        if name in (row.get("name"), row["thread_key"], row["session_id"]):
            raise CommandError(f"{name!r} already names thread {row['thread_key']}: "
                               "choose another --name")


# -- thread delete ----------------------------------------------------------------------------------
def cmd_thread_delete(args) -> int:
    from continuation.rewind.removal import delete_thread

    with open_engine() as engine:
        row = engine.store.thread(args.thread_selector)
        if not args.yes:
            if not sys.stdin.isatty():
                raise CommandError(f"deleting thread {row['thread_key']} removes its events, "
                                   "checkpoints and snapshot refs for good; pass --yes")
            _confirm(f"delete thread {row['thread_key']} ({row['last_seq']} events) for good?", args)
        report = delete_thread(engine, row["thread_key"], force=args.force)
        if args.json:
            emit_json(report.to_dict())
            return 0
        echo(f"deleted thread {report.thread_key}: {report.rows.get('events', 0)} events, "
             f"{report.rows.get('checkpoints', 0)} checkpoints, {report.refs_deleted} snapshot refs")
        for w in report.warnings:
            echo(f"warning: {w}")
        if report.forks:
            echo("forks keep their own data: " + ", ".join(report.forks))
    return 0


# -- drift --------------------------------------------------------------------------------------------
def cmd_drift(args) -> int:
    from continuation.boundary import checkpoints as cps
    from continuation.workspace import drift
    from continuation.session.workspace_link import session_written_paths

    with open_engine() as engine:
        thread = engine.select(args.thread)
        with_ws = [cp for cp in cps.list_checkpoints(thread)
                   if cp.workspace and not cp.workspace.get("error")]
        if not with_ws:
            raise CommandError(f"thread {thread.key} has no checkpoint with a workspace snapshot")
        cp = with_ws[-1]
        from continuation.workspace import CorruptReference, WorkspaceRef

        try:
            ref = WorkspaceRef.from_dict(cp.workspace)
            report = drift(ref, state_home=engine.home,
                           session_paths=session_written_paths(thread, after_seq=cp.seq))
        except (CorruptReference, _workspace_errors()) as exc:
            raise CommandError(str(exc)) from None
        if args.json:
            emit_json({"thread": thread.key, "checkpoint": cp.checkpoint_id,
                       "report": report.to_dict(), "clean": report.clean})
            return 0
        echo(f"drift of {ref.root} since checkpoint {cp.checkpoint_id} (generation "
             f"{cp.generation})")
        if report.clean:
            echo("  no changes")
        else:
            echo(f"  {len(report.modified)} modified, {len(report.added)} added, "
                 f"{len(report.deleted)} deleted; {len(report.outside_session)} outside the "
                 "session")
        entries = [(label, path) for label, paths in (("modified", report.modified),
                                                      ("added", report.added),
                                                      ("deleted", report.deleted))
                   for path in paths]
        shown, more = sample(entries, args.verbose)
        for label, path in shown:
            mark = "  (outside the session)" if path in report.outside_session else ""
            echo(f"  {label:<9} {path}{mark}")
        if more:
            echo(f"  ... and {more} more (--verbose lists every file)")
        if report.head_moved:
            echo(f"  HEAD moved: {ref.head} -> {report.head}")
        if report.branch_changed:
            echo(f"  branch changed: {ref.branch} -> {report.branch}")
        for left in report.left_out:
            echo(f"  left out  {left['path']}  (a secret file, never snapshotted: {left['why']})")
    return 0


# -- gc ---------------------------------------------------------------------------------------------
def cmd_gc(args) -> int:
    from continuation.rewind.removal import collect_garbage

    from continuation.boundary.retention import (
        RetentionError,
        describe,
        keep_bytes,
        keep_generations,
        parse_size,
        prune,
    )

    try:
        keep = args.keep if args.keep is not None else keep_generations()
        if keep < 1:
            raise RetentionError("--keep must be at least 1 (the newest generation is kept)")
        cap = parse_size(args.keep_bytes, "--keep-bytes") if args.keep_bytes is not None else keep_bytes()
    except RetentionError as exc:
        raise CommandError(str(exc)) from None
    args.keep = keep
    with open_engine() as engine:
        report = collect_garbage(engine, roots=args.root, keep=keep, dry_run=args.dry_run)
        data = prune(engine, keep=keep, cap=cap, dry_run=args.dry_run)
        if args.json:
            emit_json({**report.to_dict(), "checkpoint_data": data.to_dict()})
            return 0
        verb = "would delete" if args.dry_run else "deleted"
        for root, refs in report.orphan_refs.items():
            echo(f"{verb} {len(refs)} ref(s) of deleted threads in {root}")
        for root, refs in report.pruned_refs.items():
            echo(f"{verb} {len(refs)} old snapshot ref(s) in {root} (keeping {args.keep} per thread)")
        for path in report.folders_removed:
            echo(f"{verb} orphaned folder {path}")
        echo(*describe(data, keep, args.dry_run))
        for w in report.warnings:
            echo(f"warning: {w}")
        if not (report.orphan_refs or report.pruned_refs or report.folders_removed or data.anything):
            echo("nothing to collect")
    return 0
