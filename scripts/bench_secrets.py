#!/usr/bin/env python3
"""What keeping secrets costs, each measure against its baseline in the same run.

The secret-file scan (``continuation/workspace/secrets.py``): a repository of ``--files``
committed files (4 KiB each) and ``--untracked`` untracked ones (the agent's new files: every
snapshot reads each one, the scan too), a thread of 1,000 events. Each round edits three files
and runs, interleaved: ``git stash create`` (bench_boundaries' PreCompact baseline), the
PreCompact hook with the scan on (the default), and with ``CONTINUATION_SECRET_SCAN=0``. Prints
both PreCompact ratios to ``git stash create`` and the on/off ratio (the scan on keeps what it
found: an unchanged file is not read again); and the scan alone, uncached (the names and
contents of every untracked file, in this process).

Encryption at rest (docs/encryption.md): two state homes holding the same 1,000-event thread
on that repository, one in clear and one encrypted (``continuation key init``). Interleaved:
the PreToolUse hook of each (the hot path; and ``bench_hot_path``'s floor hook: parse the
payload, one durable sqlite3 commit), and the PreCompact hook of each. Prints on/off ratios and
each hook against the floor.

Usage: python scripts/bench_secrets.py [--files 20000] [--untracked 1000] [--runs 9]
       [--hook-runs 40] [--json]
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


def encryption_rows(args, base: Path, inst, env: dict, repo: Path, paths, rng) -> list[dict]:
    """Hooks of an encrypted state home against the same hooks in clear (see the module)."""
    import subprocess

    from bench_hot_path import FLOOR_HOOK, floor_store
    from continuation.host import keys

    homes = {"off": base / "state-clear", "on": base / "state-sealed"}
    key = keys.key_text(keys.new_key())
    for name, home in homes.items():
        os.environ["CONTINUATION_HOME"] = str(home)
        populate(home, SESSION, 1_000, repo)
    os.environ["CONTINUATION_HOME"] = str(homes["on"])
    envs = {name: {**env, "CONTINUATION_HOME": str(home), "CONTINUATION_KEY": key}
            for name, home in homes.items()}
    subprocess.run([inst.command, "key", "init"], env=envs["on"], check=True,
                   capture_output=True)
    floor_store(base / "floor.sqlite3", 1_000)
    (base / "floor_hook.py").write_text(FLOOR_HOOK, encoding="utf-8")
    floor = [inst.python, str(base / "floor_hook.py"), str(base / "floor.sqlite3")]
    hook = [*inst.hook, "hook", "--runtime", "claude"]
    t = {"off": [], "on": [], "floor": [], "pc_off": [], "pc_on": []}
    for n in range(args.hook_runs + 3):
        payload = hook_payload(SESSION, repo, "PreToolUse", tool_name="Bash",
                               tool_input={"command": f"echo {n}"}, tool_use_id=f"b{n}")
        for name in ("off", "on") if n % 2 else ("on", "off"):  # alternate who goes first
            took = timed(hook, envs[name], payload)[0]
            if n >= 3:
                t[name].append(took)
        took = timed(floor, env, payload)[0]
        if n >= 3:
            t["floor"].append(took)
    edits = iter(rng.sample(paths, (args.runs + args.warm_rounds) * 3))
    for n in range(args.runs + args.warm_rounds):
        for path in [next(edits) for _ in range(3)]:
            path.write_bytes(path.read_bytes() + b"# edited\n")
        for name in ("off", "on") if n % 2 else ("on", "off"):
            took = timed(hook, envs[name], hook_payload(SESSION, repo, "PreCompact",
                                                        trigger="auto"))[0]
            if n >= args.warm_rounds:
                t[f"pc_{name}"].append(took)
    def stored(home: Path) -> bytes:  # the store and its write-ahead log
        return b"".join(p.read_bytes() for p in home.glob("store.sqlite3*") if p.is_file())

    assert b"echo 5" not in stored(homes["on"]) and b"echo 5" in stored(homes["off"])
    return [
        row("PreToolUse hook, encryption on", t["on"], "the same, encryption off", t["off"],
            "measured"),
        row("PreToolUse hook, encryption off", t["off"], "floor hook (parse + one durable "
            "sqlite3 commit)", t["floor"], "<= 1.1x (bench_hot_path)"),
        row("PreToolUse hook, encryption on", t["on"], "floor hook", t["floor"], "measured"),
        row("PreCompact hook, encryption on", t["pc_on"], "the same, encryption off",
            t["pc_off"], "measured"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--untracked", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--warm-rounds", type=int, default=2)
    ap.add_argument("--hook-runs", type=int, default=40)
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
    crypt = encryption_rows(args, base, inst, env, repo, paths, rng)
    rows = [
        row(f"PreCompact, secret scan on ({args.untracked} untracked files)", s["on"],
            "`git stash create`", s["stash"], "<= 3x"),
        row("PreCompact, secret scan off", s["off"], "`git stash create`", s["stash"], "<= 3x"),
        row("PreCompact, secret scan on", s["on"], "the same, scan off", s["off"], "~1x"),
        *crypt,
    ]
    report = {"rows": rows, "scan_alone": alone, "files": args.files,
              "untracked": args.untracked}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{args.files} committed files, {args.untracked} untracked files of 4 KiB (+2 secrets)")
    print_rows(rows)
    print(f"the scan alone, uncached: {alone['files']} untracked files ({alone['mb']} MB), "
          f"{alone['left_out']} left out, {alone['ms']} ms ({alone['us_per_file']} us a file, "
          f"{alone['mb_per_s']:.0f} MB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
