"""Resolving a root to its workspace: canonical root, state layout and git target."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from continuation.host.paths import ensure_private_dir, open_private
from continuation.workspace.gitrun import (
    GitTarget,
    find_git_entry,
    open_git_target,
    open_shadow_target,
)
from continuation.workspace.layout import StateLayout, canonical_root

if TYPE_CHECKING:
    from continuation.workspace.policy import ExcludeMatcher


@dataclass(frozen=True)
class Workspace:
    root: Path  # canonical: the git top level for repositories
    layout: StateLayout
    git: GitTarget | None  # the user's repository, None outside git


def resolve_workspace(root: Path | str, state_home: Path | str) -> Workspace:
    path = canonical_root(root)
    entry = find_git_entry(path)
    if entry is not None:
        path = entry.parent.resolve()
    layout = StateLayout.for_root(state_home, path)
    target = open_git_target(path, layout) if entry is not None else None
    if target is not None:
        path = target.work_tree
        layout = StateLayout.for_root(state_home, path)
    _remember_root(layout, path)
    return Workspace(path, layout, target)


def _remember_root(layout: StateLayout, root: Path) -> None:
    """``workspace.json`` names the folder a state directory belongs to (for gc)."""
    record = layout.state_dir / "workspace.json"
    if not record.is_file():
        try:
            write_json_atomic(record, {"root": str(root)}, durable=False)
        except OSError:
            pass  # only gc reads it; the next call writes it again


def content_target(ws: Workspace, *, create: bool) -> GitTarget | None:
    """Where snapshot contents live: the user's repository, else the shadow repository."""
    if ws.git is not None:
        return ws.git
    return open_shadow_target(ws.root, ws.layout, create=create)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def in_progress_operation(git_dir: Path) -> str | None:
    """A merge, rebase, cherry-pick or revert the user has in progress (recorded, left alone)."""
    if (git_dir / "rebase-merge").is_dir() or (git_dir / "rebase-apply").is_dir():
        return "rebase"
    if (git_dir / "MERGE_HEAD").is_file():
        return "merge"
    if (git_dir / "CHERRY_PICK_HEAD").is_file():
        return "cherry-pick"
    if (git_dir / "REVERT_HEAD").is_file():
        return "revert"
    return None


def write_json_atomic(path: Path, data: object, *, durable: bool = True) -> None:
    """Temp file, fsync, rename: a reader sees the old file or the new one, never a torn one.

    durable=False skips the fsync for caches that are rebuilt when lost.
    """
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{time.time_ns()}.tmp")
    try:
        with open(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w",
                  encoding="utf-8") as handle:
            json.dump(data, handle, sort_keys=True)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_json(path: Path) -> object | None:
    """The parsed file, or None when it is missing, torn or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def state_home_pattern(ws: Workspace) -> str | None:
    """An exclude pattern for our own state folder when someone put it inside the workspace:
    a checkpoint must never store, restore or report its own scratch files."""
    state_home = ws.layout.state_dir.parent.parent
    try:
        inside = state_home.relative_to(ws.root).as_posix()
    except ValueError:
        return None
    return f"/{inside}/" if inside and inside != "." else None


def effective_matcher(ws: Workspace, patterns) -> ExcludeMatcher:
    from continuation.workspace.policy import ExcludeMatcher

    own = state_home_pattern(ws)
    return ExcludeMatcher([*patterns, own] if own else list(patterns))
