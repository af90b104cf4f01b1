"""``doctor``: is the installation healthy? Store version and integrity, checkpoints, locks,
orphaned snapshot refs, disk usage, stale temp files, hooks installed and trusted.

Exit 0 when healthy, 1 when something needs attention (each finding has a one-line suggestion).
``--fix`` rebuilds derived tables from the log, removes stale temp files and deletes orphaned
snapshot refs; it never touches the user's branches, index or files.
"""
from __future__ import annotations

from pathlib import Path

from continuation.commands import add_json_arg
from continuation.commands.output import echo, emit_json, paint

_MARK = {"ok": "ok", "info": "--", "warn": "!!", "problem": "XX"}
#: the finding marks painted as the states that ask for action are
_STATE = {"warn": "pending", "problem": "interrupted"}


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check the store, checkpoints, refs, temp files and hooks")
    add_json_arg(p)
    p.add_argument("--fix", action="store_true", help="repair what can be repaired safely")
    p.add_argument("--project-dir", default=".", metavar="DIR",
                   help="project folder for project-scope hooks (default: .)")
    p.add_argument("--salvage", action="store_true",
                   help="copy every readable event of a damaged store (the live one, or one set "
                        "aside) into a new store, and say how many were lost")
    p.add_argument("--force", action="store_true",
                   help="with --salvage: even while sessions recorded in the store still run")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="temp files older than this are stale (default 60)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    from continuation.host.paths import state_home
    from continuation.commands.health import healthy, run_checks

    home = state_home()
    if args.salvage:
        return _salvage(home, args)
    findings = run_checks(home, project_dir=Path(args.project_dir).resolve(), fix=args.fix,
                          min_temp_age=args.stale_after)
    ok = healthy(findings)
    if args.json:
        emit_json({"state_home": str(home), "healthy": ok,
                   "findings": [f.to_dict() for f in findings]})
        return 0 if ok else 1
    for f in findings:
        mark = _MARK.get(f.status, f.status)
        echo(f"[{paint(mark, _STATE.get(f.status))}] {f.check}: {f.message}")
        if f.suggestion and f.status in ("warn", "problem"):
            echo(f"     -> {f.suggestion}")
    problems = sum(1 for f in findings if f.status in ("warn", "problem"))
    echo("healthy" if ok else f"{problems} finding(s) need attention")
    return 0 if ok else 1


def _salvage(home, args) -> int:
    from continuation.commands import CommandError
    from continuation.store import store_file
    from continuation.store.salvage import salvage

    path = store_file(str(home))
    if path is None:
        raise CommandError("--salvage repairs the embedded SQLite store; this state home uses a "
                           "store server (its own backups and recovery apply)")
    report = salvage(path, force=args.force)
    if args.json:
        emit_json(report.to_dict())
        return 0
    lost = len(report.events_lost)
    out = [f"salvaged {report.source}",
           f"  events: {report.events_read} copied, {lost} unreadable (lost), "
           f"{len(report.refused)} refused by the lifecycle, in {report.threads} thread(s)",
           f"  checkpoints: {report.checkpoints} copied, {report.checkpoints_lost} unreadable"]
    if lost:
        shown = ", ".join(f"{k} seq {s}" for k, s in report.events_lost[:5])
        out.append(f"  lost: {shown}" + (f" and {lost - 5} more (--json lists them)"
                                         if lost > 5 else ""))
    if report.kept_as:
        out.append(f"  {report.carried} fact(s) recorded since the damage carried after them; "
                   f"that store ({report.carried_checkpoints} checkpoint(s) of its own) is kept "
                   f"as {report.kept_as}")
    out.append(f"the store is now {path}")
    echo(*out)
    return 0
