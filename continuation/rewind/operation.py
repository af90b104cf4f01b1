"""Rewinding a thread to a checkpoint: the conversation, the workspace files, or both.

``plan_rewind`` changes nothing (it is ``--dry-run``); ``apply_rewind`` carries the plan out:

- files (``files``/``both``): the workspace restore (preview, a safety snapshot first, and only
  files the session created after the checkpoint may be deleted), done FIRST: if it fails, the
  conversation is left as it was, so context and files never disagree silently;
- conversation (``conversation``/``both``): a ``rolled_back`` fact (the log stays append-only;
  the reducer turns later inputs into ``rolled_back`` and hides their tool calls). For ``both``
  its data records what the files restore did, including the safety snapshot, so the one
  rollback id names both halves. A files-only rewind records ``workspace_restored`` instead;
- then a new checkpoint is committed (reason ``rewind``) whose capsule is assembled as of the
  checkpoint, with the recovery summary (:mod:`.summary`) as high-priority notices, and a
  ``boundary`` of kind ``rewind`` marks the thread as needing context delivery.

The position rewound to is the checkpoint's ``seq`` extended over the checkpoint's own
bookkeeping that immediately follows it (its ``checkpoint_committed`` fact and the compaction
``boundary`` that names it): rewinding to a PreCompact checkpoint keeps that compaction, as
Codex keeps a compaction that precedes the turns it rolls back.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from statemachine import events as ev

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Engine, Thread
from continuation.host.phase_marks import mark, mark_modules
from continuation.rewind.errors import RewindError
from continuation.session.branch import WORKSPACE_RESTORED

MODES = ("conversation", "files", "both")
SOURCE = "cli:rewind"


#: events with no conversation content: a rewind position may extend over them
_BOOKKEEPING = {ev.CHECKPOINT_COMMITTED, ev.BOUNDARY, ev.SESSION_STARTED, ev.SESSION_ENDED,
                ev.SETTINGS, ev.CONTEXT_DELIVERED}


def _bookkeeping(event: dict) -> bool:
    if event["type"] == ev.ASSISTANT_CLAIM:  # the compaction's own summary belongs to it
        return (event["data"] or {}).get("via") == "compact_summary"
    if event["type"] == ev.BOUNDARY:  # never across an earlier rewind's or fork's marker
        return (event["data"] or {}).get("kind") not in ("rewind", "fork")
    return event["type"] in _BOOKKEEPING


def aligned_position(thread: Thread, cp: cps.Checkpoint) -> int:
    """The last event the checkpoint names: its ``seq`` plus the bookkeeping that follows it
    before any new conversation content (its own commit record, the compaction boundary, the
    session start and context delivery after the compaction, the compaction summary)."""
    position = cp.seq
    for e in thread.events(after=cp.seq, limit=64):
        if not _bookkeeping(e):
            break
        position = e["seq"]
    return position


def workspace_ref(cp: cps.Checkpoint):
    """The checkpoint's workspace snapshot reference, or a clear error why there is none."""
    from continuation.workspace import CorruptReference, WorkspaceRef

    ws = cp.workspace
    if not ws:
        raise RewindError(f"checkpoint {cp.checkpoint_id} has no workspace snapshot "
                          "(the thread has no workspace folder, or the policy was `none`)")
    if ws.get("error"):
        raise RewindError(f"checkpoint {cp.checkpoint_id} has no usable workspace snapshot: "
                          f"{ws['error']}")
    try:
        ref = WorkspaceRef.from_dict(_on_this_machine(ws))
    except CorruptReference as exc:
        raise RewindError(f"checkpoint {cp.checkpoint_id}: bad workspace reference: {exc}") from None
    if not ref.has_contents:
        raise RewindError(f"checkpoint {cp.checkpoint_id} is a {ref.kind!r} workspace checkpoint "
                          "and stores no file contents: its files cannot be restored")
    return ref


def _on_this_machine(ws: dict) -> dict:
    """The reference with its root where the repository is on this machine.

    A checkpoint recorded on another host (a shared PostgreSQL store) names that host's folder.
    When that folder is absent here and the snapshot lives in git, the files are restored into
    the repository of the current folder, your clone on this host; its snapshot refs are fetched
    from ``CONTINUATION_SNAPSHOT_REMOTE`` when missing. Shadow and metadata snapshots live under
    the other host's state home and cannot move."""
    from pathlib import Path

    from continuation.workspace.gitrun import find_git_entry

    root = ws.get("root")
    if not isinstance(root, str) or not root or Path(root).is_dir():
        return ws
    if ws.get("kind") != "git":
        raise RewindError(f"the checkpoint's folder {root} is not on this machine, and its "
                          f"{ws.get('kind')!r} snapshot stays with the machine that took it")
    entry = find_git_entry(Path.cwd().resolve())
    if entry is None:
        raise RewindError(f"the checkpoint's folder {root} is not on this machine: run the "
                          "command inside your clone of that repository")
    return {**ws, "root": str(entry.parent.resolve())}


@dataclass
class RewindPlan:
    checkpoint: cps.Checkpoint
    thread_key: str
    mode: str
    reason: str
    to_seq: int
    last_seq: int
    inputs: list[dict] = field(default_factory=list)  # inputs that become rolled_back
    calls: list[dict] = field(default_factory=list)  # tool calls that leave the view
    notices: list = field(default_factory=list)  # the recovery summary the context will carry
    files: object | None = None  # workspace.RestorePlan
    # a capsule worker started for the apply (continuation.boundary.capsule_worker); not part of the plan
    builder: object | None = field(default=None, repr=False, compare=False)
    # the discarded branch's digest (rewind.summary), stored with the rollback when the log has
    # not moved since the plan; not part of the plan
    digest: dict | None = field(default=None, repr=False, compare=False)
    # who rewinds when it is not the user: "guard" (the recovery loop), recorded with the fact
    by: str | None = None

    @property
    def conversation(self) -> bool:
        return self.mode in ("conversation", "both")

    def to_dict(self) -> dict:
        return {
            "checkpoint": self.checkpoint.summary() if self.checkpoint else None,
            "thread": self.thread_key, "mode": self.mode,
            "reason": self.reason, "to_seq": self.to_seq, "last_seq": self.last_seq,
            "inputs": self.inputs, "tool_calls": self.calls,
            "notices": [n.model_dump() for n in self.notices],
            "files": self.files.to_dict() if self.files is not None else None,
        }

    def describe(self, limit: int | None = None, width: int | None = None) -> str:
        """The preview: what changes, totals first; of each list (inputs and calls, files,
        the lines of each notice) the first ``limit`` entries (None: every one); the inputs
        and calls as a table fitted to ``width`` (None: no limit)."""
        from continuation.host.textfit import Column, render_table

        cp = self.checkpoint
        lines = [f"rewind {self.mode} of thread {self.thread_key} to checkpoint "
                 f"{cp.checkpoint_id} (generation {cp.generation}): back to event {self.to_seq}, "
                 f"the thread is at event {self.last_seq}"]
        if self.conversation:
            lines.append(f"conversation: {len(self.inputs)} input(s) become rolled_back, "
                         f"{len(self.calls)} tool call(s) leave the current view")
            rows = [{"what": "input", "id": i["input_id"], "state": i["state"],
                     "text": _one_line(i["text"], 200)} for i in self.inputs]
            rows += [{"what": "call", "id": c["call_id"], "state": c["status"],
                      "text": c["tool"]} for c in self.calls]
            shown = rows if limit is None else rows[:limit]
            if shown:
                table = render_table(shown, [
                    Column("what", "", "fixed"), Column("id", "id", "id"),
                    Column("state", "state", "fixed"), Column("text", "text or tool")],
                    None if width is None else width - 2)
                lines += ["  " + line for line in table[1:]]
            if len(shown) < len(rows):
                lines.append(f"  ... and {len(rows) - len(shown)} more (--verbose shows every "
                             "input and call)")
        if self.files is not None:
            lines.append("files:")
            lines += ["  " + line for line in self.files.describe(limit).splitlines()]
        if self.notices:
            lines.append("the next context will carry:")
            for n in self.notices:
                lines.append(f"  [{n.title}]")
                lines += [f"    {line}" for line in _first(n.lines, limit, "the whole notice")]
        return "\n".join(lines)


def _first(entries: list[str], limit: int | None, what: str) -> list[str]:
    if limit is None or len(entries) <= limit:
        return entries
    return entries[:limit] + [f"  ... and {len(entries) - limit} more (--verbose shows {what})"]


#: what a conversation rewind leaves as it is: inputs already out of the conversation, calls
#: an earlier rewind hid (the rest after the checkpoint becomes rolled_back)
STAYING_INPUT_STATES = ("rolled_back", "superseded")
STAYING_CALL_STATUSES = ("rolled_back",)


def _one_line(text: str, width: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plan_rewind(engine: Engine, selector: str, mode: str, *, reason: str = "",
                applying: bool = False, at_once: bool = False, whole_tree: bool = False,
                keep_unsure: bool = False) -> RewindPlan:
    """What a rewind would do; changes nothing in the conversation or the files. ``applying``:
    the caller applies it next (:func:`apply_rewind`), so a files rewind starts what the new
    checkpoint's capsule will need (a capsule worker, else a warm-up thread) while git scans
    the work tree. ``at_once``: and with nothing to confirm in between (``--yes``, the API), so
    the files restore's safety snapshot is taken now and its preview read off it: one scan of
    the work tree instead of two (``workspace.safety_first``)."""
    mark("rewind: planning")
    if mode not in MODES:
        raise RewindError(f"rewind mode must be one of {', '.join(MODES)}, not {mode!r}")
    cp = cps.find_checkpoint(engine, selector)
    thread = Thread(engine, cp.thread_key)
    to_seq = aligned_position(thread, cp)
    plan = RewindPlan(cp, thread.key, mode, reason, to_seq, int(thread.row["last_seq"]))
    if plan.conversation:
        view = thread.store.state_view(thread.key)  # only what came after to_seq
        plan.inputs = [{"input_id": r.input_id, "state": r.state, "text": r.text}
                       for r in view.inputs_after(to_seq)
                       if r.state not in STAYING_INPUT_STATES]
        plan.calls = [{"call_id": c.call_id, "tool": c.tool, "status": c.status}
                      for c in view.calls_after(to_seq) if c.status not in STAYING_CALL_STATUSES]
    if mode != "conversation":
        if applying:
            plan.builder = _start_builder(thread)
            mark("rewind: worker started")
        plan.files = plan_files(engine, thread, cp, warm_up=applying,
                                models=plan.builder is None, at_once=applying and at_once,
                                whole_tree=whole_tree, keep_unsure=keep_unsure)
        mark("rewind: files planned")
    # the summary exactly as it will be rebuilt after the anchor fact is appended
    summary = _summary()
    anchor = {"seq": plan.last_seq + 1,
              "type": ev.ROLLED_BACK if plan.conversation else WORKSPACE_RESTORED,
              "data": _anchor_data(plan, _files_preview(plan.files)), "source": SOURCE}
    if plan.conversation:
        plan.digest = _branch_digest(thread, anchor)
    plan.notices = summary.notices_of(thread.store, thread.key, pending_anchor=anchor,
                                      digest=plan.digest)
    mark("rewind: planned")
    return plan


def _start_builder(thread: Thread):
    """A capsule worker for the rewind's new checkpoint, started before the work tree is
    scanned (it imports the capsule stack on another core meanwhile); None where
    ``capsule_worker.should_use`` says no."""
    from continuation.boundary import capsule_worker

    worker = capsule_worker.CapsuleWorker.start(thread.engine.home)
    if worker is not None:  # it waits for the restore: it can find the temporary folder itself
        worker.prepare(cps.counts_exactly(thread), tell_temp_folder=False)
    return worker


_warming = None


def warm_up_in_background(*, models: bool = True) -> None:
    """Import what the rewind's checkpoint will need in a daemon thread, once per process: the
    recovery summary and the modules its capsule's source is gathered with (claim checks, with
    their claim patterns compiled, reconciliation notices), and, with ``models`` (no capsule
    worker builds the checkpoint, ``continuation.boundary.capsule_worker``), pydantic and the capsule
    models with their schemas.
    Started when a rewind's main thread has imported what its files plan needs and next waits
    on git scanning the work tree (the restore preview, then the safety snapshot), so those
    imports (~70 ms with the models, ~12 ms without) overlap that wait instead of following
    the restore. :func:`_summary` waits for it before the main thread uses any of
    those modules itself (two threads never import them, nor build a model's schema, at once);
    a caller that uses them otherwise (a fork) does not start it."""
    import threading

    global _warming
    if _warming is None:
        _warming = threading.Thread(target=_warm_up, args=(models,), daemon=True,
                                    name="continuation-warm-up")
        _warming.start()


def _warm_up(models: bool) -> None:
    try:
        from capsule import claim_check

        from continuation.boundary import crossing as boundary, capsule_source  # noqa: F401 - imported for the main thread
        from continuation.recovery import notices  # noqa: F401
        from continuation.session import rewind_notes as summary  # noqa: F401

        claim_check.compile_claim_patterns()  # the gathering after the restore checks claims

        if models:
            from capsule.schemas import build_schemas

            build_schemas()
    except Exception:  # noqa: BLE001 - the main thread's own import reports it
        pass


def _summary():
    """:mod:`.summary`, once the warm-up thread, if one was started, is done (it imports the
    summary, and the capsule models where no worker builds the checkpoint)."""
    if _warming is not None:
        _warming.join()
    from continuation.session import rewind_notes as summary

    return summary


def plan_files(engine: Engine, thread: Thread, cp: cps.Checkpoint, *, warm_up: bool = False,
               models: bool = True, at_once: bool = False, whole_tree: bool = False,
               keep_unsure: bool = False):
    """The files restore plan. ``warm_up``: the caller reaches the capsule stack only through
    :func:`_summary` (a rewind), so it may load in a thread while git scans the work tree
    (``models``: the capsule models too, see :func:`warm_up_in_background`): started as that
    scan starts, not before, so the plan's own imports and reads before it do not share the
    interpreter with the warm-up (measured: the scan started ~7 ms later).

    By default the user's own edits are kept (a changed file no agent call can have changed:
    ``workspace.restore``); ``whole_tree`` restores every change; ``keep_unsure`` keeps the
    files the engine cannot attribute too."""
    from continuation.workspace import WorkspaceError, plan_restore
    from continuation.session.workspace_link import (
        agent_call_windows,
        session_created_paths,
        session_written_paths,
    )

    ref = workspace_ref(cp)
    edits = {} if whole_tree else {
        "agent_named": session_written_paths(thread, after_seq=cp.seq),
        "call_windows": agent_call_windows(thread, cp.seq, cp.created_at),
        "keep_unsure": keep_unsure}
    try:
        return plan_restore(ref, state_home=engine.home, **edits,
                            session_created=session_created_paths(thread, after_seq=cp.seq),
                            while_scanning=(lambda: warm_up_in_background(models=models))
                            if warm_up else None, at_once=at_once)
    except WorkspaceError as exc:
        raise RewindError(f"cannot plan the files restore: {exc}") from None


def _files_preview(files) -> dict | None:
    if files is None:
        return None
    taken = getattr(files, "taken", None)  # a plan applied at once took its safety snapshot
    return {"restored": list(files.modified), "recreated": list(files.recreated),
            "deleted": list(files.deleted),
            "kept_edits": [{"path": k.path, "why": k.reason} for k in files.kept_edits],
            "unsure": [{"path": u.path, "why": u.reason} for u in files.unsure],
            "secrets_kept": [{"path": k.path, "why": k.reason} for k in files.secrets],
            "safety_ref": taken.ref.snapshot_ref if taken is not None else "(taken when the rewind is applied)"}


def files_done(result) -> dict:
    return {"restored": list(result.restored), "recreated": list(result.recreated),
            "deleted": list(result.deleted), "skipped": [s.path for s in result.skipped],
            "skipped_why": {s.path: s.reason for s in result.skipped},
            "safety_ref": result.safety.snapshot_ref, "safety_commit": result.safety.snapshot_commit,
            "safety": result.safety.to_dict()}


def _anchor_data(plan: RewindPlan, files: dict | None) -> dict:
    data = {"to_seq": plan.to_seq, "checkpoint_id": plan.checkpoint.checkpoint_id,
            "checkpoint_seq": plan.checkpoint.seq, "reason": plan.reason, "mode": plan.mode}
    if plan.by:
        data["by"] = plan.by
    if files is not None:
        if plan.conversation:
            data["files"] = files
        else:
            data.update(files)
    return data


def _branch_digest(thread: Thread, pending: dict) -> dict | None:
    """The digest of the branch the rollback ``pending`` (about to be appended) discards, or
    None when it does not fit or cannot be built: the notices then read the branch, as they
    always could."""
    try:
        return _summary().digest_for_rollback(thread.store, thread.key, pending)
    except Exception:  # noqa: BLE001 - an optimisation: the rollback is recorded either way
        return None


def _with_branch_digest(thread: Thread, data: dict, planned: dict | None) -> None:
    """Store in the rollback's ``data`` the digest of the branch it discards
    (``rewind.summary``): every checkpoint after it then reads the events after the rollback,
    not the whole branch again. The plan's digest when nothing was appended since the plan
    (the branch would be read twice), else a new one."""
    last = int(thread.row["last_seq"])
    digest = planned if planned is not None and planned.get("upto") == last else None
    if digest is None:
        digest = _branch_digest(thread, {"seq": last + 1, "type": ev.ROLLED_BACK, "data": data,
                                         "source": SOURCE})
    if digest is not None:
        data["summary"] = digest


@dataclass
class RewindResult:
    plan: "RewindPlan | UndoPlan"
    anchor_seq: int
    checkpoint: cps.Checkpoint  # the new checkpoint (reason "rewind")
    files: dict | None = None

    def to_dict(self) -> dict:
        return {"plan": self.plan.to_dict(), "anchor_seq": self.anchor_seq,
                "checkpoint": self.checkpoint.summary(), "files": self.files}


def apply_rewind(engine: Engine, plan: RewindPlan, *, source: str = SOURCE,
                 boundary: bool = True) -> RewindResult:
    """Carry the plan out. ``boundary`` False: the new checkpoint marks no context boundary
    (the caller hands the model its own summary at once, as the recovery loop does), so no
    fresh context is owed to the next prompt."""
    from continuation.boundary.crossing import commit_checkpoint

    thread = Thread(engine, plan.thread_key)
    if plan.builder is None:
        cps.prefetch_tokenizer(thread)  # its load overlaps the restore's git work
    try:
        files = tree_after = None
        if plan.files is not None:
            files, tree_after = restore_files_with_tree(engine, plan.files)
            mark("rewind: files restored")
        etype = ev.ROLLED_BACK if plan.conversation else WORKSPACE_RESTORED
        data = _anchor_data(plan, files)
        if plan.conversation:
            _with_branch_digest(thread, data, plan.digest)
        # recorded before anything else can fail or wait: the fact names the safety snapshot
        # that `restore --undo` puts back
        anchor = thread.record(etype, data, source=source)
        summary = _summary()
        notices = summary.notices_of(thread.store, thread.key)
        mark("rewind: recorded")
        cp = commit_checkpoint(
            thread, reason="rewind", notices=notices, tree_after_restore=tree_after,
            worker=plan.builder,
            then=(lambda cp_id, generation: (ev.BOUNDARY, {
                "kind": "rewind", "mode": plan.mode, "trigger": "manual", "checkpoint_id": cp_id,
                "generation": generation, "rewound_to": plan.checkpoint.checkpoint_id,
                "to_seq": plan.to_seq}, source)) if boundary else None)
    finally:
        if plan.builder is not None:  # ended by the checkpoint, or here when it was not reached
            plan.builder.close()
    mark("rewind: done")
    mark_modules("the boundary")
    return RewindResult(plan, int(anchor.seq), cp, files)


def restore_files(engine: Engine, files_plan) -> dict:
    """Apply a workspace restore plan; what it did, as the data a rewind fact records."""
    return restore_files_with_tree(engine, files_plan)[0]


def restore_files_with_tree(engine: Engine, files_plan) -> tuple[dict, object]:
    """:func:`restore_files`, plus the tree the restore left (``RestoreResult.tree_after``):
    the checkpoint committed next snapshots it without scanning the work tree again."""
    from continuation.workspace import WorkspaceError, apply_restore

    try:
        result = apply_restore(files_plan, state_home=engine.home, derive_tree=True)
    except WorkspaceError as exc:
        raise RewindError(f"files restore failed before changing anything it reports: {exc}; "
                          "the conversation was not rewound") from None
    if result.errors:
        raise RewindError(
            "files restore failed: " + "; ".join(result.errors) + f". The files as they were "
            f"before are in the safety snapshot {result.safety.snapshot_ref}; the conversation "
            "was not rewound")
    # new files no successful agent call created stay, and are named in the record
    return {**files_done(result), "kept": list(files_plan.kept),
            "kept_edits": [{"path": k.path, "why": k.reason} for k in files_plan.kept_edits],
            "unsure": [{"path": u.path, "why": u.reason} for u in files_plan.unsure],
            "secrets_kept": [{"path": k.path, "why": k.reason} for k in files_plan.secrets]}, \
        result.tree_after


def rewind(engine: Engine, selector: str, mode: str, *, reason: str = "") -> RewindResult:
    """Plan and apply in one call (the API for harnesses; the CLI previews first)."""
    return apply_rewind(engine, plan_rewind(engine, selector, mode, reason=reason, applying=True,
                                            at_once=True))


@dataclass
class UndoPlan:
    """Undoing the newest files restore of a thread: back to its safety snapshot."""

    thread_key: str
    undo_of: int  # seq of the rewind / restore fact whose safety snapshot is restored
    reason: str
    files: object  # workspace.RestorePlan

    def to_dict(self) -> dict:
        return {"thread": self.thread_key, "undo_of": self.undo_of, "reason": self.reason,
                "files": self.files.to_dict()}

    def describe(self, limit: int | None = None, width: int | None = None) -> str:
        return (f"undo the files restore of event {self.undo_of} in thread {self.thread_key}:\n"
                + "\n".join("  " + line for line in self.files.describe(limit).splitlines()))


def _restored_files(event: dict) -> dict | None:
    d = event["data"] or {}
    files = d.get("files") if event["type"] == ev.ROLLED_BACK else d
    return files if isinstance(files, dict) and isinstance(files.get("safety"), dict) else None


def plan_undo_restore(engine: Engine, thread: Thread, *, reason: str = "") -> UndoPlan:
    """Preview restoring the safety snapshot the thread's newest files restore took first;
    files that restore re-created (absent before it) are deleted again."""
    from continuation.workspace import CorruptReference, WorkspaceError, WorkspaceRef, plan_restore

    events = thread.store.events_of_types(thread.key, (ev.ROLLED_BACK, WORKSPACE_RESTORED))
    found = next(((e, f) for e in reversed(events) if (f := _restored_files(e))), None)
    if found is None:
        raise RewindError(f"thread {thread.key} has no files restore to undo")
    event, files = found
    try:
        ref = WorkspaceRef.from_dict(files["safety"])
        plan = plan_restore(ref, state_home=engine.home, session_created=files.get("recreated") or [],
                            keep_committed=False)  # exactly the files the restore re-created
    except (CorruptReference, WorkspaceError) as exc:
        raise RewindError(f"cannot undo the restore of event {event['seq']}: {exc}") from None
    return UndoPlan(thread.key, int(event["seq"]), reason, plan)


def apply_undo_restore(engine: Engine, plan: UndoPlan) -> RewindResult:
    from continuation.boundary.crossing import commit_checkpoint

    thread = Thread(engine, plan.thread_key)
    files, tree_after = restore_files_with_tree(engine, plan.files)
    anchor = thread.record(WORKSPACE_RESTORED, {"undo_of": plan.undo_of, "reason": plan.reason,
                                                "mode": "undo", **files}, source=SOURCE)
    notices = _summary().notices_of(thread.store, thread.key)
    cp = commit_checkpoint(
        thread, reason="rewind", notices=notices, tree_after_restore=tree_after,
        then=lambda cp_id, generation: (ev.BOUNDARY, {
            "kind": "rewind", "mode": "undo", "trigger": "manual", "checkpoint_id": cp_id,
            "generation": generation, "undo_of": plan.undo_of}, SOURCE))
    return RewindResult(plan, int(anchor.seq), cp, files)
