"""Drift: what changed in the workspace since a checkpoint."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from continuation.workspace.compare import (
    SkipRules,
    open_snapshot_target,
    relative_paths,
    snapshot_tree,
    status_against_snapshot,
)
from continuation.workspace.lock import DEFAULT_LOCK_TIMEOUT, workspace_lock
from continuation.workspace.model import DriftReport, WorkspaceRef
from continuation.workspace.workspace_target import resolve_workspace


def drift(
    ref: WorkspaceRef,
    *,
    state_home: Path | str,
    session_paths: Iterable[str | Path] = (),
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> DriftReport:
    """Files modified, added or deleted since ``ref`` was taken; writes nothing to the repository.

    ``session_paths``: files the engine knows the session touched; every other changed path is
    listed in ``outside_session`` (changed by the user or another tool since the checkpoint).
    Ignored files, and paths the checkpoint did not store (oversized, excluded, nested
    repositories), are not reported; secret-looking files are listed apart (``left_out``). A ``none`` checkpoint reports nothing.
    """
    ws = resolve_workspace(ref.root, state_home)
    report = DriftReport(checkpoint=ref)
    if ref.kind == "none":
        return report
    with workspace_lock(ws.layout, lock_timeout):
        if ref.kind == "metadata":
            from continuation.workspace.manifest import metadata_drift

            metadata_drift(ws, ref, report)
        else:
            target = open_snapshot_target(ws, ref)
            status = status_against_snapshot(target, ref, snapshot_tree(target, ref))
            rules = SkipRules(ref, ws)
            for entry in status.entries:
                if entry.kind == "1" and entry.y == ".":
                    continue
                if rules.reason(entry) is not None:
                    continue
                secret = rules.secret(entry)
                if secret is not None:
                    report.left_out.append({"path": entry.path, "why": secret})
                    continue
                if entry.kind == "?":
                    report.added.append(entry.path)
                elif entry.y == "D":
                    report.deleted.append(entry.path)
                else:
                    report.modified.append(entry.path)
            if target.kind == "git":
                report.head, report.branch = status.head, status.branch
    if ref.kind in ("git", "metadata") and ws.git is not None:
        report.head_moved = report.head != ref.head
        report.branch_changed = report.branch != ref.branch
    touched = relative_paths(ws.root, session_paths)
    report.outside_session = [p for p in report.changed if p not in touched]
    for bucket in (report.modified, report.added, report.deleted):
        bucket.sort()
    return report
