"""One task under one recovery policy: the scripted agent (:mod:`.coder`) in a fresh generated
repository (:mod:`.tasks`), its end state graded, its costs counted.

Policies (the same agent, the same seeded luck per attempt; only what happens at a failure
differs):

- ``none``: no check runs; mistakes stay.
- ``blind-retry``: the check runs at the end of each input; when it fails, the files go back to
  the input's start and the input is run again from scratch (the agent remembers nothing of the
  attempt), up to ``retries`` times.
- ``rewind-no-summary``: the check runs after every change and a pass commits a checkpoint (the
  guard with policy ``report``, its words never shown); a failure rewinds conversation and files
  to the last passing checkpoint at once, as a user would with ``continuation rewind --both``,
  without a summary: the agent's memory is what it was at that checkpoint. Up to ``retries``
  rewinds per input.
- ``loop``: the recovery loop (``continuation.guard``, policy ``rewind``, after every change,
  rewinding after 2 failures in a row or at once on the check's fatal exit code, ``retries``
  automatic rewinds per input); the agent reads its reports and summaries.

All four record through the Python API (the loop's only path difference is the guard), so
wall times compare.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from continuation.guard.config import GuardConfig
from continuation.guard.runner import run_check
from continuation.prove.coder import ApiDriver, Coder, Rates, Reply
from continuation.prove.tasks import CHECK, FATAL_EXIT, Task, build_repo, grade

POLICIES = ("none", "blind-retry", "rewind-no-summary", "loop")
RETRIES = 3


def loop_guard(retries: int = RETRIES) -> GuardConfig:
    return GuardConfig(CHECK, when="change", policy="rewind", failures_before_rewind=2,
                       fatal_exit_codes=[FATAL_EXIT], rewinds_per_input=retries,
                       reports_per_input=5, timeout=120)


class _Timed:
    """Wraps a driver: time spent in it, beside the agent's own work."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0

    def _timed(self, name, *args):
        t0 = time.perf_counter()
        try:
            return getattr(self.inner, name)(*args)
        finally:
            self.seconds += time.perf_counter() - t0

    def begin(self, text):
        return self._timed("begin", text)

    def call(self, tool, args, run):
        return self._timed("call", tool, args, run)

    def end(self, claim):
        return self._timed("end", claim)


class ManualRewindDriver(ApiDriver):
    """``rewind-no-summary``: the guard detects and checkpoints; at a failure the harness
    rewinds both halves to the last passing checkpoint and rolls the agent's memory back to
    what it was then. The agent is told nothing."""

    def __init__(self, thread, coder_ref: list, retries: int):
        super().__init__(thread)
        self.coder_ref = coder_ref
        self.retries = retries
        self.saved: dict[str, dict] = {}
        self.rewinds_this_input = 0
        self.rewinds = 0

    def begin(self, text):
        self.rewinds_this_input = 0
        super().begin(text)

    def _after(self, outcome) -> None:
        if outcome is None:
            return
        coder = self.coder_ref[0]
        if outcome.action == "pass":
            self.saved[outcome.checkpoint_id] = coder.memory()
        elif outcome.action == "report" and outcome.checkpoint_id in self.saved \
                and self.rewinds_this_input < self.retries:
            self.rewinds_this_input += 1
            self.rewinds += 1
            self.thread.rewind(outcome.checkpoint_id, "both", reason="the check failed")
            coder.restore_memory(self.saved[outcome.checkpoint_id])

    def call(self, tool, args, run):
        super().call(tool, args, run)
        self._after(self.last)
        return None  # no summary, no report: the agent is told nothing

    def end(self, claim):
        reply = super().end(claim)
        if self.last is not None and self.last.action == "report":
            self._after(self.last)
            # the failure was not shown; after a rewind the agent works on from its memory
            return Reply(continues=self.last.continues and self.rewinds_this_input <= self.retries)
        return Reply(continues=reply.continues, stops=reply.stops)


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git", "__pycache__"))


def _restore_tree(saved: Path, root: Path) -> None:
    for child in root.iterdir():
        if child.name == ".git":
            continue
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    for child in saved.iterdir():
        target = root / child.name
        shutil.copytree(child, target) if child.is_dir() else shutil.copy2(child, target)


def run_task(task: Task, policy: str, workdir: Path, *, home: Path, rates: Rates | None = None,
             seed: int = 0, retries: int = RETRIES, git_env: dict | None = None) -> dict:
    from continuation.api import open_thread
    from continuation.session.guard_notes import GUARD_RAN

    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}")
    rates = rates or Rates()
    base = workdir / policy / task.name
    root = build_repo(task, base / "repo", base / "remote.log", git_env)
    remote = base / "remote.log"
    guard = {"loop": loop_guard(retries),
             "rewind-no-summary": GuardConfig(CHECK, when="change", policy="report",
                                              fatal_exit_codes=[FATAL_EXIT],
                                              reports_per_input=1000, timeout=120)}.get(policy, False)
    t0 = time.perf_counter()
    snapshots = snapshot_seconds = end_checks = 0
    check_seconds = 0.0
    with open_thread(f"{policy}-{task.name}", home=home, workspace=root, guard=guard) as thread:
        ref: list = []
        driver = ManualRewindDriver(thread, ref, retries) if policy == "rewind-no-summary" \
            else ApiDriver(thread)
        timed = _Timed(driver)
        coder = Coder(task, root, timed, rates, seed)
        ref.append(coder)
        for n in range(len(task.inputs)):
            if policy != "blind-retry":
                coder.run_input(n)
                continue
            s0 = time.perf_counter()
            saved = base / f"input-{n}"
            _copy_tree(root, saved)
            memory = coder.memory()
            snapshots += 1
            snapshot_seconds += time.perf_counter() - s0
            for attempt in range(retries + 1):
                coder.run_input(n)
                check = run_check(CHECK, str(root), timeout=120)
                end_checks += 1
                check_seconds += check.seconds
                if check.passed or attempt == retries:
                    break
                s0 = time.perf_counter()
                _restore_tree(saved, root)
                coder.restore_memory(memory)
                snapshot_seconds += time.perf_counter() - s0
        wall = time.perf_counter() - t0
        events = thread._thread.events()
        runs = [e["data"] for e in events if e["type"] == GUARD_RAN]
        checkpoints = sum(1 for e in events if e["type"] == "checkpoint_committed")
        automatic = sum(1 for e in events if e["type"] == "workspace_restored"
                        and (e["data"] or {}).get("by") == "guard")
    check_seconds += sum(r.get("seconds") or 0 for r in runs)
    graded = grade(task, root, remote)
    done = len(graded["satisfied"])
    manual = driver.rewinds if isinstance(driver, ManualRewindDriver) else 0
    return {
        "task": task.name, "policy": policy, "requirements": graded["total"],
        "satisfied": done, "progress": done / graded["total"],
        "success": done == graded["total"], "repeated_calls": coder.repeated_calls,
        "calls": sum(coder.calls.values()), "repeated_external": graded["repeated_external"],
        "wall_s": wall, "checks": len(runs) + end_checks, "check_s": check_seconds,
        "checkpoints": checkpoints + snapshots,
        # what recovery itself cost beyond running the check: checkpoints, rewinds, the
        # record of it (the guard's time in the driver), or the input snapshots' copies
        "checkpoint_s": (max(0.0, timed.seconds - sum(r.get("seconds") or 0 for r in runs))
                         if guard else 0.0) + snapshot_seconds,
        "rewinds": automatic + manual + (end_checks - len(task.inputs) if policy == "blind-retry" else 0),
    }
