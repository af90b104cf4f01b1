"""``continuation import codex|claude|gemini FILE``: build (or complete) a thread from a transcript.

Prints a short report (``--json``: the full report). Damaged content (torn or malformed lines,
unknown record types, a NUL tail) is reported and skipped: the exit code stays 0. A file that
cannot be read at all, or holds nothing of the runtime's conversation (another runtime's
transcript, not a transcript, a subagent's records only), is one line on stderr and exit 1,
and no thread is created; a transcript with no input or call yet is a warning, exit 0, no
thread. Ctrl-C leaves nothing behind: a thread the import created is removed with its events. An import running over 2 s shows a
progress line on stderr when stderr is a terminal (``--progress``: also when it is not;
``--no-progress``: never; see :mod:`continuation.importers.progress`).
"""
from __future__ import annotations

import os
import sys

from continuation.commands import CommandError, add_json_arg, open_engine
from continuation.commands.output import echo, emit_json


def register(sub) -> None:
    p = sub.add_parser("import", help="import a Codex CLI rollout, a Claude Code or a Gemini CLI "
                       "session transcript")
    p.add_argument("runtime", choices=["codex", "claude", "gemini"], help="which runtime wrote FILE")
    p.add_argument("file", metavar="FILE", help="the transcript: a Codex rollout (.jsonl), a "
                   "Claude Code session (.jsonl) or a Gemini CLI session (.json/.jsonl)")
    add_json_arg(p)
    live = p.add_mutually_exclusive_group()
    live.add_argument("--session-over", dest="session_over", action="store_const", const=True,
                      help="the session that wrote FILE has ended: a turn left open at the end "
                           "is cut (default: cut only when the hooks recorded the session as "
                           "ended or its owner as dead; with no recorded session the last turn "
                           "is left open)")
    live.add_argument("--live", dest="session_over", action="store_const", const=False,
                      help="the session is still running: leave its last turn open")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_const", const=True,
                       help="a progress line on stderr for an import running over 2 s, even "
                            "when stderr is not a terminal (default: only on a terminal)")
    shown.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                       help="never a progress line")
    p.add_argument("--session-id", help="the session (thread) to import into "
                   "(default: the id FILE names, else its file name)")
    p.set_defaults(func=cmd_import, session_over=None, progress=None)


def cmd_import(args) -> int:
    from continuation.importers import TranscriptUnreadable, import_transcript
    from continuation.importers.progress import Progress

    try:
        size = os.path.getsize(args.file)
    except OSError:
        size = None  # import_transcript says why it cannot read it
    progress = Progress(size, enabled=args.progress)
    try:
        with open_engine() as engine:
            report = import_transcript(args.runtime, args.file, engine=engine,
                                       session_over=args.session_over,
                                       session_id=args.session_id, progress=progress)
    except TranscriptUnreadable as exc:
        raise CommandError(str(exc)) from None
    finally:
        progress.end_line()
    if report.nothing_imported:
        sys.stderr.write(f"continuation: warning: nothing to import from {args.file}: "
                         f"{report.nothing_imported}\n")
    if args.json:
        emit_json(report.to_dict())
    else:
        echo(report.render())
    return 0
