"""Write a parsed timeline into a thread: one ``append_many`` transaction per import.

Merging with what is already recorded (hooks, an earlier import) is what makes re-import and
hook + import safe. Each op is checked against the thread's current state, inside the same
transaction, right before its event is written:

- input admitted: exactly-once by id (the store's rule); counted as a duplicate;
- tool started / finished: by call id (a known call, a known outcome);
- turn completed / aborted: only while the turn is still running in the store;
- assistant claim: not when the same text is already claimed for the turn (the Stop hook
  stores ``last_assistant_message``, the same text);
- boundary: the n-th compaction of the transcript is written only while the thread holds
  fewer than n compact boundaries (PreCompact / SessionStart(compact) hooks record them too);
- plan update: only together with a newly recorded tool call;
- rollback (rewind): ``rolled_back`` to just before the first abandoned input when the
  abandoned inputs are the tail of the log; when later inputs exist (hooks already recorded
  the new branch), the abandoned inputs that are still live are ``input_superseded`` instead,
  so nothing recorded after them is undone.

The import cursor: a ``transcript_imported`` event (path, byte offset of the end of the last
complete record, sha256 of the bytes before it) closes each import that read something new.
The next import of the same path whose prefix hash matches writes only ops from records after
that offset (the end-of-transcript decisions are always re-evaluated); when the prefix changed,
the whole file is merged again through the checks above.
"""
from __future__ import annotations

import json
from collections import Counter

from statemachine import events as ev
from statemachine.lifecycle import allowed
from statemachine.reducer import call_key

from continuation.importers.report import ImportReport
from continuation.importers.timeline import Op, Timeline
from continuation.session import facts
from continuation.session.turn_rules import carried, sent_twin

CURSOR_EVENT = "transcript_imported"


def read_cursor(thread, path: str) -> dict | None:
    return thread.store.newest_event_with_path(thread.key, CURSOR_EVENT, path)


def owner_verdict(thread) -> str:
    """The recovery module's owner check of the runtime processes the hooks recorded for this
    thread: ``alive``, ``unknown`` (none recorded, or on another host), ``ended``, ``dead``."""
    from continuation.recovery.interrupted import owners

    verdict, _ = owners(thread)
    return verdict


def session_over_default(thread) -> tuple[bool, bool]:
    """(session over?, owner unknown?) when the caller did not say. Only a recorded owner
    that ended or died proves the session over: with no marker (hooks not installed) the
    session may still be writing the file, and cutting its running turn would be wrong."""
    verdict = owner_verdict(thread)
    return verdict in ("ended", "dead"), verdict == "unknown"


#: The reason of a turn cut because the file ended inside it: a later import of the grown file
#: may still bring the turn's real end, which then replaces the cut (see ``_reopen_cut``).
END_OF_TRANSCRIPT_CUT = "crashed: end_of_transcript"


class Applier:
    def __init__(self, thread, timeline: Timeline, report: ImportReport, *, source: str,
                 skip_upto: int, session_over: bool, cursor: dict, owner_unknown: bool = False,
                 progress=None):
        self.thread = thread
        self.timeline = timeline
        self.report = report
        self.source = source
        self.skip_upto = skip_upto
        self.session_over = session_over
        self.owner_unknown = owner_unknown  # session_over was a default: no owner recorded
        self.cursor = cursor
        self.progress = progress
        self.view = thread.store.state_view(thread.key)
        self.store = thread.store
        #: transcript input id -> the id it was recorded under (a queued twin, see _op_admit)
        self.alias: dict[str, str] = {}

    def _load(self) -> None:
        """What is already recorded, read inside the import's transaction (a hook writing
        meanwhile waits for it), and kept up to date while writing."""
        self._start_seq = self.store.last_seq(self.thread.key)
        # the claims table has no turn index: read it once
        self._claims = {(c["turn_id"], c["text"]) for c in self.thread.store.claims(self.thread.key)}
        self._boundaries: dict[str, int] = self.store.event_counts_by_kind(self.thread.key,
                                                                           ev.BOUNDARY)

    def run(self) -> None:
        self._yielded: list[str] = []
        results = self.thread.store.append_many(self.thread.key, self._events(), source=self.source)
        for etype, r in zip(self._yielded, results):
            if r.outcome == "duplicate":  # the store's own exactly-once check caught it
                self.report.events_written[etype] -= 1
                self.report.already_recorded += 1
        self.report.events_written += Counter()  # drop zero counts

    # -- the event stream (evaluated inside the transaction) -----------------------------------
    def _events(self):
        self._load()  # the first item is pulled inside append_many's transaction
        written_any = False
        total = len(self.timeline.ops)
        for n, op in enumerate(self.timeline.ops):
            if self.progress is not None:
                self.progress.writing(n, total)
            if op.kind != "end" and op.offset <= self.skip_upto:
                if op.kind == "admit":
                    self.report.duplicates += 1  # imported before (the cursor covers it)
                continue
            for etype, data in self._translate(op):
                written_any = True
                self.report.events_written[etype] += 1
                self._yielded.append(etype)
                yield etype, data
        if written_any or self.cursor["offset"] > self.skip_upto:
            self.report.events_written[CURSOR_EVENT] += 1
            self._yielded.append(CURSOR_EVENT)
            yield CURSOR_EVENT, self.cursor

    def _translate(self, op: Op):
        handler = getattr(self, f"_op_{op.kind}")
        return handler(op.data) or ()

    def _known(self) -> list:
        self.report.already_recorded += 1
        return []

    def _op_admit(self, d):
        if self.view.get_input(d["input_id"]) is not None:
            self.report.duplicates += 1
            return []
        twin = sent_twin(self.view, d["text"], d["turn_id"]) if d["turn_id"] else None
        if twin is not None:
            # this prompt was recorded already under another id: an earlier import of the
            # shorter file left it queued (no turn), or the hooks delivered that queued input
            # into this turn. It is the same input: delivered, never admitted twice.
            self.alias[d["input_id"]] = twin.input_id
            self.report.duplicates += 1
            if twin.turn_id == d["turn_id"] or not allowed(twin.state, "delivered"):
                return []
            return [facts.input_delivered(twin.input_id, d["turn_id"], "import:queued_then_sent")]
        self.report.inputs_admitted += 1
        return [facts.input_admitted(d["input_id"], d["text"], turn_id=d["turn_id"],
                                     ordinal=d["ordinal"], queued=d["queued"],
                                     id_source=d["id_source"], attachments=d.get("attachments"))]

    def _op_deliver(self, d):
        d = {**d, "input_id": self.alias.get(d["input_id"], d["input_id"])}
        rec = self.view.get_input(d["input_id"])
        if rec is None or not allowed(rec.state, "delivered"):
            return self._known()
        if rec.state == "pending" and rec.turn_id == d["turn_id"]:
            return self._known()
        return [facts.input_delivered(d["input_id"], d["turn_id"])]

    def _op_tool_started(self, d):
        # keyed as the reducer keys it: a call id reused in another turn is a new call
        key = call_key(self.view, d["call_id"], d["turn_id"], starting=True)
        if self.view.get_call(key) is not None:
            return self._known()
        return [facts.tool_started(d["call_id"], d["tool"], d["args"], d["turn_id"])]

    def _op_plan(self, d):
        # written right after its tool_started; a call known before this import was skipped,
        # and its plan with it (the PreToolUse hook records both)
        call = self.view.get_call(d["call_id"])
        if call is not None and call.started_seq <= self._start_seq:
            return self._known()
        return [facts.plan_updated(d["tool"], d["items"], d["call_id"])]

    def _op_tool_finished(self, d):
        call = self.view.get_call(call_key(self.view, d["call_id"], d["turn_id"]))
        if call is not None and (call.finished_seq is not None
                                 or call.status not in ("in_flight", "unknown")):
            return self._known()
        # the output is already its excerpt (cut when the op was made, see timeline)
        return [facts.tool_finished(d["call_id"], d["status"], exit_code=d.get("exit_code"),
                                    output=d.get("output"), turn_id=d["turn_id"])]

    def _running(self, turn_id) -> bool:
        turn = self.view.get_turn(turn_id) if turn_id else None
        return turn is not None and turn.status == "running"

    def _op_turn_completed(self, d):
        if self.view.get_turn(d["turn_id"]) is None:
            return []  # a turn with no input and no call (e.g. only a compaction)
        out = []
        if not self._running(d["turn_id"]):
            out = self._reopen_cut(d["turn_id"])
            if not out:
                return self._known()
        out += carried(self.view, d["turn_id"], "import:carry")
        return out + [facts.turn_completed(d["turn_id"], f"import:{d['how']}")]

    def _last_end(self, turn_id) -> dict | None:
        """The latest recorded end (completed / aborted) of ``turn_id``, with its source."""
        row = self.store.newest_event_of_turn(self.thread.key, (ev.TURN_COMPLETED, ev.TURN_ABORTED),
                                              turn_id)
        if not row:
            return None
        try:
            data = json.loads(row[1])
        except ValueError:
            return None
        return {"type": row[0], "data": data if isinstance(data, dict) else {}, "source": row[2]}

    def _reopen_cut(self, turn_id) -> list:
        """The turn's real end arrived after an earlier import cut it because the file ended
        inside it (the file was still being written): re-deliver its interrupted inputs to the
        same turn (which restarts it in the reducer) so the completion that follows applies.
        Nothing is admitted again; a cut made for any other reason stands."""
        last = self._last_end(turn_id)
        if last is None or last["type"] != ev.TURN_ABORTED or \
                not str(last["data"].get("reason", "")).startswith(END_OF_TRANSCRIPT_CUT) or \
                not str(last["source"] or "").startswith("import:"):
            return []
        turn = self.view.get_turn(turn_id)
        out = []
        for input_id in (turn.input_ids if turn else []):
            rec = self.view.get_input(input_id)
            if rec is not None and rec.turn_id == turn_id and rec.state == "interrupted":
                out.append(facts.input_delivered(input_id, turn_id,
                                                 "import:reopened_end_of_transcript_cut"))
        if out:
            self.report.reopened_turns.append(turn_id)
        return out

    def _op_turn_aborted(self, d):
        if self.view.get_turn(d["turn_id"]) is None:
            return []
        if not self._running(d["turn_id"]):
            return self._known()
        return [facts.turn_aborted(d["turn_id"], d["reason"])]

    def _op_claim(self, d):
        from continuation.store.log_store import _sql_text

        key = (d["turn_id"], _sql_text(d["text"]))
        if key in self._claims:
            return self._known()
        self._claims.add(key)
        return [facts.assistant_claim(d["text"], d["turn_id"], d["via"])]

    def _op_boundary(self, d):
        if self._boundaries.get(d["kind"], 0) >= d["nth"]:
            return self._known()
        self._boundaries[d["kind"]] = self._boundaries.get(d["kind"], 0) + 1
        data = {k: v for k, v in d.items() if k != "nth"}
        data["via"] = "import"
        return [(ev.BOUNDARY, data)]

    def _op_rollback(self, d):
        d = {**d, "input_ids": [self.alias.get(i, i) for i in d["input_ids"]]}
        recs = [self.view.get_input(i) for i in d["input_ids"]]
        live = [r for r in recs if r is not None and r.state not in ("rolled_back", "superseded")]
        if not live:
            return self._known()
        first = min(r.admitted_seq for r in live)
        abandoned = set(d["input_ids"])
        # inputs an earlier rollback already removed are no later work to protect
        later = [r for r in self.view.all_inputs()
                 if r.admitted_seq > first and r.input_id not in abandoned
                 and r.state not in ("rolled_back", "superseded")]
        if not later:
            return [(ev.ROLLED_BACK, {"to_seq": first - 1, "reason": d["reason"],
                                      "input_ids": [r.input_id for r in live]})]
        return [(ev.INPUT_SUPERSEDED, {"input_id": r.input_id, "reason": d["reason"]})
                for r in live if allowed(r.state, "superseded")]

    def _op_end(self, d):
        out = []
        self.report.session_over = self.session_over
        if not self.session_over:
            if d["running"] and self.owner_unknown:
                self.report.notes.append(
                    f"{len(d['running'])} turn(s) still running at the end of the file left open"
                    " (no runtime process recorded for this session, so it may still be"
                    " running); pass --session-over to cut")
            return out
        for turn_id in d["running"]:
            t = self.timeline.turns.get(turn_id)
            reason = f"{END_OF_TRANSCRIPT_CUT} (the transcript ends inside this turn and its" \
                     " session is over)"
            if turn_id not in d["complete_if_over"]:
                self.report.cut_turns.append({"turn_id": turn_id, "reason": reason,
                                              "open_calls": list(t.open_calls) if t else [],
                                              "inputs": list(t.texts) if t else []})
            if not self._running(turn_id):
                continue
            if turn_id in d["complete_if_over"]:
                text = d["claims"].get(turn_id)
                if text:
                    out += self._op_claim({"text": text, "turn_id": turn_id,
                                           "via": "import:inferred_end"})
                out += carried(self.view, turn_id, "import:carry")
                out.append(facts.turn_completed(turn_id, "import:inferred_end"))
                continue
            out.append(facts.turn_aborted(turn_id, reason))
        return out
