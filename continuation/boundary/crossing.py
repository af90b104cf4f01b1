"""Context boundaries: commit before, deliver after.

- PreCompact: commit a checkpoint (capsule + workspace snapshot) and record the boundary. The
  thread then *needs context*: the next fresh context must receive the assembled capsule.
- SessionStart(compact): answer with the assembled context and record its delivery.
- SessionStart(resume): the runtime reloads the whole conversation, and Claude Code 2.1.332
  keeps every SessionStart answer in the history (measured: each resume adds one more block), so
  a resume gets the context only when something must be carried: an undelivered boundary, or
  inputs left interrupted / reconciling by a dead session. A plain resume gets nothing.
- SessionStart(clear): the user asked for a clean slate; nothing is injected.
- If a boundary was recorded and no delivery followed (a deferred or dropped compact hook:
  claude-code #15174), the next UserPromptSubmit injects the context instead.
"""
from __future__ import annotations

import os

from statemachine import events as ev

from continuation.boundary import capsule_worker, checkpoints, transcript_hash
from continuation.boundary.sealed_files import CONTEXT_POINTER
from continuation.host.own_command import source_command
from continuation.session.engine import Thread
from continuation.host.phase_marks import mark

#: Claude Code 2.1.332 spills hook additionalContext over 10,000 characters (UTF-16 units) to a
#: file, Codex CLI 0.171.0 cuts the middle out of one over 10,000 UTF-8 bytes (both measured at
#: 10,000 / 10,001): a whole answer, the notices put in front of the context included, stays
#: within this many of either
INLINE_TOTAL = 9_980
INLINE_LIMITS = {"claude": INLINE_TOTAL, "codex": INLINE_TOTAL}
INLINE_BYTES_MAX = INLINE_TOTAL


#: longest a boundary waits for its snapshot's scan to start before gathering anyway
SCAN_START_WAIT_S = 2.0


class _PendingSnapshot:
    """A snapshot taken in a thread: git does the work in its own processes, so the boundary's
    thread gathers the capsule's source meanwhile. The snapshot's thread touches no
    store connection of the boundary's (``workspace_link.snapshot_workspace``).

    :meth:`wait_for_scan` lets the snapshot's thread reach git's scan of the work tree alone
    (``treebuild.scan_starting``): its imports and lock are Python, which one interpreter runs
    one thread at a time; the gathering then runs while git scans."""

    def __init__(self, root: str | None, thread_key: str, home, generation: int, tree_after_restore=None):
        self._box: list = []
        self._worker = None
        if not root or not os.path.isdir(root):
            self._box.append(None)
            return
        import threading

        self._scanning = threading.Event()
        self._worker = threading.Thread(target=self._take,
                                        args=(root, thread_key, home, generation, tree_after_restore),
                                        daemon=True, name="continuation-snapshot")
        self._worker.start()

    def _take(self, root, thread_key, home, generation, tree_after_restore) -> None:
        try:
            mark("snapshot: thread started")
            from continuation.workspace.treebuild import scan_starting
            from continuation.session.workspace_link import policy, snapshot_workspace

            if policy().mode == "snapshot":
                scan_starting.set(self._scanning.set)
            else:  # a manifest or nothing: no git scan to start first
                self._scanning.set()
            self._box.append(snapshot_workspace(root, thread_key, home, generation,
                                                tree_after_restore=tree_after_restore))
        except BaseException as exc:  # noqa: BLE001 - the capsule matters more than the snapshot
            # (and a worker's exception would end as a traceback on stderr, never the answer)
            self._box.append({"root": root, "error": f"snapshot failed: {exc}"})
        finally:
            self._scanning.set()

    def wait_for_scan(self) -> None:
        """Until git's scan starts, the snapshot ends (no scan: skipped, failed) or
        SCAN_START_WAIT_S passes (a lock held by another snapshot: the boundary waits for this
        one anyway)."""
        if self._worker is not None:
            self._scanning.wait(SCAN_START_WAIT_S)

    def result(self) -> dict | None:
        if self._worker is not None:
            self._worker.join()
        return self._box[0]


def _start_snapshot(thread: Thread, generation: int, tree_after_restore=None) -> _PendingSnapshot:
    return _PendingSnapshot(thread.row["workspace_root"], thread.key, thread.engine.home, generation,
                            tree_after_restore)


#: commits lost to racing checkpoints of the same thread before one gives up (each loss means
#: another checkpoint was committed, so the thread always advances)
COMMIT_ATTEMPTS = 32


class _Unset:
    """Not taken yet (a transcript pointer may be None)."""


def commit_checkpoint(thread: Thread, *, reason: str, transcript_path: str | None = None,
                      snapshot: bool = True, notices=(), tree_after_restore=None,
                      worker: capsule_worker.CapsuleWorker | None = None,
                      then=None, before_gathering=None) -> checkpoints.Checkpoint:
    """Snapshot the workspace and commit the capsule under one generation.

    ``tree_after_restore``: a restore just ran (a rewind); its ``RestoreResult.tree_after`` is
    committed as the snapshot instead of scanning the work tree again (``workspace.after_restore``).

    Two processes may checkpoint one thread at once (``continuation checkpoint`` racing a
    PreCompact). The snapshot claims its generation with its ref (created only if absent), so
    a ref always names the commit its checkpoint records; the store refuses a generation that
    is not past the thread's newest. The loser gives its claim back and tries again with the
    next generation, a fresh snapshot and capsule: a boundary is never dropped for a race.

    The capsule is built by a worker process (``continuation.boundary.capsule_worker``: it imports the
    capsule stack on another core while this process gathers the source as plain data and
    snapshots), ``worker`` when the caller started one earlier (a rewind, before its git
    work), else one started here when the worker is used at all; without one, or when it
    fails, it is built in this process. Either way the same capsule: one build function.

    ``then(checkpoint_id, generation)``: the boundary fact (type, data, source) committed with
    the checkpoint, in its transaction (``checkpoints.commit``). ``before_gathering()``: work
    that changes the log the capsule is gathered from (a compaction settles calls from its
    transcript: ``hooks.handlers``), run once while git scans, before the first gathering; the
    transcript's pointer is taken then too (its hash may still be coming from the child
    ``transcript_hash`` forked). A failure before the capsule is committed gives back the
    snapshot's claim, as a lost race does."""
    mark("boundary: started")
    given, notices = notices, None
    worker = worker or capsule_worker.take_early(thread.engine.home)
    if worker is None:
        worker = capsule_worker.CapsuleWorker.start(thread.engine.home)
    exact: bool | None = None  # whether the build counts exactly: asked once, below
    transcript: dict | None | type[_Unset] = _Unset
    try:
        floor = 0
        for _ in range(COMMIT_ATTEMPTS):
            generation = max(int(thread.row["generation"]) + 1, floor)
            # git snapshots in a thread while this one gathers the capsule's input (and, with
            # no worker, builds the schemas and tokenizer the capsule will need): the boundary
            # costs the longer of the two, not their sum
            pending = _start_snapshot(thread, generation, tree_after_restore) if snapshot else None
            try:
                if pending is not None and tree_after_restore is None:  # (a restore's tree: no scan)
                    pending.wait_for_scan()
                    mark("boundary: snapshot's git scan started")
                if before_gathering is not None:
                    before_gathering()
                    before_gathering = None
                if transcript is _Unset:
                    transcript = transcript_hash.pointer(transcript_path)
                if worker is not None and exact is None:
                    # asked while git scans: the worker reads the answer after its models, and
                    # reading the newest capsule (and the tokenizer's names) is ~5-8 ms of
                    # Python; a worker its caller prepared (a rewind, before its git work)
                    # knows it already
                    exact = worker.exact
                    if exact is None:
                        exact = checkpoints.counts_exactly(thread)
                        worker.prepare(exact)
                if notices is None:
                    notices = (*given, *_reconciliation_notices(thread))
                seq = int(thread.row["last_seq"])  # read before gathering: the capsule covers it
                from continuation.boundary import capsule_source

                if worker is not None:
                    source = capsule_source.gather_plain(thread, generation=generation,
                                                         reason=reason, transcript=transcript,
                                                         notices=notices)
                else:
                    source = capsule_source.gather(thread, generation=generation, reason=reason,
                                                   transcript=transcript, notices=notices)
                    if pending is not None:
                        checkpoints.warm_up(thread)
                mark("boundary: source gathered")
            except BaseException:
                if pending is not None:  # no capsule for this snapshot: its claim goes back
                    _release(thread, pending.result())
                raise
            workspace = pending.result() if pending is not None else None
            mark("boundary: snapshot done")
            claimed = (workspace or {}).get("generation")
            if isinstance(claimed, int) and claimed > generation:  # its ref was taken
                generation = claimed
            built = None
            if worker is not None:
                complete = checkpoints.with_workspace(thread, source, generation=generation,
                                                      workspace=workspace)
                built = worker.build(complete, exact_first=bool(exact))
                mark("boundary: capsule received")
            try:
                committed = checkpoints.commit(thread, reason=reason, workspace=workspace,
                                               transcript=transcript, notices=notices,
                                               generation=generation, source=source, seq=seq,
                                               built=built, then=then)
                mark("boundary: committed")
                return committed
            except checkpoints.GenerationTaken:
                _release(thread, workspace)
                floor = generation + 1
        raise checkpoints.CheckpointError(
            f"thread {thread.key}: {COMMIT_ATTEMPTS} checkpoints committed by other processes "
            "while this one tried; giving up")
    finally:
        if worker is not None:
            worker.close()
            if worker.problem:
                _log_worker_problem(thread, worker.problem)


def _log_worker_problem(thread: Thread, problem: str) -> None:
    """A capsule worker that failed (the capsule was built in process) is noted in
    ``logs/capsule-worker.log`` under the state home: slower, not wrong."""
    try:
        import time

        from continuation.host.paths import append_log

        append_log(thread.engine.home, "capsule-worker.log",
                   f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} thread={thread.key} "
                   f"{problem}\n")
    except Exception:  # noqa: BLE001 - a note must not fail the boundary
        pass


def _release(thread: Thread, workspace: dict | None) -> None:
    if workspace:
        from continuation.session.workspace_link import release_snapshot

        release_snapshot(thread, workspace)


def _reconciliation_notices(thread: Thread) -> list:
    """The reconciliation prompt for calls with unknown outcome, and the decisions already
    recorded about calls of inputs still open (continuation.recovery)."""
    try:
        # both are made of calls in these states only: with none (the usual boundary), the
        # recovery modules are not loaded (~6 ms of a PreCompact hook's imports)
        if not thread.tool_calls(("unknown", "in_flight", "reconciled")):
            return []
        from continuation.recovery.notices import decision_notice, reconciliation_notice

        found = [reconciliation_notice(thread), decision_notice(thread)]
    except Exception:  # the checkpoint matters more than the prompt; doctor/recover show it
        return []
    return [n for n in found if n is not None]


def _recovery_notice(thread: Thread) -> str:
    """Record a crash of this thread's dead owner; a short notice about other interrupted
    threads of the workspace (continuation.recovery.session_start)."""
    try:
        from continuation.recovery.session_start import at_session_start

        return at_session_start(thread)
    except Exception:
        return ""


def with_notice(answer: dict | None, notice: str) -> dict | None:
    if not notice:
        return answer
    if not answer:
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": notice}}
    out = answer["hookSpecificOutput"]
    out["additionalContext"] = notice + "\n\n" + out["additionalContext"]
    return answer


def before_compaction(thread: Thread, *, trigger: str, source_tag: str,
                      transcript_path: str | None = None,
                      before_gathering=None) -> checkpoints.Checkpoint:
    return commit_checkpoint(
        thread, reason=trigger, transcript_path=transcript_path, before_gathering=before_gathering,
        then=lambda cp_id, generation: (ev.BOUNDARY, {"kind": "compact", "trigger": trigger,
                                                      "generation": generation,
                                                      "checkpoint_id": cp_id}, source_tag))


def fresh_checkpoint(thread: Thread, reason: str) -> checkpoints.Checkpoint:
    """The newest checkpoint when nothing but bookkeeping happened since; else a new one."""
    newest = checkpoints.newest_checkpoint(thread)
    if newest is not None:
        later = thread.events(after=newest.seq)
        if all(e["type"] in _BOOKKEEPING for e in later):
            return newest
    return commit_checkpoint(thread, reason=reason)


_BOOKKEEPING = {ev.CHECKPOINT_COMMITTED, ev.BOUNDARY, ev.SESSION_STARTED, ev.SETTINGS,
                ev.CONTEXT_DELIVERED, ev.SESSION_ENDED, ev.ASSISTANT_CLAIM}


def assembled_context(thread: Thread, loaded: checkpoints.LoadedCapsule,
                      instructions: str | None = None, exclude_input: str | None = None):
    """Instructions first (when given), then the capsule block (as stored with the checkpoint:
    no capsule model is built), then the still-actionable inputs verbatim (full texts from the
    store, not the capsule's clipped copies), then queued input."""
    from types import SimpleNamespace

    from capsule.context import assemble_rendered

    covered = loaded.checkpoint.seq
    actionable = [SimpleNamespace(id=r.input_id, state=r.state, text=r.text)
                  for r in thread.actionable_inputs()
                  if r.admitted_seq <= covered and r.input_id != exclude_input]
    return assemble_rendered(instructions, loaded.rendered(), actionable_inputs=actionable)


def assembled_text(thread: Thread, loaded: checkpoints.LoadedCapsule) -> str:
    return assembled_context(thread, loaded).as_text()


def fit_for_runtime(thread: Thread, runtime: str, context, generation: int, reserve: int = 0) -> str:
    """The inline part for the hook answer; past the limit, the full text goes to a file
    under the state home that the inline part points to. ``reserve``: characters the answer
    puts in front of it (notices)."""
    limit = max(1_000, INLINE_LIMITS.get(runtime, 9_500) - reserve)
    # os.path, not pathlib: SessionStart answers without importing it
    spill = os.path.join(thread.engine.home_str, "contexts", thread.key, f"g{generation:06d}.md")
    # an encrypted store's spill is sealed: the inline part names the command printing it
    sealer = thread.engine.store.codec.sealer
    command = (None if sealer is None else
               f"{source_command()} {CONTEXT_POINTER}:{thread.key}:{generation}")
    inline = context.fit_inline(limit_chars=limit, spill_path=str(spill), read_command=command)
    # Codex's limit counts UTF-8 bytes (10,000), the others UTF-16 units: a text of many
    # multi-byte characters is fitted again to fewer characters
    for _ in range(4):
        over = len(inline.text.encode("utf-8", "surrogatepass")) - INLINE_BYTES_MAX
        if over <= 0 or runtime != "codex":
            break
        limit = max(1_000, limit - over - 64)
        inline = context.fit_inline(limit_chars=limit, spill_path=str(spill), read_command=command)
    if inline.spilled and inline.spill_bytes is not None:
        from continuation.boundary import sealed_files

        sealed_files.write(spill, inline.spill_bytes, sealer, durable=not inline.spill_parts)
        for path, data in inline.spill_parts:  # the same text cut in parts: synced once, below
            sealed_files.write(path, data, sealer, durable=False)
        if inline.spill_parts:
            from continuation.host.atomic import fsync_dir

            fsync_dir(os.path.dirname(spill))
    if runtime == "gemini":
        from capsule.channel import for_gemini

        return for_gemini(inline.text)
    return inline.text


def context_answer(thread: Thread, runtime: str, event_name: str, *, via: str,
                   reason: str = "boundary", exclude_input: str | None = None,
                   reserve: int = 0) -> dict:
    """The hook answer carrying the assembled context, and the record of its delivery.

    The context is always current: when anything but bookkeeping happened since the newest
    checkpoint (e.g. a turn completed after PreCompact while the compact SessionStart was lost),
    a new checkpoint is committed first, so a handled input is never offered as pending. On the
    UserPromptSubmit fallback this is boundary work on a prompt hook (the tokenizer loads), paid
    only when a boundary's delivery was lost. ``exclude_input`` (the prompt being submitted) is
    not repeated verbatim: the runtime sends it with this very request."""
    fresh = fresh_context(thread, reason, exclude_input=exclude_input)
    if fresh is None:
        return {}
    loaded, context = fresh
    prefix = "".join(f"[continuation: {problem}]\n" for problem in loaded.problems)
    inline = prefix + fit_for_runtime(thread, runtime, context, loaded.checkpoint.generation,
                                      reserve=reserve + len(prefix))
    record_delivery(thread, loaded, via=via, chars=len(inline), source=f"hook:{runtime}")
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": inline}}


def fresh_context(thread: Thread, reason: str, *, instructions: str | None = None,
                  exclude_input: str | None = None):
    """(loaded checkpoint, assembled context) for a fresh context now: the newest checkpoint
    when it is current, else a new one (see :func:`context_answer`); None without one."""
    cp = fresh_checkpoint(thread, reason)
    try:
        loaded = checkpoints.load(thread, cp.generation, decode=False)
    except checkpoints.CheckpointError as exc:  # none verifies (corrupt, or pruned by gc)
        loaded, problems = None, [str(exc)]
    else:
        if loaded is None:
            return None
        problems = loaded.problems
    if loaded is None or loaded.checkpoint.generation != cp.generation:
        # the newest capsule did not verify: the log is the authority, so deliver a capsule
        # rebuilt from it rather than an older one's stale states (problems are still said)
        rebuilt = commit_checkpoint(thread, reason=reason, snapshot=False)
        loaded = checkpoints.load(thread, rebuilt.generation, decode=False)
        loaded.problems = problems + loaded.problems
    return loaded, assembled_context(thread, loaded, instructions, exclude_input)


def record_delivery(thread: Thread, loaded: checkpoints.LoadedCapsule, *, via: str, chars: int,
                    source: str) -> None:
    """The fact that a fresh context got this checkpoint (it clears ``needs_context``)."""
    thread.record(ev.CONTEXT_DELIVERED, {"generation": loaded.checkpoint.generation, "via": via,
                                         "checkpoint_id": loaded.checkpoint.checkpoint_id,
                                         "chars": chars}, source=source)


def _delivered_to_this_context(thread: Thread) -> bool:
    """A context was delivered after the newest boundary, and nothing but bookkeeping (session
    starts, settings, checkpoints) happened since: the current fresh context already has it."""
    last = thread.store.events_of_types(thread.key, [ev.CONTEXT_DELIVERED, ev.BOUNDARY], newest=1)
    if not last or last[0]["type"] != ev.CONTEXT_DELIVERED:
        return False
    later = thread.events(after=last[0]["seq"])
    return all(e["type"] in _BOOKKEEPING for e in later)


def on_session_start(thread: Thread, runtime: str, source: str, *, source_tag: str) -> dict | None:
    row = thread.row
    if source == "compact":
        if not row["needs_context"]:
            if _delivered_to_this_context(thread):
                # Codex compacting before a resumed turn sends SessionStart(resume) and then
                # SessionStart(compact) for one fresh context: deliver the block once.
                return None
            # PreCompact never reached us: the boundary happened all the same
            thread.record(ev.BOUNDARY, {"kind": "compact", "trigger": "unknown"}, source=source_tag)
        return context_answer(thread, runtime, "SessionStart", via="session_start",
                              reason="compact")
    notice = _recovery_notice(thread) if source in ("startup", "resume", "fork") else ""
    if source in ("resume", "fork"):
        carry = row["needs_context"] or bool(thread.inputs(("interrupted", "reconciling")))
        if carry:
            return with_notice(context_answer(thread, runtime, "SessionStart",
                                              via="session_start", reason=source,
                                              reserve=len(notice) + 2 if notice else 0), notice)
    return with_notice(None, notice)
