"""The runtime-neutral result of parsing a transcript: an ordered list of operations.

A runtime parser (``codex.py``, ``claude.py``) reads records and calls :class:`Timeline`
methods; the timeline keeps the parser's own picture of turns and tool calls (to decide what a
record means: is a turn running? is this call paired?) and appends :class:`Op` items that
:mod:`.apply` later writes through the engine. Every op carries the byte offset just after the
record that produced it, so a re-import can skip what an earlier import already covered.

Memory: the ops go to an :class:`~.oplog.OpLog` (out of memory past a small buffer), a tool
output is cut to its stored excerpt when its op is made, and the repeated-call counts key each
call's arguments by a digest; what stays in memory per turn, call and input is its ids and
small state, never the bytes of outputs or arguments (``docs/importing.md``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from statemachine.reducer import alias_of

from continuation.importers.oplog import OpLog
from continuation.importers.report import ImportReport
from continuation.session.facts import excerpt, input_identity


@dataclass
class Op:
    kind: str
    data: dict
    offset: int  # byte offset just after the source record
    line: int


@dataclass
class _Turn:
    turn_id: str
    inputs: list[str] = field(default_factory=list)  # input ids, in order
    texts: list[str] = field(default_factory=list)
    status: str = "running"  # running | completed | aborted | cut
    open_calls: list[str] = field(default_factory=list)
    last_assistant: str | None = None  # the last assistant text of the turn
    last_was_text: bool = False  # the turn's latest model output was text, not a tool call
    replied: bool = False  # the model produced output in this turn
    # (tool, digest of the canonical args) -> [count, the args' text once counted twice]
    executions: dict = field(default_factory=dict)
    rolled_back: bool = False  # dropped from the history by a rollback (never counted again)


class Timeline:
    def __init__(self, runtime: str, report: ImportReport):
        self.runtime = runtime
        self.report = report
        self.ops = OpLog()
        self.thread_key: str | None = None
        self.turns: dict[str, _Turn] = {}
        self.order: list[str] = []  # turn ids in the order they started
        self._running: dict[str, None] = {}  # running turn ids, in start order (O(1) updates)
        self.calls: dict[str, dict] = {}  # call key -> {turn_id, tool, finished, runtime_id}
        self.latest: dict[str, str] = {}  # runtime call id -> key of the newest call holding it
        self.inputs: dict[str, dict] = {}  # input id -> {text, turn_id, queued, ...}
        self.compaction_count = 0
        self.offset = 0
        self.line = 0

    # -- position ------------------------------------------------------------------------
    def at(self, line: int, offset: int) -> None:
        """The record being read: ops appended now carry its position."""
        self.line, self.offset = line, offset

    def _op(self, op_kind: str, **data) -> None:
        self.ops.append(Op(op_kind, data, self.offset, self.line))

    # -- turns -----------------------------------------------------------------------------
    def running(self) -> list[_Turn]:
        return [self.turns[t] for t in self._running]

    def turn(self, turn_id: str) -> _Turn:
        """The turn ``turn_id``, started now if new."""
        t = self.turns.get(turn_id)
        if t is None:
            t = self.turns[turn_id] = _Turn(turn_id)
            self.order.append(turn_id)
            self._running[turn_id] = None
        return t

    def _end(self, t: _Turn, status: str) -> None:
        t.status = status
        self._running.pop(t.turn_id, None)

    def complete_turn(self, turn_id: str, claim: str | None = None, *, how: str = "runtime") -> None:
        t = self.turns.get(turn_id)
        if t is None or t.status != "running":
            return
        text = claim if claim else t.last_assistant
        if text:
            self._op("claim", text=text, turn_id=turn_id, via=f"import:{how}")
        self._end(t, "completed")
        self._op("turn_completed", turn_id=turn_id, how=how)
        self._close_calls(t)

    def abort_turn(self, turn_id: str, reason: str, *, interrupt: bool = False) -> None:
        t = self.turns.get(turn_id)
        if t is None or t.status != "running":
            return
        self._end(t, "aborted")
        if interrupt:
            self.report.interrupts += 1
        self._op("turn_aborted", turn_id=turn_id, reason=reason)
        self._close_calls(t)

    def cut_turn(self, turn_id: str, reason: str) -> None:
        """The turn never completed and never will (its process is gone): crash-style end,
        its open calls become unknown outcomes."""
        t = self.turns.get(turn_id)
        if t is None or t.status != "running":
            return
        self._end(t, "cut")
        self.report.cut_turns.append({"turn_id": turn_id, "reason": reason,
                                      "open_calls": list(t.open_calls), "inputs": list(t.texts)})
        self._op("turn_aborted", turn_id=turn_id, reason=f"crashed: {reason}")
        self._close_calls(t)

    def _close_calls(self, t: _Turn) -> None:
        for call_id in t.open_calls:
            if call_id not in self.report.tool_calls_unpaired:
                self.report.tool_calls_unpaired.append(call_id)
        t.open_calls = []

    # -- inputs ----------------------------------------------------------------------------
    def admit(self, text: str, *, turn_id: str | None, input_id: str | None = None,
              queued: bool = False, attachments: list | None = None, deliver: bool = False) -> str:
        """One real user input. Without a runtime id the id is the recording core's hash of
        (thread, turn, ordinal within the turn, text), so hook-recorded and imported inputs
        coincide."""
        t = self.turn(turn_id) if turn_id else None
        ordinal = len(t.inputs) if t else 0  # the inputs first admitted in the turn before it
        input_id, id_source = input_identity(self.thread_key or "", turn_id, ordinal, text,
                                             input_id)
        self.report.inputs_seen += 1
        if queued:
            self.report.queued += 1
        if input_id in self.inputs:
            self.report.duplicates += 1  # the same input twice in one transcript
            return input_id
        self.inputs[input_id] = {"text": text, "turn_id": turn_id, "queued": queued}
        self.report.prompts.append({"kind": "input", "input_id": input_id, "text": text,
                                    "turn_id": turn_id, "queued": queued, "line": self.line})
        if t is not None:
            if t.status != "running":
                # new input under a finished turn's id restarts that turn (as the reducer does)
                t.status, t.replied = "running", False
                self._running[t.turn_id] = None
            t.inputs.append(input_id)
            t.texts.append(text)
            t.last_was_text = False
        self._op("admit", input_id=input_id, text=text, turn_id=turn_id, ordinal=ordinal,
                 queued=queued, attachments=attachments or None, id_source=id_source)
        if queued and deliver and turn_id:
            self._op("deliver", input_id=input_id, turn_id=turn_id)
        return input_id

    def rename_input(self, old: str, new: str) -> None:
        """An input admitted under a derived id turns out to carry a runtime id (a queued text
        folded by queue order, later sent as a prompt with its own id): use the runtime's id,
        so the import and the hooks name it alike."""
        if old == new or old not in self.inputs or new in self.inputs:
            return
        self.inputs[new] = self.inputs.pop(old)
        for t in self.turns.values():
            t.inputs = [new if i == old else i for i in t.inputs]
        self.ops.rename_input(old, new)  # the admit / deliver ops written so far
        for p in self.report.prompts:
            if p.get("input_id") == old:
                p["input_id"] = new

    def command(self, name: str, *, handled_as: str, turn_id: str | None = None,
                queued: bool = False) -> tuple[dict, dict]:
        """A slash command run by the runtime itself: reported, never admitted as an input."""
        entry = {"command": name, "handled_as": handled_as, "line": self.line, "queued": queued}
        prompt = {"kind": "command", "text": name, "handled_as": handled_as, "turn_id": turn_id,
                  "line": self.line, "state": f"command ({handled_as})"}
        self.report.commands.append(entry)
        self.report.prompts.append(prompt)
        return entry, prompt

    def retract_command(self, entries: tuple[dict, dict]) -> None:
        """A command that turned out to be a prompt for the model (a custom slash command)."""
        entry, prompt = entries
        if entry in self.report.commands:
            self.report.commands.remove(entry)
        if prompt in self.report.prompts:
            self.report.prompts.remove(prompt)

    # -- tool calls ------------------------------------------------------------------------
    def tool_started(self, call_id: str, tool: str, args: dict, turn_id: str | None,
                     plan_items=None) -> None:
        self.report.tool_calls_seen += 1
        key = call_id
        known = self.calls.get(call_id)
        if known is not None:
            if not turn_id or known["turn_id"] in (None, turn_id):
                return
            # the id again in another turn (a provider numbering calls per process): a call of
            # its own, keyed as the reducer keys it
            key = alias_of(call_id, turn_id)
            if key in self.calls:
                return
        self.calls[key] = {"turn_id": turn_id, "tool": tool, "finished": False,
                           "runtime_id": call_id}
        self.latest[call_id] = key
        if turn_id:
            t = self.turn(turn_id)
            t.open_calls.append(key)
            t.last_was_text = False
            t.replied = True
            self._count_execution(t, tool, args)
        self._op("tool_started", call_id=call_id, tool=tool, args=args, turn_id=turn_id)
        if plan_items is not None:
            self._op("plan", call_id=call_id, tool=tool, items=plan_items)

    @staticmethod
    def _count_execution(t: _Turn, tool: str, args) -> None:
        # the args' text (a Write's whole file) is kept only for calls that repeat: the report
        # lists those
        text = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
        key = (tool, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
        seen = t.executions.get(key)
        if seen is None:
            t.executions[key] = [1, None]
        else:
            seen[0] += 1
            seen[1] = text

    def tool_finished(self, call_id: str, status: str, *, exit_code: int | None = None,
                      output: str | None = None) -> None:
        key = self.latest.get(call_id, call_id)  # the newest call holding this id
        call = self.calls.get(key)
        if call is None:
            # an outcome whose call we never saw (torn away, or another file): keep the fact
            self.calls[key] = call = {"turn_id": None, "tool": "", "finished": False}
        if call["finished"]:
            return
        call["finished"] = True
        turn = self.turns.get(call["turn_id"]) if call["turn_id"] else None
        if turn is not None and key in turn.open_calls:
            turn.open_calls.remove(key)
        if key in self.report.tool_calls_unpaired:
            self.report.tool_calls_unpaired.remove(key)  # a late outcome pairs it after all
        self.report.tool_calls_paired += 1
        # the excerpt the event stores, made now: the op log never holds a whole output
        self._op("tool_finished", call_id=call_id, status=status, exit_code=exit_code,
                 output=None if output is None else excerpt(output), turn_id=call["turn_id"])

    def assistant_text(self, turn_id: str | None, text: str) -> None:
        if turn_id and turn_id in self.turns and text.strip():
            t = self.turns[turn_id]
            t.last_assistant = text
            t.last_was_text = True
            t.replied = True

    # -- boundaries ------------------------------------------------------------------------
    def boundary(self, kind: str, trigger: str, **extra) -> None:
        self.compaction_count += 1
        self.report.compactions += 1
        self._op("boundary", kind=kind, trigger=trigger, nth=self.compaction_count, **extra)

    def rollback(self, input_ids: list[str], reason: str) -> None:
        if not input_ids:
            return
        self.report.rollbacks += 1
        self._op("rollback", input_ids=list(input_ids), reason=reason)

    # -- the end ---------------------------------------------------------------------------
    def finish(self) -> None:
        """End of the transcript: turns still running are decided by the applier (cut when the
        session is over, left running while it is live); repeated tool calls are counted."""
        running = [t.turn_id for t in self.running()]
        complete_if_over = [t.turn_id for t in self.running()
                            if self.infer_completion_at_end and t.last_was_text
                            and not t.open_calls and t.inputs]
        claims = {t: self.turns[t].last_assistant for t in complete_if_over}
        for t in self.running():
            for call_id in t.open_calls:
                if call_id not in self.report.tool_calls_unpaired:
                    self.report.tool_calls_unpaired.append(call_id)
        for call_id, call in self.calls.items():  # calls outside any turn, never answered
            if not call["finished"] and not call["turn_id"] and \
                    call_id not in self.report.tool_calls_unpaired:
                self.report.tool_calls_unpaired.append(call_id)
        self.ops.append(Op("end", {"running": running, "complete_if_over": complete_if_over,
                                   "claims": claims}, self.offset, self.line))
        for turn_id in self.order:
            t = self.turns[turn_id]
            for (tool, _), (count, args_text) in t.executions.items():
                if count > 1:
                    self.report.repeated_tool_calls.append({
                        "turn_id": turn_id, "inputs": " | ".join(t.texts), "tool": tool,
                        "args_text": args_text, "count": count, "repeats": count - 1})

    #: Claude Code transcripts older than stop_reason persistence end a turn silently: a final
    #: text reply with no open call counts as completed (set by the Claude parser).
    infer_completion_at_end = False
