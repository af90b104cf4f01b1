"""Forking a thread at a checkpoint: a new thread with ``forked_from`` lineage.

The fork gets a copy of the parent's events up to the checkpoint's aligned position, with the
same sequence numbers, times and sources, so it replays to exactly the parent's state there.
Then its first checkpoint is committed (its own capsule row and its own workspace refs
``refs/continuation/<fork>/<generation>``) and a ``boundary`` of kind ``fork`` marks it as needing
context. From then on the two threads share nothing but the workspace folder.

The fork's session id is a fresh UUID: Claude Code can be started on it
(``claude --session-id <id>``), so its hooks record into the fork.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from capsule.notice import Notice
from statemachine import events as ev

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine, Thread
from continuation.rewind.errors import RewindError
from continuation.rewind.operation import aligned_position, plan_files
from continuation.rewind.operation import restore_files_with_tree

SOURCE = "cli:fork"
TITLE_FORK = "fork: where this thread starts"


@dataclass
class ForkResult:
    parent: str
    thread: Thread
    from_checkpoint: cps.Checkpoint
    forked_at_seq: int
    checkpoint: cps.Checkpoint  # the fork's first checkpoint
    files: dict | None = None

    def to_dict(self) -> dict:
        return {"parent": self.parent, "thread": self.thread.row,
                "from_checkpoint": self.from_checkpoint.checkpoint_id,
                "forked_at_seq": self.forked_at_seq, "checkpoint": self.checkpoint.summary(),
                "files": self.files}


def fork_thread(engine: Engine, selector: str, *, name: str | None = None,
                session_id: str | None = None, restore_files: bool = False) -> ForkResult:
    from continuation.boundary.crossing import commit_checkpoint

    cp = cps.find_checkpoint(engine, selector)
    parent = Thread(engine, cp.thread_key)
    prow = parent.row
    at = aligned_position(parent, cp)
    files_plan = plan_files(engine, parent, cp) if restore_files else None
    sid = session_id or str(uuid.uuid4())
    if engine.find_thread(prow["runtime"], sid) is not None:
        raise RewindError(f"a {prow['runtime']} thread with session id {sid} exists already")
    child = engine.thread(prow["runtime"], sid, workspace_root=prow["workspace_root"],
                          forked_from=parent.key, forked_at_seq=at,
                          name=name or f"fork of {parent.key} at {cp.checkpoint_id}")
    copy_events(engine, parent.key, child.key, at)
    if child.tool_calls(("in_flight",)):
        # a call running at the checkpoint ran in the parent's process: its result can never
        # reach the fork, so there its outcome is unknown and goes to reconciliation
        child.record(ev.CRASH_DETECTED, {"reason": "fork: calls running at the checkpoint belong "
                                                   "to the parent's process"}, source=SOURCE)
    files = tree_after = None
    if files_plan is not None:
        files, tree_after = restore_files_with_tree(engine, files_plan)
    notice = fork_notice(parent.key, cp, at, files)
    first = commit_checkpoint(
        child, reason="fork", notices=[notice], tree_after_restore=tree_after,
        then=lambda cp_id, generation: (ev.BOUNDARY, {
            "kind": "fork", "trigger": "manual", "forked_from": parent.key, "forked_at_seq": at,
            "from_checkpoint": cp.checkpoint_id, "checkpoint_id": cp_id,
            "generation": generation}, SOURCE))
    return ForkResult(parent.key, child, cp, at, first, files)


def copy_events(engine: Engine, source_key: str, target_key: str, upto: int) -> int:
    """Copy events 1..upto, keeping seq, time, source and data; all or nothing."""
    store = engine.store
    rows = store.events(source_key, upto=upto)
    try:  # the fork must replay to the parent's exact state
        store.append_at_same_seqs(target_key, rows)
    except ValueError as exc:
        raise RewindError(f"{exc} (of {source_key}); the fork was not made") from None
    return len(rows)


def fork_notice(parent_key: str, cp: cps.Checkpoint, at: int, files: dict | None) -> Notice:
    lines = [
        f"This thread is a fork of thread {parent_key}, made at checkpoint {cp.checkpoint_id} "
        f"(event {at}). It continues from the state at that point: anything the parent thread did "
        "after it is not part of this thread and must not be assumed.",
    ]
    if files is not None:
        lines.append(
            f"The workspace files were restored to that checkpoint ({len(files['restored'])} "
            f"modified, {len(files['recreated'])} re-created, {len(files['deleted'])} deleted); "
            f"the files as they were before are in the safety snapshot {files['safety_ref']}.")
    else:
        lines.append("The workspace folder is shared with the parent thread and was not restored: "
                     "files may hold changes the parent made after the checkpoint; check them "
                     "before relying on them.")
    return Notice(title=TITLE_FORK, lines=lines, priority=80,
                  pointer=f"event:{parent_key}:{at}")
