"""Transcript importers: build a thread from a Codex rollout, a Claude Code or a Gemini CLI session file.

``import_transcript(runtime, path)`` reads the file (never failing on damaged content: see
:mod:`.reader`), parses it into runtime-neutral ops (:mod:`.codex`, :mod:`.claude`,
:mod:`.timeline`) and writes them through the engine in one ``append_many`` transaction,
merging with what the hooks or an earlier import already recorded (:mod:`.apply`). Events are
written with ``source="import:codex"`` / ``"import:claude"``.

Decisions (details in each module's docstring):

- Inputs are real user prompts only; harness fragments, compaction summaries, hook context,
  meta / caveat / local-command records, tool results and sidechains are skipped and counted.
- Ids are the hooks' ids, so hook-recorded and imported threads merge: Claude ``promptId``
  (else the record uuid); Codex ``derived_input_id(thread, turn, ordinal, text)``.
- Slash commands are not inputs (no UserPromptSubmit fires for them); ``/compact`` is reported
  as the handled boundary and the ``compact_boundary`` / ``compacted`` record gives a
  ``boundary`` event (#20370: the command must not be re-run after the compaction).
- A turn that never completed is *cut* crash-style: ``turn_aborted`` with a reason starting
  ``crashed:``, targeted at that turn (so a turn recorded live by the hooks is untouched);
  its inputs become interrupted, or reconciling when a tool call of the turn has no outcome.
  Mid-file this happens when the next turn / prompt starts; at the end of the file only when
  the session is over (``session_over``; by default: the runtime processes the hooks recorded
  for the thread ended or died; with none recorded the turn is left open). An end-of-file cut
  is reason ``crashed: end_of_transcript``: when the file grows and a later import brings the
  turn's real completion, the turn's inputs are re-delivered to it and it completes.
- Rewinds (Claude branches, Codex ``thread_rolled_back``): ``rolled_back`` to just before the
  abandoned inputs, or ``input_superseded`` when later inputs were already recorded.
- Aborts and "[Request interrupted by user]" give ``turn_aborted`` (reason ``user_interrupt``
  / ``turn_aborted: <reason>``).
- Input typed while busy (Claude ``queue-operation`` enqueue during a turn) is admitted
  ``queued`` and delivered to the turn that takes it; never taken: stays ``queued``.
- Plan tools (Codex ``update_plan``, Claude ``TodoWrite``) give ``plan_updated``; the final
  assistant message of a completed turn is an ``assistant_claim``.
- Re-import: exactly-once admission by id, per-fact checks against the thread's state, and an
  import cursor (``transcript_imported`` event: path, offset, prefix sha256) so a second import
  of a grown file only writes what follows the cursor. Nothing is written twice.
- Memory does not follow the file's size: records are read one at a time, ops go to an op log
  spilled to an unlinked temporary file (:mod:`.oplog`), outputs are held only as their stored
  excerpt, the Claude DAG is compact (:mod:`.parent_map`); a long import can show a progress
  line on stderr (:mod:`.progress`). ``docs/importing.md`` has the figures.
- The report counts repeated tool calls: executions of an identical (tool, args) within one
  turn beyond the first (the Codex fixture: ``echo line >> notes.txt`` ran 46 times).
"""
from __future__ import annotations

import os
from pathlib import Path

from continuation.store.log_store import thread_key_for
from continuation.host.userfiles import NotRegularFile, open_regular
from continuation.importers.apply import Applier, read_cursor, session_over_default
from continuation.importers.reader import TranscriptReader
from continuation.importers.report import ImportReport
from continuation.importers.timeline import Timeline

RUNTIMES = ("codex", "claude", "gemini")
PRESCAN_RECORDS = 2000


class TranscriptUnreadable(Exception):
    """The transcript file cannot be opened at all (missing, a folder, no permission)."""


class NothingRecognised(TranscriptUnreadable):
    """Nothing in the file is a record of the runtime's conversation (another runtime's
    transcript, not a transcript, only a subagent's records): no thread is created."""


def _parser(runtime: str):
    if runtime == "codex":
        from continuation.importers import codex

        return codex
    if runtime == "claude":
        from continuation.importers import claude

        return claude
    if runtime == "gemini":
        from continuation.importers import gemini

        return gemini
    raise ValueError(f"unknown runtime {runtime!r} (expected one of {', '.join(RUNTIMES)})")


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise TranscriptUnreadable(f"no such file: {path}")
    if path.is_dir():
        raise TranscriptUnreadable(f"{path} is a folder, not a transcript file")
    try:
        with open_regular(path) as fh:
            fh.read(1)
    except NotRegularFile as exc:
        raise TranscriptUnreadable(str(exc)) from None
    except OSError as exc:
        raise TranscriptUnreadable(f"cannot read {path}: {exc.strerror or exc}") from None


def _prescan(module, path: Path) -> tuple[str | None, str | None]:
    """The session id and cwd, from the first records that name them."""
    scratch = ImportReport("prescan", str(path))
    sid = cwd = None
    for n, line in enumerate(TranscriptReader(path, scratch)):
        try:
            s, c, _ = module.session_hint(line.record)
        except (TypeError, AttributeError, ValueError, KeyError):
            continue  # a damaged record: the import proper reports it
        sid = sid or (s if isinstance(s, str) and s else None)
        cwd = cwd or (c if isinstance(c, str) and c else None)
        if (sid and cwd) or n >= PRESCAN_RECORDS:
            break
    return sid, cwd


def import_transcript(runtime: str, path, *, engine=None, session_over: bool | None = None,
                      session_id: str | None = None, progress=None) -> ImportReport:
    """Import one transcript into its thread; returns what was read, written and skipped.

    ``session_over``: whether the runtime session that wrote the file has ended (a turn left
    running at the end of the file is then cut, crash-style). ``None`` decides it from the
    store: over only when the hook-recorded runtime processes of this thread ended or died;
    with none recorded the last turn is left open (the report says so). ``progress``: a
    :class:`~.progress.Progress` told how far reading and writing have got (none: silent).
    """
    module = _parser(runtime)
    path = Path(path)
    _check_readable(path)
    resolved = str(path.resolve())
    sid, cwd = _prescan(module, path)
    sid = session_id or sid or path.stem
    from continuation.session.engine import workspace_root

    own_engine = engine is None
    timeline = None
    if own_engine:
        from continuation.session.engine import Engine

        engine = Engine()
    try:
        existing = engine.find_thread(runtime, sid)
        report = ImportReport(runtime, resolved, session_id=sid,
                              thread_key=thread_key_for(runtime, sid))
        cursor = read_cursor(existing, resolved) if existing is not None else None
        reader = TranscriptReader(path, report, hash_upto=cursor["offset"] if cursor else None)
        timeline = Timeline(runtime, report)
        timeline.thread_key = thread_key_for(runtime, sid)
        parser = {"codex": "CodexParser", "claude": "ClaudeParser", "gemini": "GeminiParser"}[runtime]
        parser = getattr(module, parser)(timeline)
        for line in reader:
            if progress is not None:
                progress.reading(line.end)
            timeline.at(line.number, line.end)
            try:
                parser.feed(line.record)
            except (TypeError, AttributeError, ValueError, KeyError) as exc:
                # valid JSON with fields of unexpected types: this record is reported, the
                # import goes on (what the record had added to the timeline before failing
                # stays: each timeline step is complete in itself)
                report.malformed.append({"line": line.number, "offset": line.end,
                                         "reason": f"unreadable record ({type(exc).__name__}: "
                                                   f"{str(exc)[:120]})"})
        timeline.at(report.lines, reader.cursor)
        parser.finish()
        if existing is None:
            # a thread is created only for a conversation: it would become the default
            # thread of later commands
            problem = nothing_recognised(runtime, path, report)
            if problem:
                raise NothingRecognised(problem)
            if not timeline.ops.facts:
                report.nothing_imported = ("the transcript holds no user input or tool call "
                                           "yet; no thread was created")
                report.thread_created = False
                return report
        skip_upto = -1
        if cursor and reader.prefix_digest == cursor.get("prefix_sha256"):
            skip_upto = int(cursor["offset"])
            report.resumed = True
            report.cursor_from = skip_upto
        report.cursor_to = reader.cursor
        thread = existing or engine.thread(runtime, sid, workspace_root=workspace_root(cwd))
        report.thread_created = existing is None
        try:
            _apply(thread, timeline, report, runtime, path, resolved, reader, skip_upto,
                   session_over, progress)
        except BaseException:
            if existing is None:  # Ctrl-C or a failure: the new thread goes with its events
                engine.store.delete_thread_rows(thread.key)
            raise
        return report
    finally:
        if timeline is not None:
            timeline.ops.close()  # its temporary file, if it spilled
        if own_engine:
            engine.close()


def _apply(thread, timeline, report, runtime, path, resolved, reader, skip_upto, session_over,
           progress) -> None:
    owner_unknown = False
    if session_over is not None:
        over = session_over
    else:
        over, owner_unknown = session_over_default(thread)
    new_cursor = {"path": resolved, "offset": reader.cursor,
                  "prefix_sha256": reader.cursor_digest, "records": report.records_read,
                  "size": _size(path), "runtime": runtime}
    applier = Applier(thread, timeline, report, source=f"import:{runtime}",
                      skip_upto=skip_upto, session_over=over, cursor=new_cursor,
                      owner_unknown=owner_unknown, progress=progress)
    applier.run()
    if progress is not None:
        progress.done(report.bytes_read, sum(report.events_written.values()))
    states = {r.input_id: r.state for r in thread.inputs()}
    for p in report.prompts:
        if p.get("kind") == "input":
            p["input_id"] = applier.alias.get(p["input_id"], p["input_id"])
            p["state"] = states.get(p["input_id"], "unknown")


def nothing_recognised(runtime: str, path: Path, report: ImportReport) -> str | None:
    """Why nothing in the file is the runtime's conversation, or None when something is:
    no JSON record at all, only record types the runtime does not write (naming the runtime
    whose transcript it looks like), or only a subagent's records (naming whose)."""
    unknown = sum(report.unknown_types.values())
    sidechain = sum(n for k, n in report.skipped_by_type.items() if k.endswith(":sidechain"))
    if report.records_read - unknown - sidechain > 0 or not report.lines:
        return None  # something is; or the file is empty (a session that wrote nothing yet)
    if not report.records_read:
        return (f"{path} is not a {runtime} transcript: none of its {report.lines} line(s) is a "
                "JSON record; nothing was imported")
    if sidechain and not unknown:
        return _subagent_message(path, sidechain)
    other = guess_runtime(path, exclude=runtime)
    hint = (f"; it looks like a {other} transcript: `continuation import {other} {path}`"
            if other else "")
    return (f"{path} is not a {runtime} transcript: its {report.records_read} record(s) are "
            f"of types a {runtime} transcript does not have ("
            + ", ".join(sorted(report.unknown_types)[:5]) + f"){hint}; nothing was imported")


def guess_runtime(path: Path, *, exclude: str) -> str | None:
    """The other runtime whose pre-scan finds a session id in the file."""
    for other in RUNTIMES:
        if other != exclude and _prescan(_parser(other), path)[0]:
            return other
    return None


def _subagent_message(path: Path, records: int) -> str:
    """A Claude Code subagent's transcript: its records are the sidechain of a session."""
    session = agent = None
    for line in TranscriptReader(path, ImportReport("scan", str(path))):
        rec = line.record
        session = session or (rec.get("sessionId") if isinstance(rec.get("sessionId"), str) else None)
        agent = agent or (rec.get("agentId") if isinstance(rec.get("agentId"), str) else None)
        if session and agent:
            break
    whose = (f"subagent {agent} of session {session}" if agent and session else
             f"a subagent of session {session}" if session else "a subagent")
    parent = next((p for p in (path.parent / f"{session}.jsonl",
                               path.parent.parent.parent / f"{session}.jsonl")
                   if session and p.is_file() and p != path), None)
    where = (f"import the session's own transcript: `continuation import claude {parent}`"
             if parent else f"import that session's own transcript ({session}.jsonl)"
             if session else "import the session's own transcript")
    return (f"{path} holds only a subagent's conversation ({records} sidechain record(s)): "
            f"{whose}; a subagent's work is part of its session, not a thread of its own: "
            f"{where}; nothing was imported")


def _size(path: Path) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


__all__ = ["ImportReport", "NothingRecognised", "TranscriptUnreadable", "import_transcript",
           "RUNTIMES"]
