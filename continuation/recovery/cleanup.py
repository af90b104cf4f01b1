"""Temp files left behind by a process killed mid-write, and where to look for them.

Writers put temp files beside their target (``.<name>.<random>.tmp``, see
:func:`continuation.host.atomic.atomic_write`) and scratch indexes under each workspace's ``tmp/``.
A temp file older than ``min_age`` seconds belongs to no live writer (a write takes
milliseconds), so removing it is safe even while other hooks run.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

STALE_AFTER_S = 60.0


def stale_temps(home: Path, *, min_age: float = STALE_AFTER_S) -> list[Path]:
    """Temp files under the state home older than ``min_age`` seconds."""
    home = Path(home)
    now = time.time()
    candidates: list[Path] = []
    found: list[Path] = []
    for folder, dirs, files in os.walk(home):
        dirs[:] = [d for d in dirs if not d.endswith(".git")]  # git's own objects are not ours
        here = Path(folder)
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                candidates.append(here / name)
            elif here.name == "tmp" and here.parent.parent.name == "workspaces":
                candidates.append(here / name)  # scratch index of a killed snapshot
            elif here.name == "threads" and name.endswith(".lock"):
                candidates.append(here / name)
    for path in candidates:
        try:
            if now - path.stat().st_mtime >= min_age:
                found.append(path)
        except OSError:
            continue
    return sorted(set(found))


def _unlink(paths) -> list[Path]:
    removed = []
    for p in paths:
        try:
            p.unlink()
            removed.append(p)
        except FileNotFoundError:
            removed.append(p)  # gone meanwhile (a writer finished or another cleanup ran)
        except OSError:
            pass
    return removed


def remove_stale(home: Path, *, min_age: float = STALE_AFTER_S,
                 lock_timeout: float = 2.0) -> list[Path]:
    """Remove the stale temp files; returns what was removed. Files of a workspace's state
    folder are removed while holding that workspace's lock, so no live snapshot loses them."""
    home = Path(home)
    stale = stale_temps(home, min_age=min_age)
    workspaces = home / "workspaces"
    by_ws: dict[Path, list[Path]] = {}
    removed: list[Path] = []
    for p in stale:
        try:
            rel = p.relative_to(workspaces)
        except ValueError:
            removed.extend(_unlink([p]))
            continue
        by_ws.setdefault(workspaces / rel.parts[0], []).append(p)
    for ws_dir, victims in sorted(by_ws.items()):
        try:
            from continuation.workspace.layout import StateLayout
            from continuation.workspace.lock import workspace_lock

            with workspace_lock(StateLayout(ws_dir), timeout=lock_timeout):
                removed.extend(_unlink(victims))
        except Exception:
            continue  # busy: a live snapshot owns the folder now; try again later
    return sorted(removed)
