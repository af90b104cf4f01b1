"""Removing threads: ``thread delete`` (one thread's data and refs) and ``gc`` (leftovers).

A thread's data: every row keyed by its ``thread_key`` in every table of the store (found from
the schema, so tables added by later migrations go too), its capsule files, spilled contexts and
handoff prompts, and its workspace snapshot refs (``refs/continuation/<thread>/...``) with the
private index the workspace package keeps for it. Git collects the snapshot objects later, with
its own gc; nothing else in the user's repository is touched.

``gc`` deletes snapshot refs of threads the store no longer knows, in every workspace the store
still names (plus ``--root`` folders), prunes each live thread's older snapshot refs beyond
``keep``, and removes orphaned capsule folders.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from continuation.session.engine import Engine
from continuation.rewind.errors import RewindError

#: sessions with a heartbeat this recent and no end are treated as live
LIVE_HEARTBEAT_S = 600
#: per-thread folders under the state home
THREAD_FOLDERS = ("capsules", "contexts", "handoff", "counts")


def live_sessions(engine: Engine, key: str, now: float | None = None) -> list[dict]:
    now = now or time.time()
    return [s for s in engine.store.sessions(key)
            if s.get("ended_at") is None and now - float(s.get("heartbeat") or 0) < LIVE_HEARTBEAT_S]


def workspace_roots(engine: Engine, key: str | None = None) -> set[str]:
    """Workspace folders the store names (for one thread, or all)."""
    named, workspaces = engine.store.workspace_references(key)
    roots = set(named)
    for text in workspaces:
        try:  # a damaged reference names no root; it must not stop a delete or a gc
            root = json.loads(text).get("root")
        except (ValueError, AttributeError, TypeError):
            continue
        if isinstance(root, str):
            roots.add(root)
    return {r for r in roots if r}


@dataclass
class DeleteReport:
    thread_key: str
    rows: dict[str, int] = field(default_factory=dict)
    refs_deleted: int = 0
    folders_removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def delete_thread(engine: Engine, selector: str, *, force: bool = False) -> DeleteReport:
    from continuation.workspace import WorkspaceError, delete_thread_refs

    row = engine.store.thread(selector)
    key = row["thread_key"]
    if not force and live_sessions(engine, key):
        raise RewindError(f"thread {key} has a live session (a hook wrote within the last "
                          f"{LIVE_HEARTBEAT_S // 60} minutes); end it first or pass --force")
    report = DeleteReport(key)
    report.forks = engine.store.forks_of(key)
    for root in sorted(workspace_roots(engine, key)):
        if not Path(root).is_dir():
            report.warnings.append(f"workspace {root} is gone; its refs could not be deleted")
            continue
        try:
            report.refs_deleted += delete_thread_refs(root, key, state_home=engine.home)
        except WorkspaceError as exc:
            report.warnings.append(f"refs in {root} not deleted: {exc} (run `continuation gc` later)")
    report.rows = engine.store.delete_thread_rows(key)
    for folder in THREAD_FOLDERS:
        path = engine.home / folder / key
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            report.folders_removed.append(str(path))
    return report


@dataclass
class GcReport:
    orphan_refs: dict[str, list[str]] = field(default_factory=dict)  # root -> refs deleted
    pruned_refs: dict[str, list[str]] = field(default_factory=dict)
    folders_removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def collect_garbage(engine: Engine, *, roots=(), keep: int | None = 20,
                    dry_run: bool = False) -> GcReport:
    from continuation.workspace import (
        WorkspaceError,
        delete_thread_refs,
        gc_shadow,
        list_snapshot_refs,
        prune_thread_refs,
    )

    if keep is not None and keep < 1:
        raise RewindError("--keep must be at least 1 (the newest snapshot of a thread is kept)")
    known = {r["thread_key"] for r in engine.store.threads()}
    report = GcReport(dry_run=dry_run)
    for root in sorted(workspace_roots(engine) | {str(r) for r in roots}):
        if not Path(root).is_dir():
            continue
        try:
            # refs another state home wrote in this repository are never ours to delete
            refs = [r for r in list_snapshot_refs(root, state_home=engine.home)
                    if r.owned_by(engine.home)]
            orphans = sorted({r.thread_key for r in refs} - known)
            gone = [r.ref for r in refs if r.thread_key in orphans]
            pruned = [r.ref for key in sorted({r.thread_key for r in refs} & known)
                      for r in _beyond_keep([x for x in refs if x.thread_key == key], keep)]
            if not dry_run:
                for key in orphans:
                    delete_thread_refs(root, key, state_home=engine.home)
                if keep is not None:
                    for key in sorted({r.thread_key for r in refs} & known):
                        prune_thread_refs(root, key, keep=keep, state_home=engine.home)
                if gone or pruned:
                    gc_shadow(root, state_home=engine.home)
            if gone:
                report.orphan_refs[root] = gone
            if pruned:
                report.pruned_refs[root] = pruned
        except WorkspaceError as exc:
            report.warnings.append(f"{root}: {exc}")
    for folder in THREAD_FOLDERS:
        base = engine.home / folder
        if base.is_dir():
            for path in sorted(base.iterdir()):
                if path.is_dir() and path.name not in known:
                    report.folders_removed.append(str(path))
                    if not dry_run:
                        shutil.rmtree(path, ignore_errors=True)
    return report


def _beyond_keep(refs, keep: int | None) -> list:
    """The refs ``prune_thread_refs(keep=...)`` deletes (for the report and ``--dry-run``)."""
    if keep is None:
        return []
    generations = [r for r in refs if r.generation is not None]
    safety = sorted((r for r in refs if r.generation is None), key=lambda r: r.ref)
    return generations[: max(0, len(generations) - keep)] + safety[: max(0, len(safety) - keep)]
