"""Rewind cost on a long thread, as a ratio to appending the same number of events.

Builds a thread of N events (default 10,000: turns of prompt, tool start, tool finish, claim,
turn end) through the engine API, with checkpoints along the way, then times:

- append:  appending the N events (the baseline, measured in the same run);
- rewind:  ``rewind --conversation`` to a checkpoint in the middle and one near the end
  (the rollback fact, whose fold replays the log up to the target, plus the new checkpoint
  with its recovery summary), and the read of the summary rebuilt from the log.

Prints the times and the ratios rewind / append. Run: ``python scripts/bench_rewind.py [N]``.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path


def build(engine, n: int, checkpoint_every: int):
    from continuation.boundary.crossing import commit_checkpoint

    thread = engine.thread("codex", f"bench-{n}")
    cps = []
    turn = 0
    start = time.perf_counter()
    paused = 0.0
    while thread.row["last_seq"] < n:
        turn += 1
        tid = f"turn-{turn}"
        thread.admit(f"request number {turn}: change module {turn % 50}", turn_id=tid)
        thread.tool_started(f"call-{turn}", "Bash", {"command": f"pytest tests/test_{turn % 50}.py"}, turn_id=tid)
        thread.tool_finished(f"call-{turn}", "error" if turn % 7 == 0 else "ok",
                             exit_code=1 if turn % 7 == 0 else 0, output="1 failed" if turn % 7 == 0 else "ok",
                             turn_id=tid)
        thread.claim(f"done with request {turn}", turn_id=tid)
        thread.turn_completed(tid)
        if turn % checkpoint_every == 0:
            t0 = time.perf_counter()
            cps.append(commit_checkpoint(thread, reason="manual", snapshot=False))
            paused += time.perf_counter() - t0
    elapsed = time.perf_counter() - start - paused
    appended = thread.row["last_seq"] - len(cps)  # checkpoint facts are not in the baseline
    return thread, cps, elapsed, appended


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTINUATION_HOME"] = str(Path(tmp) / "state")
        from continuation.session.engine import Engine
        from continuation.rewind.operation import apply_rewind, plan_rewind

        with Engine(Path(tmp) / "state") as engine:
            thread, cps, append_s, appended = build(engine, n, checkpoint_every=max(1, n // 5 // 20))
            per_event = append_s / appended
            total = thread.row["last_seq"]
            print(f"thread of {total} events ({appended} appended in {append_s:.2f} s, "
                  f"{per_event * 1e3:.3f} ms/event; {len(cps)} checkpoints)")
            rows = []
            for label, cp in (("near the end", cps[-2]), ("the middle", cps[len(cps) // 2])):
                t0 = time.perf_counter()
                plan = plan_rewind(engine, cp.checkpoint_id, "conversation", reason="bench")
                t1 = time.perf_counter()
                result = apply_rewind(engine, plan)
                t2 = time.perf_counter()
                rows.append((label, cp.seq, t1 - t0, t2 - t1, len(plan.inputs), result))
            for label, seq, plan_s, apply_s, undone, result in rows:
                print(f"rewind to {label} (event {seq}, {undone} inputs undone): preview "
                      f"{plan_s:.2f} s, apply {apply_s:.2f} s; rewind/append ratio "
                      f"{(plan_s + apply_s) / append_s:.3f}x "
                      f"(= appending {int((plan_s + apply_s) / per_event)} events)")
            state_ok = engine.store.replay(thread.key).states() == engine.store.derived_state(thread.key).states()
            print(f"derived state after both rewinds equals a full replay: {state_ok}")
            return 0 if state_ok else 1


if __name__ == "__main__":
    sys.exit(main())
