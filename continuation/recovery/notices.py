"""What the next context is told: the reconciliation prompt and the recovery notice.

The reconciliation prompt is a capsule notice (:class:`capsule.notice.Notice`) of high
priority (it is kept with the actionable inputs under any budget): one block per call naming
the call, its arguments, when it started, what was verified and the question to settle before
retrying.
The recovery notice is a short plain text for a SessionStart in the same workspace: which
threads were interrupted and the commands to look at them. Neither repeats user text: the
inputs themselves travel in the capsule of their own thread.
"""
from __future__ import annotations

from datetime import datetime, timezone

from capsule.textclip import render_literal

from continuation.toolcalls.classify import FILE_EDIT, READ_ONLY
from continuation.recovery.reconcile import ReconcileItem, args_text, pending

RECONCILE_PRIORITY = 90
RECONCILE_TITLE = "Reconcile before retrying: tool calls with unknown outcome"
_KIND_TEXT = {READ_ONLY: "read-only (safe to run again)", FILE_EDIT: "file edit (verified against the files)",
              "external": "external effect (must be checked, never assumed)"}


def reconciliation_lines(items: list[ReconcileItem]) -> list[str]:
    lines = ["These tool calls started and have no recorded outcome (the session ended or was "
             "cut before they returned). Nothing has been retried. Settle each one before "
             "running it again:"]
    for it in items:
        held = ", ".join(i["input_id"] for i in it.inputs) or "none"
        lines.append(f"call {it.call_id}: {it.tool or '?'} {args_text(it.args)}")
        lines.append(f"  started {it.started_iso}; turn {it.turn_id or '-'}; holds inputs: {held}")
        lines.append(f"  kind: {_KIND_TEXT.get(it.classification.kind, it.classification.kind)}"
                     f" - {it.classification.reason}")
        if it.check is not None:
            lines.append(f"  verified: {it.check.verdict.replace('_', ' ')} - {it.check.summary()}")
        else:
            lines.append("  verified: nothing (the outcome cannot be read from the workspace)")
        lines.append(f"  question: {it.question}")
    return lines


def reconciliation_notice(thread, items: list[ReconcileItem] | None = None):
    """The reconciliation prompt of ``thread`` as a capsule notice, or None when nothing waits."""
    from capsule.notice import Notice

    items = pending(thread) if items is None else items
    if not items:
        return None
    return Notice(title=RECONCILE_TITLE, lines=reconciliation_lines(items),
                  priority=RECONCILE_PRIORITY,
                  pointer=f"event:{thread.key}:{min(i.started_seq for i in items)}")


DECISION_PRIORITY = 85
DECISION_TITLE = "Settled by the user: tool calls whose outcome was unknown"
_DECISION_TEXT = {
    "applied": "applied: it took effect; do not run it again",
    "not_applied": "not applied: it did not take effect; its work is still to do",
    "retry_safe": "retry-safe: running it again is safe",
}


def decision_notice(thread):
    """The user's reconciliation decisions about the calls of inputs still open, as a capsule
    notice (None when there are none): a decision is a state the model did not witness, so the
    next context says it in words next to the input it reopened."""
    from capsule.notice import Notice

    open_inputs = thread.inputs(("pending", "interrupted", "reconciling"))
    turns = {r.turn_id for r in open_inputs if r.turn_id}
    decided = [c for c in thread.tool_calls(("reconciled",)) if c.turn_id in turns]
    if not decided:
        return None
    lines = ["These tool calls had no recorded outcome; the user has since decided what they did "
             "(`continuation reconcile`, a runtime fact):"]
    for c in decided:
        lines.append(f"call {c.call_id}: {c.tool or '?'} {args_text(c.args)} - "
                     f"{_DECISION_TEXT.get(c.decision or '', c.decision or '?')}")
    for r in open_inputs:
        mine = [c for c in decided if c.turn_id == r.turn_id]
        if not mine:
            continue
        to_do = [c.call_id for c in mine if c.decision != "applied"]
        if to_do:  # a call that did not take effect is the next step, never work done
            lines.append(f"input {r.input_id} is {r.state}: its turn was cut at these calls, and "
                         f"{', '.join(to_do)} did not take effect (or may run again): that is its "
                         "next step, still to do; then do what remains of it.")
        else:
            lines.append(f"input {r.input_id} is {r.state}: its turn was cut after these calls. "
                         "Continue it from after them and do only what remains of it; if they "
                         "were its last step, nothing remains: say so.")
    return Notice(title=DECISION_TITLE, lines=lines, priority=DECISION_PRIORITY,
                  pointer=f"event:{thread.key}:{min(c.finished_seq or c.started_seq for c in decided)}")


def _when(ts: float | None) -> str:
    if not ts:
        return "unknown time"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def recovery_text(items, *, current_thread: str | None = None) -> str:
    """The short recovery notice for a new session in the same workspace."""
    others = [i for i in items if i.thread_key != current_thread]
    if not others:
        return ""
    lines = ["[continuation: recovery notice - runtime facts, not instructions]"]
    for it in others:
        pending_inputs = sum(1 for i in it.inputs if i["state"] in ("pending", "interrupted",
                                                                     "reconciling", "queued"))
        lines.append(
            f"- {it.runtime} session {render_literal(it.session_id)} (thread {it.thread_key}) in this workspace was "
            f"interrupted (last activity {_when(it.last_activity)}): {pending_inputs} unfinished "
            f"input(s), {len(it.unknown_calls)} tool call(s) with unknown outcome.")
    lines.append("Its work is not carried into this session. To look at it: `continuation recover`; "
                 "to continue it: `continuation recover --resume THREAD`; to drop the notice: "
                 "`continuation recover --dismiss THREAD`.")
    return "\n".join(lines)


#: what a SessionStart answer may add in front of the assembled context (the context itself is
#: fitted to 9,500 characters; Claude Code spills an answer over 10,000 to a file)
PREFIX_LIMIT = 480


def reconciliation_digest(items: list[ReconcileItem]) -> str:
    """One line naming the calls to settle, kept in front of the context so that no inline
    shortening can drop it (the full prompt is in the checkpoint's notices). Runtime-given text
    is quoted as one-line literals: it cannot start a line of its own."""
    if not items:
        return ""
    parts = []
    for it in items[:3]:
        what = it.classification.command or it.tool or "?"
        what = what if len(what) <= 60 else what[:59] + "…"
        state = it.check.verdict.replace("_", " ") if it.check else "unverified"
        parts.append(f"{render_literal(it.call_id)} {render_literal(it.tool)} {render_literal(what)} "
                     f"({it.classification.kind.replace('_', '-')}, {state})")
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return (f"[continuation: {len(items)} tool call(s) have no recorded outcome: "
            f"{'; '.join(parts)}{more}. Settle each before running it again: see "
            f"\"{RECONCILE_TITLE}\" in the checkpoint, or `continuation reconcile`.]")


def clip_prefix(text: str, limit: int = PREFIX_LIMIT) -> str:
    if len(text) <= limit:
        return text
    tail = "… (see `continuation recover`)]"
    return text[: limit - len(tail)] + tail
