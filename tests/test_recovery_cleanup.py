"""Temp files of killed writers: found by age, removed safely (workspace files under its lock)."""
from __future__ import annotations

import os
import time

from filelock import FileLock

from continuation.recovery.cleanup import remove_stale, stale_temps


def _old(path, content=b"x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


def test_finds_and_removes_only_stale_temps(tmp_path):
    home = tmp_path / "state"
    cap_tmp = _old(home / "capsules" / "t1" / ".g000003.json.ab12.tmp")
    committed = _old(home / "capsules" / "t1" / "g000002.json")
    fresh = home / "capsules" / "t1" / ".g000004.json.cd34.tmp"
    fresh.write_bytes(b"being written")
    spill_tmp = _old(home / "contexts" / "t1" / ".g000001.md.zz.tmp")
    scratch = _old(home / "workspaces" / "ws1" / "tmp" / "t1.123.456.index")
    ref_lock = _old(home / "workspaces" / "ws1" / "threads" / "t1.index.lock")
    record_tmp = _old(home / "workspaces" / "ws1" / "threads" / ".t1.json.99.tmp")
    in_git = _old(home / "workspaces" / "ws1" / "shadow.git" / "objects" / ".pack.tmp")
    stale = stale_temps(home)
    assert stale == sorted([cap_tmp, spill_tmp, scratch, ref_lock, record_tmp])
    assert fresh not in stale and committed not in stale and in_git not in stale
    assert stale_temps(home, min_age=0) == sorted([*stale, fresh])
    removed = remove_stale(home)
    assert removed == stale
    assert committed.exists() and fresh.exists() and in_git.exists()
    assert stale_temps(home) == []


def test_a_busy_workspace_keeps_its_scratch_until_its_lock_is_free(tmp_path):
    home = tmp_path / "state"
    scratch = _old(home / "workspaces" / "ws1" / "tmp" / "t1.1.2.index")
    lock = FileLock(str(home / "workspaces" / "ws1" / "lock"))
    with lock:  # a live snapshot holds the workspace
        assert remove_stale(home, lock_timeout=0.1) == []
        assert scratch.exists()
    assert remove_stale(home) == [scratch]
    assert not scratch.exists()


def test_empty_or_missing_home(tmp_path):
    assert stale_temps(tmp_path / "absent") == []
    assert remove_stale(tmp_path / "absent") == []
