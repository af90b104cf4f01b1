#!/usr/bin/env python3
"""Where a PreCompact hook's time goes (or, with ``--rewind``, a files rewind's): the median
timeline of its phases.

Sets up what ``bench_boundaries.py`` measures PreCompact on (an installed copy, a 20,000-file
repository, a 1,000-event Claude Code thread, an 8 MB transcript; smaller with the options),
then runs rounds of three edits and one PreCompact hook with ``CONTINUATION_PHASE_MARKS`` set
(``continuation.host.phase_marks``), and prints for each phase the median time since the hook
process was started (just before ``subprocess.run``), with the range over the rounds, and which
process reached it: the hook's (its snapshot's thread included) or its capsule worker's. Beside them,
the median of ``git stash create`` run in the same rounds, the PreCompact target's baseline.

``--rewind``: rounds of 25 damaged files and ``continuation rewind CP --files --yes`` to the
thread's newest checkpoint instead (the rewind's process and its worker), beside
``git restore --source=<snapshot> --worktree -- .``, that target's baseline, as
``bench_boundaries.py`` measures them.

This is a diagnostic, not a benchmark: the marks' own writes (an open, a write and a close
each) are in the times.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_boundaries import (  # noqa: E402
    build_repo, hook_payload, newest_checkpoint, populate, write_transcript)
from benchlib import in_scratch_folder, install, isolated_git_home, timed  # noqa: E402
from continuation.host import phase_marks  # noqa: E402

SESSION = "trace"


def read_marks(path: Path) -> list[tuple[int, str, str]]:
    """(ns, process, label) of one hook's (or rewind's) marks: ``hook`` for its own process."""
    return [(ns, "hook" if pid == boundary else "worker", label)
            for ns, pid, boundary, label in phase_marks.read(path)]


def timeline(rounds: list[tuple[int, list[tuple[int, str, str]]]]) -> list[tuple[str, str, list[float]]]:
    """(label, process, ms since start in each round that reached it), by median time."""
    seen: dict[tuple[str, str], list[float]] = {}
    for start_ns, marks in rounds:
        reached: dict[tuple[str, str], int] = {}
        for ns, process, label in marks:  # a phase reached twice (a rewind's two snapshots): #2
            reached[label, process] = reached.get((label, process), 0) + 1
            if reached[label, process] > 1:
                label = f"{label} #{reached[label, process]}"
            seen.setdefault((label, process), []).append((ns - start_ns) / 1e6)
    rows = [(label, process, times) for (label, process), times in seen.items()]
    return sorted(rows, key=lambda row: statistics.median(row[2]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--events", type=int, default=1_000)
    ap.add_argument("--transcript-mb", type=float, default=8.0,
                    help="size of the session file the payload names (0: none)")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--warm-rounds", type=int, default=3)
    ap.add_argument("--rewind", action="store_true",
                    help="trace `rewind CP --files --yes` (25 damaged files) instead")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    args = ap.parse_args()

    return in_scratch_folder("trace-precompact-", args.keep, lambda base: run(args, base))


def run(args, base: Path) -> int:
    rng = random.Random(1234)
    git_home = isolated_git_home(base)
    os.environ["CONTINUATION_HOME"] = str(base / "state")
    inst = install(base)
    paths = build_repo(base / "repo", args.files, args.size, rng)
    repo = (base / "repo").resolve()
    key = populate(base / "state", SESSION, args.events, repo)
    os.sync()  # the setup's writes flushed before measuring (see bench_boundaries._dirty_kb)
    env = {**inst.env, "HOME": str(git_home), "CONTINUATION_HOME": str(base / "state")}
    hook = [*inst.hook, "hook", "--runtime", "claude"]
    transcript = write_transcript(base / "session.jsonl", args.transcript_mb, rng)
    payload = hook_payload(SESSION, repo, "PreCompact", transcript, trigger="auto")
    marks_file = base / "marks"
    if args.rewind:
        for _ in range(2):  # the checkpoint rewound to (and its snapshot)
            timed(hook, env, payload)
        cp, commit = newest_checkpoint(base / "state", key)
        victims = rng.sample(paths, min(25, len(paths)))
        measured = [inst.command, "rewind", cp, "--files", "--yes"]
        baseline = ["git", "restore", f"--source={commit}", "--worktree", "--", "."]
    else:
        measured, baseline = hook, ["git", "stash", "create"]

    def change() -> None:
        for path in (victims if args.rewind else rng.sample(paths, 3)):
            path.write_bytes(path.read_bytes() + b"# edited\n")

    rounds, walls, baselines = [], [], []
    for n in range(args.warm_rounds + args.rounds):
        change()
        took_baseline = timed(baseline, env, cwd=repo)[0]
        if args.rewind:  # the restore mended them
            change()
        marks_file.unlink(missing_ok=True)
        start = time.time_ns()
        took, proc = timed(measured, {**env, "CONTINUATION_PHASE_MARKS": str(marks_file)},
                           b"" if args.rewind else payload, cwd=repo if args.rewind else None)
        if not args.rewind and proc.stdout.strip() != b"{}":
            raise RuntimeError(f"PreCompact answered {proc.stdout[:200]!r}")
        if n >= args.warm_rounds:
            rounds.append((start, read_marks(marks_file)))
            walls.append(took * 1000)
            baselines.append(took_baseline * 1000)

    what, base_name = (("rewind --files --yes", "`git restore`") if args.rewind
                       else ("PreCompact", "`git stash create`"))
    print(f"{what}, {args.files} files, {args.events}-event thread, {args.rounds} rounds "
          f"(medians; range over the rounds): {statistics.median(walls):.0f} ms, "
          f"{base_name} {statistics.median(baselines):.0f} ms")
    print(f"{'ms':>7}  {'range':>15}  {'process':7}  phase")
    for label, process, times in timeline(rounds):
        print(f"{statistics.median(times):7.1f}  {min(times):6.1f}-{max(times):7.1f}  "
              f"{process:7}  {label}")
    print(f"{statistics.median(walls):7.1f}  {min(walls):6.1f}-{max(walls):7.1f}  {'':7}  "
          "process ended (as `subprocess.run` returned)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
