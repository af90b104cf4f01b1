"""Atomic file replacement (continuation.host.atomic): the temp file it writes through."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from continuation.host import atomic


def test_atomic_write_replaces_the_file_privately_and_leaves_no_temp(tmp_path):
    target = tmp_path / "d" / "capsule.json"
    atomic.atomic_write(target, b"first")
    atomic.atomic_write(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["capsule.json"]
    if sys.platform != "win32":
        assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_write_cut_midway_leaves_only_a_temp_that_cleanup_finds(tmp_path, monkeypatch):
    target = tmp_path / "capsule.json"
    atomic.atomic_write(target, b"committed")
    monkeypatch.setenv("CONTINUATION_FAULT", "file.mid_write:full")
    with pytest.raises(OSError):
        atomic.atomic_write(target, b"x" * 1000)
    assert target.read_bytes() == b"committed"  # the old file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["capsule.json"]  # the temp was removed
    # a temp left by a killed writer has the name cleanup looks for
    fd, tmp = atomic._create_temp(tmp_path, "capsule.json")
    os.close(fd)
    assert os.path.basename(tmp).startswith(".capsule.json.") and tmp.endswith(".tmp")
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(tmp).st_mode) == 0o600
    assert atomic.remove_stale_temps(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["capsule.json"]


def test_temp_names_do_not_collide(tmp_path):
    names = set()
    for _ in range(200):
        fd, tmp = atomic._create_temp(tmp_path, "f")
        os.close(fd)
        names.add(tmp)
    assert len(names) == 200
