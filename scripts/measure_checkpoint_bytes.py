#!/usr/bin/env python3
"""Bytes a boundary stores, and what `continuation gc` keeps of them.

Runs N boundaries of one Claude Code session through the real hook handlers in a temporary
state home (a prompt, three Bash calls, Stop, PreCompact, the compact SessionStart; with
``--spill`` every prompt carries a pasted 12 KB log, so each delivered context is longer than
the inline limit and spills to a file), then counts, apart from the code under test: the
checkpoint rows' capsule and rendered bytes (SQLite), the files under capsules/ and contexts/,
and the store file. Then runs ``continuation gc`` (default policy unless ``--gc-args``) and
counts again. Works on any version (it reads the store and the folders directly).

Usage: python scripts/measure_checkpoint_bytes.py [--boundaries 40] [--spill] [--json]
       [--gc-args "--keep-bytes 256K"]
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

LOG = "".join(f"2026-11-30T10:{i // 60:02d}:{i % 60:02d} worker-{i % 7} retry {i} of job 42 failed: "
              "connection reset by peer\n" for i in range(150))


def session(home: Path, boundaries: int, spill: bool) -> None:
    os.environ["CONTINUATION_HOME"] = str(home)
    from continuation import hooks

    def hook(event: str, **fields) -> None:
        raw = json.dumps({"session_id": "measure-1", "hook_event_name": event,
                          "cwd": str(home.parent), **fields}).encode()
        hooks.run("claude", raw)

    hook("SessionStart", source="startup")
    for b in range(boundaries):
        prompt = f"step {b}: make the retry loop of job 42 back off exponentially (attempt {b})"
        if spill:
            prompt += "\n\nHere is the log:\n" + LOG
        hook("UserPromptSubmit", prompt=prompt)
        for k in range(3):
            call = {"tool_name": "Bash", "tool_use_id": f"tu-{b}-{k}",
                    "tool_input": {"command": f"pytest tests/test_retry.py -k case{k}"}}
            hook("PreToolUse", **call)
            hook("PostToolUse", **call, tool_response={"stdout": "1 passed", "exit_code": 0})
        hook("Stop", last_assistant_message=f"Backoff added for attempt {b}.")
        hook("PreCompact", trigger="auto")
        hook("SessionStart", source="compact")


def count(home: Path) -> dict:
    con = sqlite3.connect(home / "store.sqlite3")
    try:
        n, capsule, rendered = con.execute(
            "SELECT COUNT(*), COALESCE(SUM(length(capsule)), 0),"
            " COALESCE(SUM(length(CAST(rendered AS BLOB))), 0) FROM checkpoints").fetchone()
    finally:
        con.close()
    files = {folder: sum(p.stat().st_size for p in (home / folder).rglob("*") if p.is_file())
             if (home / folder).is_dir() else 0 for folder in ("capsules", "contexts")}
    store = sum(p.stat().st_size for p in home.glob("store.sqlite3*"))
    total = capsule + rendered + files["capsules"] + files["contexts"]
    return {"checkpoints": n, "row_capsule": capsule, "row_rendered": rendered,
            "capsule_copies": files["capsules"], "context_files": files["contexts"],
            "checkpoint_data": total, "per_boundary": round(total / n) if n else 0,
            "store_file": store}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boundaries", type=int, default=40)
    ap.add_argument("--spill", action="store_true", help="prompts carry a 12 KB pasted log")
    ap.add_argument("--gc-args", default="", help="extra arguments for `continuation gc`")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "state"
        session(home, args.boundaries, args.spill)
        before = count(home)
        gc = subprocess.run([sys.executable, "-m", "continuation", "gc", *shlex.split(args.gc_args)],
                            capture_output=True, env={**os.environ, "CONTINUATION_HOME": str(home)})
        after = count(home)
    out = {"boundaries": args.boundaries, "spill": args.spill, "before_gc": before,
           "after_gc": after, "gc_exit": gc.returncode}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.boundaries} boundaries{' (spilling contexts)' if args.spill else ''}:")
    for label, c in (("before gc", before), (f"after gc {args.gc_args}".rstrip(), after)):
        print(f"  {label:<28} {c['checkpoint_data']:>10} bytes of checkpoint data "
              f"({c['per_boundary']} per boundary): rows {c['row_capsule']} capsule + "
              f"{c['row_rendered']} rendered, files {c['capsule_copies']} capsule copies + "
              f"{c['context_files']} contexts; store file {c['store_file']}")
    if gc.returncode:
        print(f"  gc failed: {gc.stderr.decode(errors='replace').strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
