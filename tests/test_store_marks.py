"""Acknowledged facts that only the write-ahead log held: the WAL stays bounded while hook
processes leave the store open, and ``doctor`` finds a store holding fewer facts than its
commits acknowledged (a crash copy with the WAL cut short), which ``integrity_check`` cannot."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from continuation.store import marks
from continuation.store.sqlite import WAL_FOLD_BYTES


def _env(home):
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    env.pop("CONTINUATION_STORE", None)
    return env


def _prompt(home, i):
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": "/tmp",
               "prompt": f"prompt {i}: " + "details " * 300}
    return subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "claude"],
                          input=json.dumps(payload), env=_env(home), capture_output=True,
                          text=True, timeout=120)


def _doctor(home):
    done = subprocess.run([sys.executable, "-m", "continuation", "doctor", "--json"],
                          env=_env(home), capture_output=True, text=True, timeout=120)
    return {f["check"]: f for f in json.loads(done.stdout)["findings"]}


def test_a_crash_copy_with_half_its_wal_is_found_short(tmp_path):
    home = tmp_path / "h"
    for i in range(20):
        assert _prompt(home, i).returncode == 0
    wal = home / "store.sqlite3-wal"
    assert wal.stat().st_size > 0  # the hooks ended without folding it: facts live there
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(home / "store.sqlite3", copy / "store.sqlite3")
    shutil.copytree(marks.folder_of(str(home / "store.sqlite3")),
                    marks.folder_of(str(copy / "store.sqlite3")))
    data = wal.read_bytes()
    (copy / "store.sqlite3-wal").write_bytes(data[:len(data) // 2])
    assert _doctor(home)["store.acknowledged"]["status"] == "ok"  # the whole store
    found = _doctor(copy)
    assert found["store.integrity"]["status"] == "ok"  # SQLite cannot tell
    short = found["store.acknowledged"]
    assert short["status"] == "problem", short
    assert short["data"]["acknowledged"] == 20 and short["data"]["held"] < 20
    fixed = subprocess.run([sys.executable, "-m", "continuation", "doctor", "--fix"],
                           env=_env(copy), capture_output=True, text=True, timeout=120)
    assert "accepted the store as it is" in fixed.stdout
    assert _doctor(copy)["store.acknowledged"]["status"] == "ok"


def test_the_wal_stays_bounded_while_hooks_leave_the_store_open(tmp_path):
    home = tmp_path / "h"
    sizes = []
    for i in range(40):
        assert _prompt(home, i).returncode == 0
        sizes.append((home / "store.sqlite3-wal").stat().st_size)
    assert max(sizes) <= WAL_FOLD_BYTES + 512 * 1024, sizes  # folded once it passes the bound
    assert min(sizes[10:]) < max(sizes)  # and it was folded, not only growing


def test_a_removed_thread_leaves_no_mark(tmp_path):
    from continuation.session.engine import Engine

    with Engine(tmp_path / "h") as engine:
        thread = engine.thread("claude", "gone")
        thread.admit("x", input_id="i1")
        assert engine.store.acknowledged_marks() == {thread.key: 1}
        engine.store.delete_thread_rows(thread.key)
        assert engine.store.acknowledged_marks() == {}
