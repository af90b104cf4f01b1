"""What one import read, recorded and skipped: the numbers ``continuation import`` prints."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from continuation.host.units import size_text

MAX_LISTED = 50  # problem lists are capped in the report; the counts stay exact
MAX_PROMPTS_SHOWN = 20  # the text report lists the latest prompts only


@dataclass
class ImportReport:
    runtime: str
    path: str
    session_id: str | None = None
    thread_key: str | None = None
    # reading
    lines: int = 0
    records_read: int = 0
    bytes_read: int = 0
    malformed: list[dict] = field(default_factory=list)  # {line, offset, reason}
    invalid_utf8_lines: list[int] = field(default_factory=list)
    nul_stripped_lines: list[int] = field(default_factory=list)
    stopped_at: int | None = None  # byte offset where reading stopped (torn line / NUL tail)
    stop_reason: str | None = None
    torn_line: int | None = None
    skipped_by_type: Counter = field(default_factory=Counter)
    unknown_types: Counter = field(default_factory=Counter)
    versions: set = field(default_factory=set)
    # what the transcript holds
    inputs_seen: int = 0
    prompts: list[dict] = field(default_factory=list)  # every user prompt and slash command
    tool_calls_seen: int = 0
    tool_calls_paired: int = 0
    tool_calls_unpaired: list[str] = field(default_factory=list)
    compactions: int = 0
    rollbacks: int = 0
    interrupts: int = 0  # user interrupts and aborted turns
    cut_turns: list[dict] = field(default_factory=list)  # turns that never completed
    queued: int = 0  # inputs typed while a turn was running
    system_prompts: int = 0  # runtime notices sent as user messages (<task-notification>)
    placeholder_results: int = 0  # runtime stand-ins for results never recorded (no outcome)
    commands: list[dict] = field(default_factory=list)
    repeated_tool_calls: list[dict] = field(default_factory=list)
    # what the import did
    inputs_admitted: int = 0
    duplicates: int = 0  # inputs already known (earlier import, hooks)
    already_recorded: int = 0  # other facts already known, not written again
    events_written: Counter = field(default_factory=Counter)
    cursor_from: int = 0
    cursor_to: int = 0
    resumed: bool = False
    session_over: bool | None = None
    notes: list[str] = field(default_factory=list)  # decisions the reader should know about
    reopened_turns: list[str] = field(default_factory=list)  # end-of-file cuts undone
    thread_created: bool | None = None  # False: the thread was there before (or not made)
    nothing_imported: str | None = None  # why no thread was created for a readable file

    @property
    def repeated_tool_calls_total(self) -> int:
        return sum(r["repeats"] for r in self.repeated_tool_calls)

    def to_dict(self) -> dict:
        return {
            "runtime": self.runtime, "path": self.path, "session_id": self.session_id,
            "thread_key": self.thread_key,
            "lines": self.lines, "records_read": self.records_read, "bytes_read": self.bytes_read,
            "malformed_count": len(self.malformed), "malformed": self.malformed[:MAX_LISTED],
            "invalid_utf8_lines": self.invalid_utf8_lines[:MAX_LISTED],
            "nul_stripped_lines": self.nul_stripped_lines[:MAX_LISTED],
            "stopped_at": self.stopped_at, "stop_reason": self.stop_reason,
            "torn_line": self.torn_line,
            "skipped_by_type": dict(sorted(self.skipped_by_type.items())),
            "unknown_types": dict(sorted(self.unknown_types.items())),
            "versions": sorted(self.versions),
            "inputs_seen": self.inputs_seen, "inputs_admitted": self.inputs_admitted,
            "duplicates": self.duplicates, "prompts": self.prompts,
            "tool_calls_seen": self.tool_calls_seen, "tool_calls_paired": self.tool_calls_paired,
            "tool_calls_unpaired": self.tool_calls_unpaired,
            "compactions": self.compactions, "rollbacks": self.rollbacks,
            "interrupts": self.interrupts, "cut_turns": self.cut_turns, "queued": self.queued,
            "system_prompts": self.system_prompts,
            "placeholder_results": self.placeholder_results,
            "commands": self.commands,
            "repeated_tool_calls": self.repeated_tool_calls,
            "repeated_tool_calls_total": self.repeated_tool_calls_total,
            "already_recorded": self.already_recorded,
            "events_written": dict(sorted(self.events_written.items())),
            "cursor_from": self.cursor_from, "cursor_to": self.cursor_to,
            "resumed": self.resumed, "session_over": self.session_over,
            "notes": self.notes, "reopened_turns": self.reopened_turns,
            "thread_created": self.thread_created, "nothing_imported": self.nothing_imported,
        }

    def render(self) -> str:
        """The short human report."""
        out = [f"imported {self.runtime} transcript {self.path}",
               f"  thread {self.thread_key}  (session {self.session_id})",
               f"  read {self.records_read} records from {self.lines} lines "
               f"({size_text(self.bytes_read)})"
               + (f"; resumed at byte {self.cursor_from}" if self.resumed else "")]
        out.append(f"  inputs: {self.inputs_seen} seen, {self.inputs_admitted} admitted, "
                   f"{self.duplicates} already known; queued while busy: {self.queued}")
        shown = self.prompts[-MAX_PROMPTS_SHOWN:]
        if len(self.prompts) > len(shown):
            out.append(f"    ({len(self.prompts) - len(shown)} earlier prompts not shown; see --json)")
        for p in shown:
            what = p.get("state") or p.get("kind")
            out.append(f"    - [{what}] {_clip(p.get('text'), 70)}")
        if self.system_prompts:
            out.append(f"  runtime notifications sent as user messages (not inputs): "
                       f"{self.system_prompts}")
        out.append(f"  tool calls: {self.tool_calls_seen} seen, {self.tool_calls_paired} paired, "
                   f"{len(self.tool_calls_unpaired)} without outcome"
                   + (f" ({self.placeholder_results} with the runtime's 'outcome unknown'"
                      " placeholder)" if self.placeholder_results else ""))
        for r in self.repeated_tool_calls:
            out.append(f"    repeated: {r['tool']} {_clip(r['args_text'], 50)} ran {r['count']} times "
                       f"in one turn ({r['repeats']} repeats) for {_clip(r['inputs'], 40)}")
        out.append(f"  compactions: {self.compactions}; rollbacks: {self.rollbacks}; "
                   f"interrupts/aborts: {self.interrupts}; turns cut: {len(self.cut_turns)}")
        if self.commands:
            out.append("  commands (not inputs): "
                       + ", ".join(c["command"] for c in self.commands[:10]))
        written = sum(self.events_written.values())
        out.append(f"  events written: {written}; facts already recorded: {self.already_recorded}")
        if self.skipped_by_type:
            top = ", ".join(f"{k} {v}" for k, v in self.skipped_by_type.most_common(8))
            more = len(self.skipped_by_type) - 8
            out.append(f"  skipped by type: {top}" + (f" (+{more} more types)" if more > 0 else ""))
        if self.unknown_types:
            out.append("  unknown record types: "
                       + ", ".join(f"{k} {v}" for k, v in sorted(self.unknown_types.items())))
        if self.malformed:
            lines = ", ".join(str(m["line"]) for m in self.malformed[:10])
            out.append(f"  malformed: {len(self.malformed)} (lines {lines}"
                       + (", ..." if len(self.malformed) > 10 else "") + ")")
        if self.invalid_utf8_lines:
            out.append(f"  invalid UTF-8 repaired on {len(self.invalid_utf8_lines)} line(s)")
        if self.stopped_at is not None:
            out.append(f"  stopped at byte {self.stopped_at}: {self.stop_reason}")
        if self.reopened_turns:
            out.append(f"  turns completed after an earlier import cut them at the end of the file: "
                       f"{len(self.reopened_turns)}")
        for note in self.notes:
            out.append(f"  note: {note}")
        return "\n".join(out)


def _clip(text, width: int) -> str:
    text = "" if text is None else " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
