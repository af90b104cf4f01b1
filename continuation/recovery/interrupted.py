"""Interrupted threads: the owner is gone and the thread was not cleanly ended.

A thread *needs crash detection* when it has open work (a running turn, a pending input, a tool
call in flight) and every session marker that could own it is dead on this host (pid gone, or
alive with another start time). Markers of ended sessions (SessionEnd) do not count; a marker on
another host cannot be checked and keeps the thread out of the list. A thread with no marker at
all (recorded through the API, an import) is never judged.

Once ``crash_detected`` is recorded, the thread stays *interrupted* (listed by ``continuation
recover``) while it has interrupted or reconciling inputs or unknown-outcome calls, no live owner,
and neither a later ``recovery_dismissed`` fact nor a later session start (a resume) says the user
has dealt with it.
"""
from __future__ import annotations

import time

from statemachine.lifecycle import ACTIONABLE, PENDING

from continuation.host import liveness

DISMISSED = "recovery_dismissed"  # a fact: the user dismissed the recovery of this thread
NEEDS_CRASH, CRASHED = "needs_crash", "crashed"


class Interrupted:
    """A thread whose owner is gone without a clean end. A plain class, not a dataclass:
    ``status`` imports this module, and ``dataclasses`` (which imports ``inspect``) would be a
    third of that command's start-up."""

    def __init__(self, *, thread_key: str, runtime: str, session_id: str,
                 workspace_root: str | None, status: str, reason: str,
                 last_activity: float | None, owners: list[dict] | None = None,
                 last_checkpoint: dict | None = None, inputs: list[dict] | None = None,
                 unknown_calls: list[dict] | None = None, drift: dict | None = None):
        self.thread_key, self.runtime, self.session_id = thread_key, runtime, session_id
        self.workspace_root = workspace_root
        self.status = status  # needs_crash | crashed
        self.reason, self.last_activity = reason, last_activity
        self.owners = owners if owners is not None else []
        self.last_checkpoint = last_checkpoint
        self.inputs = inputs if inputs is not None else []
        self.unknown_calls = unknown_calls if unknown_calls is not None else []
        self.drift = drift

    def __repr__(self):
        return f"Interrupted({self.thread_key!r}, status={self.status!r}, reason={self.reason!r})"

    def __eq__(self, other):
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @property
    def resume_command(self) -> str:
        return resume_command(self.runtime, self.session_id)


def resume_command(runtime: str, session_id: str) -> str:
    """The runtime's own command that continues a session."""
    if runtime == "codex":
        return f"codex resume {session_id}"
    if runtime == "claude":
        return f"claude --resume {session_id}"
    return f"(resume session {session_id} in {runtime})"


def thread_row(thread) -> dict:
    """The thread's row by key (``Thread.row`` resolves selectors over every thread: O(n))."""
    return thread.store.thread_row_by_key(thread.key)


def _max_seq(thread, etype: str) -> int:
    return thread.store.newest_seq_of_type(thread.key, etype)


def _last_event(thread) -> tuple[int, float | None]:
    return thread.store.newest_event_seq_ts(thread.key)


def has_open_work(thread) -> bool:
    return thread.store.has_open_work(thread.key, PENDING)


def owners(thread, *, exclude: dict | None = None, host: str | None = None) -> tuple[str, list[dict]]:
    """(verdict, markers): ``alive`` if any open marker lives, ``unknown`` if none was recorded
    or one is on another host, ``ended`` if every session ended cleanly, else ``dead``."""
    rows = thread.store.sessions(thread.key)
    if exclude:
        rows = [r for r in rows if not (r["pid"] == exclude.get("pid")
                                        and r["host"] == exclude.get("host"))]
    if not rows:
        return "unknown", []
    open_rows = [r for r in rows if r["ended_at"] is None]
    if not open_rows:
        return "ended", rows
    marked = [{**r, "owner": liveness.owner_status(r, host=host)} for r in open_rows]
    statuses = {m["owner"] for m in marked}
    if liveness.ALIVE in statuses:
        return "alive", marked
    if liveness.UNKNOWN in statuses:
        return "unknown", marked
    return "dead", marked


def _last_checkpoint(thread) -> dict | None:
    row = thread.store.newest_checkpoint_summary(thread.key)
    if not row:
        return None
    import json

    try:
        workspace = json.loads(row[4]) if row[4] else None
    except ValueError:  # a damaged reference: the checkpoint is still worth naming
        workspace = None
    return {"checkpoint_id": row[0], "generation": row[1], "created_at": row[2], "seq": row[3],
            "workspace": workspace if isinstance(workspace, dict) else None}


def _summary_inputs(thread) -> list[dict]:
    return [{"input_id": r.input_id, "state": r.state, "text": r.text, "turn_id": r.turn_id}
            for r in thread.inputs(sorted(ACTIONABLE))]


def _summary_calls(thread, crash_seq: int) -> list[dict]:
    return [{"call_id": c.call_id, "tool": c.tool, "args": c.args, "started_at": c.started_at,
             "status": c.status, "turn_id": c.turn_id}
            for c in thread.tool_calls(("unknown", "in_flight"))
            if c.status == "unknown" or (c.status == "in_flight" and (crash_seq == 0 or
                                                                      c.started_seq < crash_seq))]


def examine(thread, *, exclude: dict | None = None, host: str | None = None) -> Interrupted | None:
    """The thread's recovery state, or None when it is not interrupted."""
    verdict, markers = owners(thread, exclude=exclude, host=host)
    if verdict in ("alive", "unknown"):
        return None
    crash_seq = _max_seq(thread, "crash_detected")
    status = reason = None
    if verdict == "dead" and has_open_work(thread):
        status = NEEDS_CRASH
        pids = ", ".join(f"pid {m['pid']} on {m['host']}" for m in markers)
        reason = f"the owner ({pids}) is gone without a clean end"
    elif crash_seq:
        settled_after = max(_max_seq(thread, DISMISSED), _max_seq(thread, "session_started"))
        crash = thread.events(after=crash_seq - 1, limit=1)
        resumed = bool(crash and crash[0]["data"].get("at_session_start"))
        if crash_seq > settled_after and not resumed:
            status = CRASHED
            reason = (crash[0]["data"].get("reason") if crash else None) or "crash detected"
    if status is None:
        return None
    inputs = _summary_inputs(thread)
    calls = _summary_calls(thread, crash_seq if status == CRASHED else 0)
    if status == CRASHED and not (calls or any(i["state"] in ("interrupted", "reconciling")
                                               for i in inputs)):
        return None  # everything was settled since the crash
    row = thread_row(thread)
    return Interrupted(
        thread_key=thread.key, runtime=row["runtime"], session_id=row["session_id"],
        workspace_root=row["workspace_root"], status=status, reason=reason,
        last_activity=_last_event(thread)[1], owners=markers,
        last_checkpoint=_last_checkpoint(thread), inputs=inputs, unknown_calls=calls)


#: what ``status`` says about a thread's runtime (see :func:`runtime_verdict`)
RUNNING, KILLED, CRASH_RECORDED, GONE, ENDED, NOT_OBSERVED = (
    "running", "killed", "crashed", "gone", "ended", "unknown")


def runtime_verdict(thread) -> dict:
    """Is anyone still working on this thread? The cheap check ``status`` shows: the session
    markers' pids (one ``kill(pid, 0)`` and a ``/proc`` read each) and three indexed reads. It
    records nothing: ``continuation recover`` records the crash.

    ``running``: an owner lives. ``killed``: every owner is gone without a clean end while work
    is open (a pending input is not being worked on). ``crashed``: the crash is recorded and
    inputs wait (``recover --resume``). ``gone``: the owner died with nothing open. ``ended``:
    the session ended cleanly. ``unknown``: no marker here (an import, the API, another host)."""
    verdict, markers = owners(thread)
    pids = [m["pid"] for m in markers]
    if verdict == "alive":
        pids = [m["pid"] for m in markers if m.get("owner") == liveness.ALIVE]
        return {"verdict": RUNNING, "pids": pids,
                "detail": "the runtime is running (pid " + ", ".join(map(str, pids)) + ")"}
    if verdict == "unknown":
        return {"verdict": NOT_OBSERVED, "pids": pids,
                "detail": "no live-session marker on this host to check"}
    item = examine(thread)
    if item is not None and item.status == NEEDS_CRASH:
        return {"verdict": KILLED, "pids": pids,
                "detail": f"{item.reason}: its open inputs are not being worked on; run "
                          "`continuation recover`"}
    if item is not None:
        return {"verdict": CRASH_RECORDED, "pids": pids,
                "detail": "the crash is recorded; inputs wait: `continuation recover --resume "
                          f"{thread.key}`"}
    if verdict == "ended":
        return {"verdict": ENDED, "pids": pids, "detail": "the session ended"}
    return {"verdict": GONE, "pids": pids,
            "detail": "the runtime is gone; nothing was left open"}


def detect(engine, *, workspace_root: str | None = None, exclude: dict | None = None,
           host: str | None = None) -> list[Interrupted]:
    """Every interrupted thread (of one workspace when ``workspace_root`` is given)."""
    from continuation.session.engine import Thread

    out = []  # of one workspace: a SessionStart looks at its own workspace only
    for key in engine.store.thread_keys(workspace_root):
        item = examine(Thread(engine, key), exclude=exclude, host=host)
        if item is not None:
            out.append(item)
    return out


def record_crash(thread, item: Interrupted, *, source: str = "recovery",
                 at_session_start: bool = False) -> bool:
    """Record ``crash_detected`` (once) so pending inputs become interrupted / reconciling.
    Returns True when it was recorded now."""
    if item.status != NEEDS_CRASH:
        return False
    thread.record("crash_detected", {"reason": item.reason, "detected_at": time.time(),
                                     "owners": [{k: m.get(k) for k in ("pid", "host", "proc_start")}
                                                for m in item.owners],
                                     "at_session_start": at_session_start}, source=source)
    # the dead owners will never send SessionEnd: close their markers (only theirs)
    now = time.time()
    thread.store.end_sessions_of(thread.key, item.owners, now)
    return True


def dismiss(thread, note: str = "") -> None:
    thread.record(DISMISSED, {"note": note, "crash_seq": _max_seq(thread, "crash_detected")},
                  source="cli")


def with_drift(thread, item: Interrupted) -> Interrupted:
    """Fill ``item.drift`` from the last checkpoint's workspace snapshot (when there is one)."""
    cp = item.last_checkpoint
    ws = (cp or {}).get("workspace")
    if not ws or not ws.get("snapshot_ref") and ws.get("kind") not in ("metadata",):
        item.drift = None
        return item
    try:
        from continuation.workspace import WorkspaceRef, drift
        from continuation.session.workspace_link import session_written_paths

        report = drift(WorkspaceRef.from_dict(ws), state_home=thread.engine.home,
                       session_paths=session_written_paths(thread, cp["seq"]), lock_timeout=10)
        item.drift = {"modified": report.modified, "added": report.added,
                      "deleted": report.deleted, "outside_session": report.outside_session,
                      "head_moved": report.head_moved, "branch_changed": report.branch_changed}
    except Exception as exc:  # drift is informative; never block a recovery on it
        item.drift = {"error": str(exc)}
    return item
