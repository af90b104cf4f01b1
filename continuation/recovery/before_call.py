"""A file's content in the last workspace snapshot taken *before* a tool call started.

When an interrupted edit left a file that matches neither the old nor the new text
("diverged"), one more fact settles many cases: if the file is byte for byte what the checkpoint
before the call stored, the call did not change it (not applied). Read-only: ``git cat-file``
on the snapshot commit (the user's object store, or the shadow repository under the state home).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from continuation.host.userfiles import read_bounded
from continuation.recovery.verify_edits import (
    DIVERGED,
    MAX_READ,
    NOT_APPLIED,
    EditCheck,
    FileCheck,
)


def snapshot_before(thread, started_seq: int) -> tuple[str, dict] | None:
    """(checkpoint id, workspace dict) of the newest snapshot committed before ``started_seq``."""
    import json

    row = thread.store.newest_snapshot_before(thread.key, started_seq)
    if not row:
        return None
    try:
        ws = json.loads(row[1])
    except ValueError:
        return None
    if not isinstance(ws, dict) or ws.get("kind") not in ("git", "shadow") or not ws.get("snapshot_commit") or not ws.get("root"):
        return None
    return row[0], ws


def _git_dir_args(home: Path, ws: dict) -> list[str]:
    if ws["kind"] == "git":
        return ["-C", ws["root"]]
    from continuation.workspace.layout import StateLayout

    layout = StateLayout.for_root(home, Path(ws["root"]).resolve())
    return ["--git-dir", str(layout.shadow_git_dir)]


def content_in_snapshot(home: Path, ws: dict, path: Path) -> bytes | None:
    """The file's bytes in the snapshot, None when the snapshot has no such file. Raises
    LookupError when it cannot be told (outside the workspace, git missing...)."""
    root = Path(ws["root"]).resolve()
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        raise LookupError(f"{path} is outside the workspace {root}") from None
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        r = subprocess.run(["git", *_git_dir_args(home, ws), "cat-file", "blob",
                            f"{ws['snapshot_commit']}:{rel}"], capture_output=True, env=env,
                           timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        raise LookupError(str(exc)) from None
    if r.returncode == 0:
        return r.stdout
    exists = subprocess.run(["git", *_git_dir_args(home, ws), "cat-file", "-e",
                             ws["snapshot_commit"]], capture_output=True, env=env, timeout=30)
    if exists.returncode != 0:
        raise LookupError("the snapshot commit is gone")
    return None  # the commit exists, the path is not in it


def refine(check: EditCheck, thread, started_seq: int, base: Path | None) -> EditCheck:
    """Turn "diverged" into "not applied" for files unchanged since the snapshot before the call."""
    if not any(f.verdict == DIVERGED for f in check.files):
        return check
    found = snapshot_before(thread, started_seq)
    if found is None:
        return check
    cp_id, ws = found
    files = []
    for f in check.files:
        if f.verdict == DIVERGED:
            path = Path(f.path)
            path = path if path.is_absolute() or base is None else base / path
            try:
                before = content_in_snapshot(thread.engine.home, ws, path)
                now = read_bounded(path, MAX_READ) if path.exists() else None
            except (LookupError, OSError):
                files.append(f)
                continue
            if before == now:
                f = FileCheck(f.path, NOT_APPLIED, f"unchanged since checkpoint {cp_id}, taken "
                              "before the call started")
        files.append(f)
    verdicts = {f.verdict for f in files}
    return EditCheck(verdicts.pop() if len(verdicts) == 1 else DIVERGED, files)
