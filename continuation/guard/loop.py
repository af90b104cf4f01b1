"""The recovery loop: run the project's check, judge it, act by the policy, say what was done.

When (``config.when``):

- ``turn`` (default): at a turn's end (Stop, Gemini's AfterAgent, the API's
  ``turn_completed``), when a call of the agent that may have changed the workspace finished
  since the last run (a read-only turn is not checked again);
- ``change``: after such a call (PostToolUse, AfterTool, the API's ``tool_outcome``), every
  ``every`` of them; at the turn's end, changes not checked yet are.

A turn that ends while the newest verdict is a failure is judged again without running the
check (nothing changed since). A thread that never ran the check runs it once at session start
(:meth:`Loop.at_start`): a failure there is the project's state before the agent did anything,
recorded with action ``none``, never counted against the agent.

What a failure does (``config.policy``):

- ``report``: the check's output and the last passing checkpoint go to the model (after a call:
  the tool result's added context; at a turn's end: the turn is sent back to work, at most
  ``reports_per_input`` times per user input, then the agent is stopped and the user told);
- ``rewind``: reported as above until ``failures_before_rewind`` failed verdicts in a row (or
  at once for an exit code in ``fatal_exit_codes``); then the workspace files are put back to
  the last passing checkpoint (a safety snapshot first, the user's own edits kept: the files
  half of ``continuation rewind``, undone by ``restore --undo``) and the model is told what was
  tried, what failed with the output, which files were put back and what to do differently;
  at most ``rewinds_per_input`` times per user input, then the agent is stopped;
- ``halt``: the agent is stopped and the user told.

Calls that reached outside the workspace since the last passing state (``toolcalls.effects``)
are named in every summary and never repeated by the loop itself: the loop runs nothing but
the check. A pass commits a checkpoint (reason ``guard``) unless the newest one is current, so
the last good state always exists once the check has passed. Every step is a fact
(:mod:`continuation.session.guard_notes`).
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from continuation.guard import summary
from continuation.guard.config import DEADLINE_MARGIN_S, GuardConfig
from continuation.session import guard_notes as notes

SOURCE_SUFFIX = ":guard"
#: how far before a run's start the calls that finished after it are looked for (a call that
#: started earlier and was still running when the check started)
CALL_LOOKBACK = 2000
#: events after the newest checkpoint that leave it current for a pass
_CURRENT = {"checkpoint_committed", "boundary", "session_started", "settings",
            "context_delivered", "session_ended", "assistant_claim", *notes.GUARD_TYPES}


class GuardOutcome:
    """What one evaluation did. ``message``: for the model (None: nothing to tell it);
    ``user_message``: for the user; ``continues``: at a turn's end, the turn is sent back to
    work with ``message``; ``action``: pass / report / rewind / halt / error / none."""

    __slots__ = ("action", "verdict", "continues", "message", "user_message", "run",
                 "checkpoint_id", "files", "failures_in_row", "rewinds_used")

    def __init__(self, action: str, verdict: str, *, continues: bool = False,
                 message: str | None = None, user_message: str | None = None,
                 run: dict | None = None, checkpoint_id: str | None = None,
                 files: dict | None = None, failures_in_row: int = 0, rewinds_used: int = 0):
        self.action = action
        self.verdict = verdict
        self.continues = continues
        self.message = message
        self.user_message = user_message
        self.run = run
        self.checkpoint_id = checkpoint_id
        self.files = files
        self.failures_in_row = failures_in_row
        self.rewinds_used = rewinds_used

    @property
    def stops(self) -> bool:
        return self.action == "halt"

    def __repr__(self):
        return f"GuardOutcome({self.action!r}, verdict={self.verdict!r}, continues={self.continues})"


class Loop:
    """The loop over one thread, recording through ``rec`` (a ``session.recording.Recorder``).
    ``long_lived``: the caller is a process that checkpoints again and again (the Python API),
    not a hook process that ends after one payload: its checkpoints are built in process."""

    def __init__(self, thread, rec, config: GuardConfig, *, long_lived: bool = False):
        self.thread = thread
        self.rec = rec
        self.config = config
        self.root = thread.row["workspace_root"]
        self.long_lived = long_lived

    # -- entry points --------------------------------------------------------------------------
    def at_start(self) -> GuardOutcome | None:
        """Session start: a thread that never ran the check runs it, so that a passing state
        (and its checkpoint) exists before the agent changes anything."""
        if not self.root:
            return None
        with self._serial(wait=True) as held:
            if not held:
                return None
            state = notes.loop_state(self.thread.store, self.thread.key, None)
            if state.last_run is not None:
                return None
            return self._evaluate("start", None, rerun=True, scope=notes.THREAD_SCOPE)

    def at_turn_end(self, turn: str | None) -> GuardOutcome | None:
        if not self.root:
            return None
        with self._serial(wait=True) as held:
            if not held:
                return None
            input_id, scope = self._scope(turn)
            state = notes.loop_state(self.thread.store, self.thread.key, scope)
            # "change" with every > 1 may leave the turn's last changes unchecked: checked now
            if (state.last_run is None and self.config.when == "turn") or \
                    self._changes_since(state):
                return self._evaluate("turn", turn, rerun=True, input_id=input_id,
                                      scope=scope, state=state)
            if not state.unsettled:
                return None
            if not self._ran_in(state, turn):
                # a failure (or a rewind) of an earlier turn is not this one's verdict: the
                # files may have changed since with no call of the agent's (the user fixed
                # them, a restore, a rewind its hook never finished)
                return self._evaluate("turn", turn, rerun=True, input_id=input_id,
                                      scope=scope, state=state)
            if state.failing:
                return self._evaluate("turn", turn, rerun=False, input_id=input_id,
                                      scope=scope, state=state)
            return None

    def after_call(self, call_id: str, turn: str | None) -> GuardOutcome | None:
        if not self.root or self.config.when != "change":
            return None
        # another call's check is running (parallel calls): this call's change is counted
        # by the next run (a change is covered only by a run that started after it)
        with self._serial(wait=False) as held:
            if not held:
                return None
            input_id, scope = self._scope(turn)
            state = notes.loop_state(self.thread.store, self.thread.key, scope)
            changed = self._changes_since(state)
            if changed == 0 or (state.last_run is not None and changed < self.config.every):
                return None
            return self._evaluate("change", turn, rerun=True, input_id=input_id, scope=scope,
                                  state=state, call_id=call_id)

    def delivered(self, outcome: GuardOutcome, via: str, text: str | None = None) -> None:
        """Record that ``text`` (default: the outcome's message) was handed on through ``via``."""
        text = outcome.message if text is None else text
        if not text:
            return
        self.rec.record(notes.GUARD_DELIVERED, notes.delivery(outcome.action, via, text))

    # -- reading the log -----------------------------------------------------------------------
    def _input_of(self, turn: str | None) -> str | None:
        if not turn:
            return None
        record = self.thread.store.turn_data(self.thread.key, turn)
        ids = (record or {}).get("input_ids") or []
        return ids[-1] if ids else None

    def _scope(self, turn: str | None) -> tuple[str | None, str]:
        """(the input, the scope its budgets count in): the input; a turn with no input
        recorded (a runtime's own prompt, a prompt hook that never ran) counts per turn, a
        call outside every turn in the thread's one scope, so no budget is ever unbounded."""
        input_id = self._input_of(turn)
        return input_id, input_id or (f"turn:{turn}" if turn else notes.THREAD_SCOPE)

    @staticmethod
    def _ran_in(state, turn: str | None) -> bool:
        return turn is not None and ((state.last_run or {}).get("data") or {}).get("turn_id") == turn

    def _changes_since(self, state) -> int:
        """What may have changed the workspace since the last run started: the calls finished
        after it that were not read-only (one that finished while the check ran may have
        changed files the check had read already), and a restore of its files (a rewind, an
        undo), one for all."""
        from continuation.session.branch import ROLLED_BACK, WORKSPACE_RESTORED
        from continuation.toolcalls.classify import READ_ONLY, classify

        covers = state.covers_seq
        calls = self.thread.tool_calls(after_seq=max(0, covers - CALL_LOOKBACK))
        changed = sum(1 for c in calls
                      if c.status in ("ok", "error") and (c.finished_seq or 0) > covers
                      and classify(c.tool, c.args).kind != READ_ONLY)
        if covers:
            restores = self.thread.store.events_of_types(
                self.thread.key, [WORKSPACE_RESTORED, ROLLED_BACK], after=covers)
            changed += any(e["type"] == WORKSPACE_RESTORED or (e["data"] or {}).get("files")
                           for e in restores)
        return changed

    def _calls_since(self, seq: int | None) -> list:
        """The calls since ``seq`` that may have changed something (reads left out)."""
        from continuation.toolcalls.classify import READ_ONLY, classify

        floor = seq if seq is not None else max(0, int(self.thread.row["last_seq"]) - 5000)
        return [c for c in self.thread.tool_calls(after_seq=floor)
                if c.status != "rolled_back" and classify(c.tool, c.args).kind != READ_ONLY]

    @staticmethod
    def _outside(calls: list) -> list:
        from continuation.toolcalls.effects import outside_effect

        found = []
        for c in calls:
            why = outside_effect(c.tool, c.args)
            if why:
                found.append((c, why))
        return found

    # -- the evaluation ------------------------------------------------------------------------
    def _evaluate(self, trigger: str, turn: str | None, *, rerun: bool, scope: str,
                  input_id=None, state=None, call_id: str | None = None) -> GuardOutcome:
        cfg = self.config
        store, key = self.thread.store, self.thread.key
        if state is None:
            state = notes.loop_state(store, key, scope)
        if rerun:
            from continuation.guard.runner import run_check

            covers = int(self.thread.row["last_seq"])  # what finished before the check started
            result = run_check(cfg.command, self.root, timeout=cfg.timeout,
                               output_bytes=cfg.output_bytes, fatal_codes=cfg.fatal_exit_codes)
            run = {**result.to_data(), "trigger": trigger, "turn_id": turn,
                   "input_id": input_id, "call_id": call_id, "covers_seq": covers}
            run_seq = self.rec.record(notes.GUARD_RAN, run).seq
        else:
            run, run_seq = dict(state.last_run["data"] or {}), state.last_run_seq
        verdict = run.get("verdict") or "error"
        base = {"verdict": verdict, "run_seq": run_seq, "rerun": rerun, "trigger": trigger,
                "input_id": input_id, "scope": scope, "turn_id": turn, "policy": cfg.policy,
                "rewinds_budget": cfg.rewinds_per_input, "reports_budget": cfg.reports_per_input}
        if verdict == "pass":
            cp_id, cp_seq = self._good_checkpoint()
            self._verdict(base, action="pass", checkpoint_id=cp_id, checkpoint_seq=cp_seq,
                          failures_in_row=0, rewinds_used=state.rewinds_used,
                          reports_used=state.reports_used)
            return GuardOutcome("pass", verdict, run=run, checkpoint_id=cp_id,
                                rewinds_used=state.rewinds_used)
        if verdict == "error":
            self._verdict(base, action="error", why=run.get("error"))
            return GuardOutcome("error", verdict, run=run,
                                user_message=summary.error(cfg.command, run, cfg.origin))
        if trigger == "start":  # the project's state before the agent did anything
            self._verdict(base, action="none", why="failing before the agent started")
            return GuardOutcome("none", verdict, run=run)
        return self._on_failure(run, base, state, turn, turn_end=trigger == "turn")

    def _on_failure(self, run: dict, base: dict, state, turn, *, turn_end: bool) -> GuardOutcome:
        cfg = self.config
        verdict = base["verdict"]
        failures = state.failures_in_row + 1
        good = (state.good_checkpoint, state.good_seq)
        since_good = self._calls_since(state.good_seq)
        # every outside effect since the passing state still stands; what was tried counts
        # from the newest rewind (it undid the files of what came before)
        outside = self._outside(since_good)
        floor = max(state.good_seq or 0, state.last_rewind["seq"] if state.last_rewind else 0)
        tried = [c for c in since_good if c.started_seq > floor]
        fatal = verdict == "fatal"
        # a checkpoint may hold no file contents (policy none or metadata, a folder outside git
        # too large to snapshot): nothing to rewind to, so the failure is reported
        cannot = (self._cannot_rewind(good[0]) if cfg.policy == "rewind" and good[0] else
                  None if good[0] else "no passing state was recorded to rewind to")
        action, why = self._decide(state, failures, fatal, turn_end, cannot=cannot)
        continues = turn_end and action in ("report", "rewind")
        common = dict(failures_in_row=failures, checkpoint_id=good[0], checkpoint_seq=good[1],
                      reports_used=state.reports_used + (1 if action == "report" and continues else 0),
                      rewinds_used=state.rewinds_used + (1 if action == "rewind" else 0))
        self._verdict(base, action=action, why=why, continues=continues, **common)
        files = None
        if action == "rewind":
            try:
                files = self._rewind(good[0], failures, fatal)
            except Exception as exc:  # noqa: BLE001 - a failed rewind stops the agent, said why
                action, why, continues = "halt", f"the automatic rewind failed ({exc})", False
                self._verdict(base, action=action, why=why, continues=False, **common)
        if action == "halt":
            text = summary.halt(cfg.command, run, why=why, good=good, outside=outside,
                                thread_key=self.thread.key,
                                can_rewind=(cannot if cfg.policy == "rewind"
                                            else self._cannot_rewind(good[0])) is None)
            if turn:
                self.rec.abort_turn(turn, f"guard: {why}"[:300])
            return GuardOutcome("halt", verdict, message=text, user_message=text, run=run,
                                checkpoint_id=good[0], failures_in_row=failures,
                                rewinds_used=common["rewinds_used"])
        if action == "rewind":
            left = self._left_as_is(files or {}, good[1])
            text = summary.rewind(cfg.command, run, failures=failures, fatal=fatal, good=good,
                                  tried=tried, files=files or {}, outside=outside,
                                  used=common["rewinds_used"], budget=cfg.rewinds_per_input,
                                  left=left)
            put_back = sum(len((files or {}).get(k) or []) for k in ("restored", "recreated", "deleted"))
            user = (f"continuation guard: `{summary._clip(cfg.command, 80)}` "
                    f"{summary.how_it_failed(run)}; {put_back} file(s) put back to checkpoint "
                    f"{good[0]} automatically"
                    + (f", {len(left)} the checkpoint could not store left as they are"
                       if left else "") + " (`continuation restore --undo` undoes it).")
            return GuardOutcome("rewind", verdict, continues=continues, message=text,
                                user_message=user, run=run, checkpoint_id=good[0], files=files,
                                failures_in_row=failures, rewinds_used=common["rewinds_used"])
        text = summary.report(cfg.command, run, failures=failures, policy=cfg.policy,
                              threshold=cfg.failures_before_rewind, good=good,
                              cannot=cannot, outside=outside, turn_end=turn_end)
        user = (f"continuation guard: `{summary._clip(cfg.command, 80)}` "
                f"{summary.how_it_failed(run)}; the agent was told.")
        return GuardOutcome("report", verdict, continues=continues, message=text,
                            user_message=user, run=run, checkpoint_id=good[0],
                            failures_in_row=failures, rewinds_used=state.rewinds_used)

    def _decide(self, state, failures: int, fatal: bool, turn_end: bool, *,
                cannot: str | None) -> tuple[str, str]:
        cfg = self.config
        if cfg.policy == "halt":
            return "halt", "the guard's policy is to stop at a failure"
        if cfg.policy == "rewind" and (fatal or failures >= cfg.failures_before_rewind):
            if cannot is None:
                if state.rewinds_used < cfg.rewinds_per_input:
                    return "rewind", ("the check called the failure fatal" if fatal else
                                      f"{failures} failed checks in a row")
                return "halt", (f"the budget of {cfg.rewinds_per_input} automatic rewind(s) "
                                "for this request is spent")
            why = cannot
        else:
            why = f"failed check {failures} in a row"
        if turn_end and state.reports_used >= cfg.reports_per_input:
            return "halt", (f"the turn ended with the check failing {state.reports_used + 1} "
                            f"times for this request (budget {cfg.reports_per_input})")
        return "report", why

    @contextmanager
    def _serial(self, *, wait: bool):
        """One evaluation at a time per workspace (parallel calls' hooks, two threads of one
        workspace): two checks at once in one tree disturb each other, and two loops reading
        the same state would both rewind (the second a no-op that ``restore --undo`` would
        then undo instead of the first). Yields whether it is held: ``wait`` False gives up at
        once, else after the time a check and its rewind may take."""
        from filelock import FileLock, Timeout

        from continuation.host.digest import sha256_hex
        from continuation.host.paths import ensure_private_dir

        folder = ensure_private_dir(os.path.join(self.thread.engine.home_str, "locks"))
        name = "guard-" + sha256_hex(os.fsencode(self.root))[:24] + ".lock"
        lock = FileLock(os.path.join(folder, name), mode=0o600,
                        timeout=float(self.config.timeout) + DEADLINE_MARGIN_S if wait else 0)
        try:
            lock.acquire()
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _left_as_is(self, files: dict, since_seq: int | None) -> dict[str, str]:
        """Files the agent's calls since the checkpoint wrote that the rewind could not put
        back (path -> why): what the snapshots record without storing (over the size cap,
        excluded, inside a submodule or a nested repository), and what the restore skipped
        that is not the user's own."""
        from continuation.session.workspace_link import session_written_paths

        safety = files.get("safety") or {}
        oversized = {o.get("path") for o in safety.get("oversized") or [] if isinstance(o, dict)}
        excluded = set(safety.get("excluded") or [])
        walls = [w.get("path") for w in safety.get("submodules") or [] if isinstance(w, dict)]
        walls = [w for w in [*walls, *(safety.get("nested_repos") or [])] if isinstance(w, str)]
        left = {}
        for path in session_written_paths(self.thread, after_seq=since_seq or 0):
            if path in oversized:
                left[path] = "over the size cap: recorded, never stored"
            elif path in excluded:
                left[path] = "excluded by the workspace policy"
            elif any(path.startswith(w.rstrip("/") + "/") for w in walls):
                left[path] = "inside a submodule or nested repository: never stored"
        users = {k.get("path") for k in files.get("kept_edits") or []} | set(files.get("kept") or [])
        why = files.get("skipped_why") or {}
        for path in files.get("skipped") or []:
            if path not in users:
                left.setdefault(path, why.get(path) or "skipped by the restore")
        return left

    def _cannot_rewind(self, checkpoint_id: str | None) -> str | None:
        """Why the files cannot be put back to ``checkpoint_id``, or None when they can."""
        if not checkpoint_id:
            return "no passing state was recorded to rewind to"
        from continuation.boundary.checkpoints import find_checkpoint
        from continuation.rewind.errors import RewindError
        from continuation.rewind.operation import workspace_ref

        try:
            workspace_ref(find_checkpoint(self.thread.engine, checkpoint_id))
        except RewindError as exc:
            return f"the files cannot be put back: {exc}"
        return None

    def _verdict(self, base: dict, **fields) -> None:
        self.rec.record(notes.GUARD_VERDICT, {**base, **fields})

    def _good_checkpoint(self) -> tuple[str, int]:
        """The checkpoint of a pass: the newest one when nothing but bookkeeping followed it,
        else a new one (reason ``guard``)."""
        from continuation.boundary import checkpoints

        newest = checkpoints.newest_checkpoint(self.thread)
        if newest is not None and all(e["type"] in _CURRENT
                                      for e in self.thread.events(after=newest.seq)):
            return newest.checkpoint_id, newest.seq
        from continuation.boundary.crossing import commit_checkpoint

        self._models_here()
        cp = commit_checkpoint(self.thread, reason="guard")
        return cp.checkpoint_id, cp.seq

    def _models_here(self) -> None:
        """In a long-lived process, the capsule models once, here: a checkpoint then builds its
        capsule in process (``capsule_worker.should_use`` says no once they are loaded) instead
        of forking a worker that imports them again at every pass."""
        if self.long_lived:
            import capsule.model  # noqa: F401

    def _rewind(self, checkpoint_id: str, failures: int, fatal: bool) -> dict:
        from continuation.rewind.operation import apply_rewind, plan_rewind

        self._models_here()
        reason = (f"the check `{summary._clip(self.config.command, 120)}` "
                  + ("called the failure fatal" if fatal else f"failed {failures} times in a row"))
        plan = plan_rewind(self.thread.engine, checkpoint_id, "files", reason=reason,
                           applying=True, at_once=True)
        plan.by = "guard"
        result = apply_rewind(self.thread.engine, plan, source=self.rec.source + SOURCE_SUFFIX,
                              boundary=False)
        return result.files or {}
