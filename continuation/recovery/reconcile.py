"""Tool calls waiting for reconciliation, and recording the user's decision.

A call is waiting when its outcome is unknown: its turn ended (or its session died) after the
intent (PreToolUse) and before any outcome. Each is classified (:mod:`.classify`) and, for file
edits, verified against the files (:mod:`.verify_edits`). The engine never retries a call: the
user (or the agent, asked by the reconciliation prompt) records a decision with
``continuation reconcile CALL --applied|--not-applied|--retry-safe``, a ``reconciled`` fact after
which the held input becomes handled (applied, and its turn had completed) or pending again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from continuation.toolcalls.classify import FILE_EDIT, READ_ONLY, Classification, classify
from continuation.recovery.before_call import refine
from continuation.recovery.verify_edits import APPLIED, DIVERGED, NOT_APPLIED, EditCheck, verify

DECISIONS = ("applied", "not_applied", "retry_safe")


class RecoveryError(LookupError):
    """A call or thread the user named does not exist (one line for the CLI)."""


@dataclass
class ReconcileItem:
    thread_key: str
    call_id: str
    tool: str
    args: dict
    status: str
    started_at: float | None
    turn_id: str | None
    inputs: list[dict]
    classification: Classification
    check: EditCheck | None = None
    suggestion: str | None = None  # a decision the evidence supports; never recorded by itself
    question: str = ""
    started_seq: int = 0

    @property
    def started_iso(self) -> str:
        if not self.started_at:
            return "unknown time"
        return datetime.fromtimestamp(self.started_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")

    def to_dict(self) -> dict:
        return {"thread": self.thread_key, "call_id": self.call_id, "tool": self.tool,
                "args": self.args, "status": self.status, "started_at": self.started_at,
                "started": self.started_iso, "turn_id": self.turn_id, "inputs": self.inputs,
                "classification": self.classification.to_dict(),
                "verification": self.check.to_dict() if self.check else None,
                "suggestion": self.suggestion, "question": self.question}


def args_text(args: dict, limit: int = 300) -> str:
    text = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def base_dir(thread) -> Path | None:
    """Where relative paths of the thread's tools resolve: the session's cwd, else its root."""
    cwd = (thread.meta().get("session_started") or {}).get("cwd")
    from continuation.recovery.interrupted import thread_row

    root = cwd or thread_row(thread)["workspace_root"]
    return Path(root) if root else None


def _question(item: ReconcileItem) -> tuple[str | None, str]:
    c, call = item.classification, item.call_id
    what = f"`{c.command}`" if c.command else f"{item.tool} {args_text(item.args, 120)}"
    if c.kind == READ_ONLY:
        return "retry_safe", (f"{what} only reads: it is safe to run again. Record it with "
                              f"`continuation reconcile {call} --retry-safe`.")
    if c.kind == FILE_EDIT and item.check is not None:
        verdict = item.check.verdict
        if verdict == APPLIED:
            return "applied", (f"The edit is in the file(s): do not apply it again. Confirm with "
                               f"`continuation reconcile {call} --applied`.")
        if verdict == NOT_APPLIED:
            return "not_applied", (f"The edit is not in the file(s): it may be applied again. "
                                   f"Record `continuation reconcile {call} --not-applied` first.")
        if verdict == DIVERGED:
            return None, (f"The file(s) changed in another way since: read them, then record "
                          f"`continuation reconcile {call} --applied` or `--not-applied`.")
        return None, (f"The edit could not be checked: look at the file(s), then record "
                      f"`continuation reconcile {call} --applied` or `--not-applied`.")
    return None, (f"Did {what} take effect? Check its effects (outputs, remote state, processes) "
                  f"before running it again, then record `continuation reconcile {call} "
                  f"--applied`, `--not-applied` or `--retry-safe`.")


def pending(thread, *, include_in_flight_after_crash: bool = True) -> list[ReconcileItem]:
    """The thread's calls whose outcome is unknown, classified and (for edits) verified."""
    calls = thread.tool_calls(("unknown", "in_flight"))  # indexed: not the whole history
    crash_seq = 0
    if include_in_flight_after_crash:
        crash_seq = thread.store.newest_seq_of_type(thread.key, "crash_detected")
    inputs_by_call: dict[str, list[dict]] = {}
    for rec in thread.inputs(("reconciling",)):  # only reconciling inputs wait on calls
        for call_id in rec.unknown_calls or []:
            inputs_by_call.setdefault(call_id, []).append(
                {"input_id": rec.input_id, "state": rec.state, "text": rec.text})
    base = None
    out = []
    for c in calls:
        waiting = c.status == "unknown" or (c.status == "in_flight" and crash_seq
                                             and c.started_seq < crash_seq)
        if not waiting:
            continue
        cls = classify(c.tool, c.args)
        item = ReconcileItem(thread_key=thread.key, call_id=c.call_id, tool=c.tool,
                             args=c.args or {}, status=c.status, started_at=c.started_at,
                             turn_id=c.turn_id, inputs=inputs_by_call.get(c.call_id, []),
                             classification=cls, started_seq=c.started_seq)
        if cls.kind == FILE_EDIT:
            base = base if base is not None else base_dir(thread)
            item.check = verify(c.tool, c.args, base)
            item.check = refine(item.check, thread, c.started_seq, base)
        item.suggestion, item.question = _question(item)
        out.append(item)
    return out


def find_call(engine, call_selector: str, thread_selector: str | None = None):
    """(thread, call record) for a call id or unique prefix, in one thread or across all."""
    threads = [engine.get_thread(thread_selector)] if thread_selector else engine.threads()
    for t in threads:  # an exact id is one indexed read per thread
        exact = t.store.state_view(t.key).get_call(call_selector)
        if exact is not None:
            return t, exact
    matches = []
    for t in threads:
        for c in t.tool_calls():
            if c.call_id == call_selector:
                return t, c
            if c.call_id.startswith(call_selector):
                matches.append((t, c))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RecoveryError(f"no tool call {call_selector!r} (see `continuation reconcile`)")
    raise RecoveryError(f"{call_selector!r} matches {len(matches)} tool calls; give more of the id "
                       "or --thread")


def decide(thread, call_id: str, decision: str, note: str = "", *, source: str = "cli"):
    """Record the user's decision as a ``reconciled`` fact (the only way a call is settled)."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}")
    return thread.reconcile(call_id, decision, note, source=source)
