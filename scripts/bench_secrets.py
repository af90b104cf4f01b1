#!/usr/bin/env python3
"""What keeping secrets costs, each measure against its baseline in the same run.

The secret-file scan (``continuation/workspace/secrets.py``): a repository of ``--files``
committed files (4 KiB each) and ``--untracked`` untracked ones (the agent's new files: every
snapshot reads each one, the scan too), a thread of 1,000 events. Each round edits three files
and runs, interleaved: ``git stash create`` (bench_boundaries' PreCompact baseline), the
PreCompact hook with the scan on (the default), and with ``CONTINUATION_SECRET_SCAN=0``. Prints
both PreCompact ratios to ``git stash create`` and the on/off ratio; and the scan alone (the
names and contents of every untracked file, in this process).

Usage: python scripts/bench_secrets.py [--files 20000] [--untracked 1000] [--runs 9] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_boundaries import build_repo, hook_payload, populate, row  # noqa: E402
from benchlib import (  # noqa: E402
    in_scratch_folder, install, isolated_git_home, print_rows, text_blob, timed)

SESSION = "bench-secrets"


def untracked_files(repo: Path, count: int, rng: random.Random) -> list[Path]:
    """``count`` new text files of 4 KiB, two of them holding a token (left out)."""
    paths = []
    for i in range(count):
        path = repo / "new" / f"d{i // 100:02d}" / f"gen{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text_blob(rng, 4096))
        paths.append(path)
    (repo / "new" / "deploy.txt").write_text("token ghp_" + "a1B2c3D4e5" * 4 + "\n")
    (repo / ".env").write_text("A=1\n")
    return paths


def scan_alone(repo: Path, home: Path, rounds: int = 5) -> dict:
    """The scan by itself: every untracked file's name and content, as a snapshot asks."""
    import subprocess

    from continuation.workspace.secrets import SecretFiles

    listed = subprocess.run(["git", "ls-files", "-z", "--others", "--exclude-standard"], cwd=repo,
                            capture_output=True, check=True).stdout.decode().split("\0")
    listed = [p for p in listed if p]
    took, left = [], 0
    for _ in range(rounds):
        t = time.perf_counter()
        secrets = SecretFiles(home, repo)
        left = sum(secrets.why(p) is not None for p in listed)
        took.append(time.perf_counter() - t)
    took.sort()
    size = sum((repo / p).stat().st_size for p in listed)
    ms = took[len(took) // 2] * 1000
    return {"files": len(listed), "left_out": left, "mb": round(size / 1e6, 1),
            "ms": round(ms, 1), "us_per_file": round(ms * 1000 / len(listed), 1),
            "mb_per_s": round(size / 1e6 / (ms / 1000), 0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--untracked", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--warm-rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    return in_scratch_folder("bench-secrets-", args.keep, lambda base: run(args, base))


def run(args, base: Path) -> int:
    rng = random.Random(36)
    gitenv_home = isolated_git_home(base)
    inst = install(base)
    repo = base / "repo"
    paths = build_repo(repo, args.files, 4096, rng)
    repo = repo.resolve()
    untracked_files(repo, args.untracked, rng)
    home = base / "state"
    os.environ["CONTINUATION_HOME"] = str(home)
    populate(home, SESSION, 1_000, repo)
    os.sync()
    env = {**inst.env, "HOME": str(gitenv_home), "CONTINUATION_HOME": str(home)}
    hook = [*inst.hook, "hook", "--runtime", "claude"]

    def precompact(scan: bool) -> float:
        took, _ = timed(hook, {**env, "CONTINUATION_SECRET_SCAN": "1" if scan else "0"},
                        hook_payload(SESSION, repo, "PreCompact", trigger="auto"))
        return took

    s = {"stash": [], "on": [], "off": []}
    edits = iter(rng.sample(paths, (args.runs + args.warm_rounds) * 3))
    for _ in range(args.runs + args.warm_rounds):
        for path in [next(edits) for _ in range(3)]:
            path.write_bytes(path.read_bytes() + b"# edited\n")
        s["stash"].append(timed(["git", "stash", "create"], env, cwd=repo)[0])
        s["on"].append(precompact(True))
        s["off"].append(precompact(False))
    s = {k: v[args.warm_rounds:] for k, v in s.items()}
    alone = scan_alone(repo, home)
    rows = [
        row(f"PreCompact, secret scan on ({args.untracked} untracked files)", s["on"],
            "`git stash create`", s["stash"], "<= 3x"),
        row("PreCompact, secret scan off", s["off"], "`git stash create`", s["stash"], "<= 3x"),
        row("PreCompact, secret scan on", s["on"], "the same, scan off", s["off"], "~1x"),
    ]
    report = {"rows": rows, "scan_alone": alone, "files": args.files,
              "untracked": args.untracked}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{args.files} committed files, {args.untracked} untracked files of 4 KiB (+2 secrets)")
    print_rows(rows)
    print(f"the scan alone: {alone['files']} untracked files ({alone['mb']} MB), "
          f"{alone['left_out']} left out, {alone['ms']} ms ({alone['us_per_file']} us a file, "
          f"{alone['mb_per_s']:.0f} MB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
