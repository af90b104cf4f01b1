"""``checkpoint create`` and ``checkpoint list``: commit a checkpoint now, list a thread's.

The older spellings keep working: ``checkpoint [OPTIONS]`` is ``checkpoint create`` and
``checkpoints [OPTIONS]`` is ``checkpoint list`` (:data:`continuation.commands.ALIASES`).
"""
from __future__ import annotations

from continuation.commands import (add_json_arg, add_thread_arg, add_verbose_arg,
                                   open_engine)
from continuation.commands.output import (Column, echo, emit_json, lineage, position, size,
                                          table, thread_title, when)


def register(sub) -> None:
    p = sub.add_parser("checkpoint", help="commit a checkpoint now (create) or list a thread's "
                       "checkpoints (list)")
    actions = p.add_subparsers(dest="checkpoint_command", metavar="ACTION")
    c = actions.add_parser("create", help="build and commit a capsule (and a workspace "
                           "snapshot) for a thread now; also `continuation checkpoint`")
    add_thread_arg(c)
    add_json_arg(c)
    c.add_argument("--reason", choices=["manual", "auto"], default="manual",
                   help="recorded with the checkpoint (default: manual)")
    c.add_argument("--no-snapshot", action="store_true", help="skip the workspace snapshot")
    c.set_defaults(func=cmd_create)
    ls = actions.add_parser("list", help="the aligned checkpoints of a thread (event position "
                            "+ capsule + workspace snapshot under one id); also "
                            "`continuation checkpoints`")
    add_thread_arg(ls)
    add_json_arg(ls)
    add_verbose_arg(ls, "every file each checkpoint changed")
    ls.set_defaults(func=cmd_list)
    p.set_defaults(func=lambda args, _p=p: (_p.print_help(), 2)[1])


def cmd_create(args) -> int:
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.host.progress import StepLine

    with open_engine() as engine:
        thread = engine.select(args.thread)
        with StepLine("continuation checkpoint"):
            cp = commit_checkpoint(thread, reason=args.reason, snapshot=not args.no_snapshot)
        if args.json:
            emit_json(cp.summary())
            return 0
        from continuation.rewind.operation import aligned_position

        echo(f"committed {cp.checkpoint_id} of {thread_title(thread.row)[len('thread '):]}",
             f"  generation {cp.generation}, at {position(aligned_position(thread, cp))}, capsule "
             f"{size(len(cp.capsule_bytes))}, sha256 {cp.sha256[:12]}")
        if cp.workspace and cp.workspace.get("snapshot_ref"):
            echo(f"  workspace snapshot {cp.workspace['snapshot_ref']}")
    return 0


#: the table of ``checkpoint list``
COLUMNS = [Column("checkpoint_id", "id", "id"), Column("when", "time", "fixed"),
           Column("event", "event", "fixed"), Column("reason", "reason", "fixed"),
           Column("changed", "files", "fixed"), Column("objective", "objective")]


def cmd_list(args) -> int:
    from continuation.rewind.listing import checkpoint_rows

    with open_engine() as engine:
        thread = engine.select(args.thread)
        rows = checkpoint_rows(thread, all_files=args.verbose)
        if args.json:
            row = thread.row
            emit_json({"thread": thread.key, "forked_from": row.get("forked_from"),
                       "forked_at_seq": row.get("forked_at_seq"), "name": row.get("name"),
                       "checkpoints": rows})
            return 0
        echo(thread_title(thread.row), *lineage(thread.row))
        shown = [{**r, "when": when(r["created_at"]), "event": r["position"],
                  "changed": "-" if r["files_changed"] is None else r["files_changed"],
                  "reason": r["reason"] + (" CORRUPT" if r["corrupt"] else "")
                  + (" (pruned)" if r["pruned"] else "")} for r in rows]
        if not args.verbose:
            table(shown, COLUMNS, empty="(no checkpoints yet: `continuation checkpoint create`)")
            if any(r["files_changed"] for r in rows):
                echo("(files: how many changed since the previous checkpoint; `--verbose` "
                     "names them)")
            return 0
        for r in shown:
            table([r], COLUMNS)
            _print_files(r)
    return 0


def _print_files(row: dict) -> None:
    files, total = row["files"], row["files_changed"]
    if total is None:
        echo("  no workspace snapshot")
    elif not files:
        echo("  no file changed")
    else:
        for path in files:
            echo(f"  {path}")
        if len(files) < total:
            echo(f"  (and {total - len(files)} more the snapshot counted but does not name)")
    print()
