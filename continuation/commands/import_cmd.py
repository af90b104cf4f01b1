"""``continuation import codex|claude|gemini FILE``: build (or complete) a thread from a transcript.

Prints a short report (``--json``: the full report). Damaged content (torn or malformed lines,
unknown record types, a NUL tail) is reported and skipped: the exit code stays 0. A file that
cannot be read at all is one line on stderr and exit 1.
"""
from __future__ import annotations

from continuation.commands import CommandError, add_json_arg, open_engine
from continuation.commands.output import emit_json


def register(sub) -> None:
    p = sub.add_parser("import", help="import a Codex rollout or a Claude Code session transcript")
    p.add_argument("runtime", choices=["codex", "claude", "gemini"], help="which runtime wrote FILE")
    p.add_argument("file", metavar="FILE", help="the transcript (.jsonl)")
    add_json_arg(p)
    live = p.add_mutually_exclusive_group()
    live.add_argument("--session-over", dest="session_over", action="store_const", const=True,
                      help="the session that wrote FILE has ended: a turn left open at the end "
                           "is cut (default: cut only when the hooks recorded the session as "
                           "ended or its owner as dead; with no recorded session the last turn "
                           "is left open)")
    live.add_argument("--live", dest="session_over", action="store_const", const=False,
                      help="the session is still running: leave its last turn open")
    p.add_argument("--session-id", help="the session (thread) to import into "
                   "(default: the id FILE names, else its file name)")
    p.set_defaults(func=cmd_import, session_over=None)


def cmd_import(args) -> int:
    from continuation.importers import TranscriptUnreadable, import_transcript

    try:
        with open_engine() as engine:
            report = import_transcript(args.runtime, args.file, engine=engine,
                                       session_over=args.session_over,
                                       session_id=args.session_id)
    except TranscriptUnreadable as exc:
        raise CommandError(str(exc)) from None
    if args.json:
        emit_json(report.to_dict())
    else:
        print(report.render())
    return 0
