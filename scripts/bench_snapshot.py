"""Benchmark workspace snapshots against `git stash create` on the same tree, in the same run.

Generates a repository of 20,000 files (about 80 MB) in a temp folder, commits it, changes 25
files and adds 5, then measures (median of several runs, warm file cache):
- baseline: `git stash create` (what git itself needs to record a dirty tree);
- first snapshot of a thread (fresh state home), incremental snapshot (next generation after a
  few more edits), as ratios to the baseline (targets: incremental <= 1.0x, first <= 2x);
  baseline and snapshots are interleaved round by round so that both see the same load;
- restore: plan (the --dry-run preview) and apply (safety snapshot + writes + deletions).

Usage: python scripts/bench_snapshot.py [--files 20000] [--size 4096] [--runs 5] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import isolated_git_home, text_blob  # noqa: E402
from continuation.workspace import apply_restore, plan_restore, take_snapshot  # noqa: E402


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (0 where the OS cannot say)."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measured(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one call."""
    cpu, start = cpu_seconds(), time.perf_counter()
    fn()
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=4096, help="bytes per file (20,000 x 4 KiB = 80 MB)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    isolated_git_home(base)
    repo = base / "repo"
    rng = random.Random(1234)
    try:
        t0 = time.perf_counter()
        repo.mkdir()
        git(repo, "init", "-q")
        paths = []
        for i in range(args.files):
            path = repo / f"pkg{i // 1000:02d}" / f"mod{(i // 100) % 10}" / f"file{i:05d}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text_blob(rng, args.size))
            paths.append(path)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "generated")
        total = sum(p.stat().st_size for p in paths)
        print(f"repository: {args.files} files, {total / 1e6:.1f} MB, built in {time.perf_counter() - t0:.1f}s")

        for path in rng.sample(paths, 25):
            path.write_bytes(path.read_bytes() + b"# changed\n")
        for i in range(5):
            (repo / f"new{i}.py").write_bytes(text_blob(rng, args.size))
        git(repo, "status", "--porcelain")  # warm the file cache and let git refresh its index once
        git(repo, "stash", "create")

        # Interleave baseline and snapshots round by round: the machine may be shared, and a
        # ratio is only fair when both sides see the same load and the same file cache.
        home_state = base / "state-incremental"
        checkpoint = take_snapshot(repo, "bench-1", 1, state_home=home_state)
        edit_targets = iter(rng.sample(paths, args.runs * 3))
        samples: dict[str, list[tuple[float, float]]] = {"stash": [], "first": [], "incremental": []}
        for round_ in range(args.runs):
            for path in [next(edit_targets) for _ in range(3)]:  # the session edits a few more files
                path.write_bytes(path.read_bytes() + b"# edited again\n")
            samples["stash"].append(measured(lambda: git(repo, "stash", "create")))
            samples["first"].append(
                measured(lambda: take_snapshot(repo, "bench-1", 1, state_home=base / f"fresh{round_}"))
            )
            samples["incremental"].append(
                measured(lambda: take_snapshot(repo, "bench-1", round_ + 2, state_home=home_state))
            )
        wall = {k: statistics.median(w for w, _ in v) for k, v in samples.items()}
        cpu = {k: statistics.median(c for _, c in v) for k, v in samples.items()}
        stash, first, incr = wall["stash"], wall["first"], wall["incremental"]
        stash_samples = [w for w, _ in samples["stash"]]
        first_samples = [w for w, _ in samples["first"]]
        incr_samples = [w for w, _ in samples["incremental"]]

        session_files = [f"agent{i}.py" for i in range(5)]
        for name in session_files:
            (repo / name).write_bytes(b"agent\n")
        for path in rng.sample(paths, 25):
            path.write_bytes(b"agent rewrote this\n")
        start = time.perf_counter()
        plan = plan_restore(checkpoint, state_home=home_state, session_created=session_files)
        plan_time = time.perf_counter() - start
        start = time.perf_counter()
        result = apply_restore(plan, state_home=home_state)
        apply_time = time.perf_counter() - start
        assert result.ok, result.errors
        assert len(result.deleted) == 5 and len(result.restored) >= 25, (len(result.deleted), len(result.restored))

        print(f"git stash create (baseline): {stash * 1000:.0f} ms   runs: {[round(s * 1000) for s in stash_samples]}")
        print(f"first snapshot:       {first * 1000:.0f} ms = {first / stash:.2f}x baseline (target <= 2x)   runs: {[round(s * 1000) for s in first_samples]}")
        print(f"incremental snapshot: {incr * 1000:.0f} ms = {incr / stash:.2f}x baseline (target <= 1.0x)   runs: {[round(s * 1000) for s in incr_samples]}")
        if cpu["stash"] > 0:
            print(f"CPU time (this process + git children): stash {cpu['stash'] * 1000:.0f} ms, "
                  f"first {cpu['first'] * 1000:.0f} ms = {cpu['first'] / cpu['stash']:.2f}x, "
                  f"incremental {cpu['incremental'] * 1000:.0f} ms = {cpu['incremental'] / cpu['stash']:.2f}x")
        try:
            print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        except (AttributeError, OSError):
            pass
        print(f"restore: plan {plan_time * 1000:.0f} ms, apply {apply_time * 1000:.0f} ms "
              f"({len(plan.modified)} modified, {len(plan.recreated)} recreated, {len(plan.deleted)} deleted; "
              f"apply includes the safety snapshot)")
        return 0
    finally:
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
