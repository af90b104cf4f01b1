"""Shared by the safety tests and ``scripts/fault_safety.py``: counting what a full
state home stored, and a repository whose agent aimed calls at special files."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "fault", "GIT_AUTHOR_EMAIL": "fault@example.com",
           "GIT_COMMITTER_NAME": "fault", "GIT_COMMITTER_EMAIL": "fault@example.com",
           "GIT_CONFIG_NOSYSTEM": "1"}
#: a stand-in runtime that runs one command and exits: a hook's session is gone afterwards,
#: as after a crash, so its calls without an outcome go to reconciliation
RUNTIME = [sys.executable, "-c",
           "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"]


def stored_calls(home: Path) -> int:
    """Tool calls in the store, counted on a copy (a full home has no room for SQLite's
    shared-memory file) with its write-ahead log (frames not merged yet are stored too)."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("store.sqlite3", "store.sqlite3-wal"):
            if (home / name).exists():
                shutil.copyfile(home / name, Path(scratch) / name)
        conn = sqlite3.connect(Path(scratch) / "store.sqlite3")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            return conn.execute("SELECT count(*) FROM tool_calls").fetchone()[0]
        finally:
            conn.close()


def special_repo(repo: Path) -> list[dict]:
    """A git repository holding a FIFO ``pipe`` and a link ``zero`` to /dev/zero; returns the
    hook payloads of a prompt and of two calls left without an outcome: a Write aimed at the
    FIFO and an Edit aimed at the link."""
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "i"],
                   check=True, env={**os.environ, **GIT_ENV})
    os.mkfifo(repo / "pipe")
    (repo / "zero").symlink_to("/dev/zero")
    base = {"session_id": "s", "cwd": str(repo), "prompt_id": "p1"}
    return [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go"},
        {**base, "hook_event_name": "PreToolUse", "tool_use_id": "w1", "tool_name": "Write",
         "tool_input": {"file_path": str(repo / "pipe"), "content": "x"}},
        {**base, "hook_event_name": "PreToolUse", "tool_use_id": "e1", "tool_name": "Edit",
         "tool_input": {"file_path": str(repo / "zero"), "old_string": "a", "new_string": "b"}},
    ]


def damaged_store_home(home: Path, seed: int, events: int = 300, page: int = 4096) -> Path:
    """A state home whose store holds ``events`` admitted prompts, its write-ahead log folded
    in, then 64 bytes flipped at random over pages 2-64 (the seed picks them)."""
    import random

    from continuation.session.engine import Engine

    with Engine(home) as engine:
        thread = engine.thread("claude", "s1")
        for i in range(events):
            thread.admit(f"prompt {i} " + "x" * 200, input_id=f"in-{i}")
    path = home / "store.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    rng, size = random.Random(seed), path.stat().st_size
    with open(path, "r+b") as fh:
        for _ in range(64):
            fh.seek(rng.randrange(page, min(size, page * 64)))
            fh.write(bytes([rng.randrange(256)]))
    return home
