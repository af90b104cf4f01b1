"""``doctor``: is the installation healthy? Store version and integrity, checkpoints, locks,
orphaned snapshot refs, disk usage, stale temp files, hooks installed and trusted.

Exit 0 when healthy, 1 when something needs attention (each finding has a one-line suggestion).
``--fix`` rebuilds derived tables from the log, removes stale temp files and deletes orphaned
snapshot refs; it never touches the user's branches, index or files.
"""
from __future__ import annotations

import sys
from pathlib import Path

from continuation.commands import add_json_arg
from continuation.commands.output import emit_json

_MARK = {"ok": "ok", "info": "--", "warn": "!!", "problem": "XX"}


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check the store, checkpoints, refs, temp files and hooks")
    add_json_arg(p)
    p.add_argument("--fix", action="store_true", help="repair what can be repaired safely")
    p.add_argument("--project-dir", default=".", help="project folder for project-scope hooks")
    p.add_argument("--stale-after", type=float, default=None, metavar="SECONDS",
                   help="temp files older than this are stale (default 60)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    from continuation.host.paths import state_home
    from continuation.commands.health import healthy, run_checks

    home = state_home()
    findings = run_checks(home, project_dir=Path(args.project_dir).resolve(), fix=args.fix,
                          min_temp_age=args.stale_after)
    ok = healthy(findings)
    if args.json:
        emit_json({"state_home": str(home), "healthy": ok,
                   "findings": [f.to_dict() for f in findings]})
        return 0 if ok else 1
    for f in findings:
        sys.stdout.write(f"[{_MARK.get(f.status, f.status)}] {f.check}: {f.message}\n")
        if f.suggestion and f.status in ("warn", "problem"):
            sys.stdout.write(f"     -> {f.suggestion}\n")
    problems = sum(1 for f in findings if f.status in ("warn", "problem"))
    sys.stdout.write("healthy\n" if ok else f"{problems} finding(s) need attention\n")
    return 0 if ok else 1
