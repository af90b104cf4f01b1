"""The recording core: the rules that turn what a runtime did into a thread's events.

One writer (a hook process, an API thread) holds a :class:`Recorder` over an open thread and
says what happened in runtime-neutral terms: a prompt admitted into a turn, a steer, a tool
call started or finished, a turn completed, aborted or interrupted, a session started or
ended. The rules applied on the way (a new turn cuts the one left running, a prompt without
an id is numbered by its place in the turn, a queued leftover is delivered rather than admitted
twice, inputs left on ended turns are carried into the next clean completion) live here and
in :mod:`.turn_rules`, which the transcript importer applies too. Hook payloads are not
known here: :mod:`continuation.hooks` reads them and calls this.

Light on purpose: the prompt and tool hooks import it (no pydantic, no ``typing``).
"""
from __future__ import annotations

from statemachine import events as ev

from continuation.session import facts
from continuation.host.liveness import marker as session_marker
from continuation.session.engine import Thread


class Recorder:
    """What one writer records into ``thread``, each fact tagged with ``source`` and the
    writer's ``session`` marker (default: the runtime process behind this one)."""

    def __init__(self, thread: Thread, *, source: str, session: dict | None = None):
        self.thread = thread
        self.source = source
        self.session = session if session is not None else session_marker()

    @property
    def _store(self):
        return self.thread.store

    def record(self, etype: str, data: dict):
        return self.thread.record(etype, data, source=self.source, session=self.session)

    # -- reads the rules need ------------------------------------------------------------------
    def running_turns(self) -> list[str]:
        return self._store.running_turn_ids(self.thread.key)

    def newest_running_turn(self) -> str | None:
        return self._store.newest_running_turn(self.thread.key)

    def turn_count(self) -> int:
        return self._store.turn_count(self.thread.key)

    def input_count(self) -> int:
        return self._store.input_count(self.thread.key)

    def input_text(self, input_id: str) -> tuple[bool, str | None]:
        """(known?, its text) of the input ``input_id``."""
        data = self._store.input_data(self.thread.key, input_id)
        return (False, None) if data is None else (True, data.get("text"))

    def calls_of_turn(self, turn: str) -> list[tuple[str, str, dict]]:
        """(call id, status, record) of each call of ``turn``, in start order."""
        return self._store.calls_of_turn(self.thread.key, turn)

    def _same_text_in_turn(self, turn: str, text: str) -> bool:
        """Whether an input of ``turn`` already has exactly this text (compared in Python: the
        runtime's text may hold lone surrogates, which SQLite cannot bind)."""
        return any(d.get("text") == text
                   for d in self._store.inputs_data_of_turn(self.thread.key, turn))

    def _admitted_in_turn(self, turn: str) -> int:
        """How many inputs were first admitted in ``turn`` (the ordinal of the next one):
        inputs delivered into it from earlier turns were admitted before the turn started."""
        record = self._store.turn_data(self.thread.key, turn)
        if record is None:
            return 0
        started = int(record.get("started_seq") or 0)
        seqs = self._store.admitted_seqs(self.thread.key, record.get("input_ids") or [])
        return sum(1 for seq in seqs if seq >= started)

    def view(self):
        """The thread's state as the reducer derives it, read through this writer's store."""
        return self._store.state_view(self.thread.key)

    # -- inputs --------------------------------------------------------------------------------
    def start_turn(self, turn: str) -> None:
        """``turn`` opens: every runtime runs one turn at a time per session (a steer keeps
        its turn id), so any other turn still running was cut without an end (Claude Code's
        Esc sends none). It is aborted: its inputs become interrupted (reconciling with a call
        in flight) instead of staying pending on a turn that will never end."""
        running = self.running_turns()
        if turn in running:
            return  # a steer into the running turn
        for other in running:
            self.thread.turn_aborted(other, reason="cut: the next prompt started a new turn",
                                     source=self.source, session=self.session)

    def admit_prompt(self, text: str, turn: str, input_id: str | None = None, *,
                     typed_while_busy: bool = False):
        """Admit one prompt into ``turn`` (a new turn cuts any other still running); without an
        id, the id is a hash of its place in the turn. ``typed_while_busy``: a steer into the
        running turn, admitted queued and delivered to it at once (as the importer records
        the same prompt from the transcript's queue). Returns the store's answer, its
        ``input_id`` set."""
        from continuation.session.turn_rules import queued_twin

        self.start_turn(turn)
        ordinal = 0 if input_id else self._admitted_in_turn(turn)
        twin = None if input_id and self.input_text(input_id)[0] else queued_twin(
            self.view(), text)
        if twin is not None:
            # an import left this text queued (the file ended while it waited): this prompt
            # sends it; one input, delivered into this turn
            result = self.thread.deliver(twin.input_id, turn, source=self.source,
                                         session=self.session)
            result.input_id = twin.input_id
            return result
        result = self.thread.admit(text, input_id=input_id, turn_id=turn, ordinal=ordinal,
                                   queued=typed_while_busy, source=self.source,
                                   session=self.session)
        if typed_while_busy and result.outcome != "duplicate":
            self.thread.deliver(result.input_id, turn, source=self.source, session=self.session)
        return result

    def steer(self, text: str, turn: str):
        """A prompt typed into the running ``turn`` (see ``typed_while_busy``); the same text
        delivered again in that turn is the same input: ``None``, nothing recorded."""
        if self._same_text_in_turn(turn, text):
            return None
        return self.admit_prompt(text, turn, typed_while_busy=True)

    # -- tool calls ----------------------------------------------------------------------------
    def tool_started(self, call_id: str, tool: str, args: dict, turn: str | None) -> None:
        """A call is about to run; a plan tool's call also states the plan."""
        self.thread.tool_started(call_id, tool, args, turn_id=turn, source=self.source,
                                 session=self.session)
        items = facts.plan_items(tool, args)
        if items is not None:
            self.record(*facts.plan_updated(tool, items))

    def tool_finished(self, call_id: str, status: str, *, exit_code: int | None = None,
                      output: str | None = None, turn: str | None = None) -> None:
        self.thread.tool_finished(call_id, status, exit_code=exit_code,
                                  output=None if output is None else facts.excerpt(output),
                                  turn_id=turn, source=self.source, session=self.session)

    def background_task(self, handle: str, tool, args, call_id: str) -> None:
        """A call left a task running after it returned (a background shell)."""
        self.record(ev.BACKGROUND_TASK, {"handle": handle, "tool": tool, "args": args,
                                         "call_id": call_id})

    def settle_open_calls(self, turns, find_outcomes, *, missing_exit_codes: bool = False) -> None:
        """Calls of ``turns`` with no outcome get the one ``find_outcomes`` reads elsewhere
        (the runtime's transcript: a call refused by a permission rule gets no PostToolUse);
        ``missing_exit_codes``: calls finished without an exit code (Codex's PostToolUse has
        none) get theirs too. ``find_outcomes([(record key, runtime id, turn)])`` returns
        ``{record key: {status, exit_code, output}}`` for what it found."""
        store, key = self._store, self.thread.key
        open_calls: list[str] = []
        no_code: list[str] = []
        for turn in turns:
            record = store.turn_data(key, turn)
            open_calls += (record.get("open_calls") or []) if record else []
            if missing_exit_codes:
                no_code += store.ok_calls_without_exit_code(key, turn)
        if not open_calls and not no_code:
            return
        view = self.view()
        records = {k: view.get_call(k) for k in [*open_calls, *no_code]}
        wanted = [(k, rec.runtime_call_id or k, rec.turn_id)
                  for k, rec in records.items() if rec is not None]
        found = find_outcomes(wanted)
        finished, exit_codes = [], []
        for call_id, outcome in found.items():
            if call_id in open_calls:
                output = outcome["output"]
                finished.append(facts.tool_finished(
                    call_id, outcome["status"], exit_code=outcome["exit_code"],
                    output=facts.excerpt(output) if isinstance(output, str) else "",
                    turn_id=records[call_id].turn_id))
            elif outcome["exit_code"] is not None:
                exit_codes.append((ev.TOOL_EXIT_CODE, {"call_id": call_id,
                                                       "exit_code": outcome["exit_code"]}))
        # one transaction each, not one per call: a long Codex turn settles dozens at once
        store = self.thread.store
        if finished:
            store.append_many(key, finished, source=f"{self.source}:transcript",
                              session=self.session)
        if exit_codes:
            store.append_many(key, exit_codes, source=self.source, session=self.session)

    # -- turns ---------------------------------------------------------------------------------
    def claim(self, text: str, turn: str | None, via: str) -> None:
        """Assistant text: kept as a labelled claim, never as proof that anything was done."""
        self.record(*facts.assistant_claim(text, turn, via))

    def complete_turn(self, turn: str) -> None:
        """``turn`` ended normally: inputs left pending or interrupted on turns that are over
        are delivered into it first, so its completion decides them (:mod:`.turn_rules`)."""
        from continuation.session.turn_rules import carried

        for etype, data in carried(self.view(), turn):
            self.record(etype, data)
        self.thread.turn_completed(turn, source=self.source, session=self.session)

    def abort_turn(self, turn: str, reason: str) -> None:
        """``turn`` was cut (an error, an interrupt): its inputs stay actionable."""
        self.thread.turn_aborted(turn, reason=reason, source=self.source, session=self.session)

    def interrupt(self, turn: str) -> None:
        """The user interrupted ``turn``: no outcome follows for a call in flight (its input
        goes to reconciling)."""
        self.abort_turn(turn, "user_interrupt")

    # -- the session ---------------------------------------------------------------------------
    def session_started(self, source: str, *, transcript_path=None, cwd=None,
                        settings: dict | None = None) -> None:
        self.record(ev.SESSION_STARTED, {"source": source, "transcript_path": transcript_path,
                                         "cwd": cwd})
        if settings:
            self.record(ev.SETTINGS, settings)

    def compaction_summary(self, text: str) -> None:
        """The runtime's compaction summary: model-written, so a claim, never authority."""
        self.record(ev.ASSISTANT_CLAIM, {"text": text, "via": "compact_summary"})

    def session_ended(self, reason: str) -> None:
        for turn in self.running_turns():
            # the session ended while a turn still ran: that turn was cut, not completed
            self.thread.turn_aborted(turn, reason=f"session_end:{reason}", source=self.source)
        self.record(ev.SESSION_ENDED, {"reason": reason})
        self.thread.store.end_sessions(self.thread.key)
