"""Retention: listing and deleting a thread's snapshot refs (git may then collect the objects)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from continuation.workspace.gitrun import GitTarget
from continuation.workspace.layout import (
    HOME_TRAILER,
    REF_NAMESPACE,
    home_id_for,
    thread_ref_prefix,
    validate_thread_key,
)
from continuation.workspace.lock import DEFAULT_LOCK_TIMEOUT, workspace_lock
from continuation.workspace.workspace_target import (
    Workspace,
    content_target,
    read_json,
    resolve_workspace,
)


@dataclass
class SnapshotRefInfo:
    ref: str
    commit: str
    thread_key: str
    generation: int | None  # None for safety snapshots (taken before a restore)
    home_id: str | None = None  # the state home that wrote it (None: written before the trailer)

    def owned_by(self, state_home: Path | str) -> bool:
        """Whether retention in ``state_home`` may delete it: written by that home, or by a
        version that did not name its home yet."""
        return self.home_id is None or self.home_id == home_id_for(state_home)


def list_snapshot_refs(
    root: Path | str, *, state_home: Path | str, thread_key: str | None = None
) -> list[SnapshotRefInfo]:
    """Snapshot refs of the workspace (all threads, or one), oldest generation first."""
    ws = resolve_workspace(root, state_home)
    target = content_target(ws, create=False)
    if target is None:
        return []
    return _list(target, thread_key)


def _list(target: GitTarget, thread_key: str | None) -> list[SnapshotRefInfo]:
    prefix = thread_ref_prefix(thread_key) if thread_key else f"{REF_NAMESPACE}/"
    fmt = f"%(objectname) %(refname) %(trailers:key={HOME_TRAILER},valueonly,separator=)"
    listing = target.out(["for-each-ref", f"--format={fmt}", prefix])
    refs = []
    for line in listing.splitlines():
        commit, name, *home = line.split(" ", 2)
        rest = name[len(REF_NAMESPACE) + 1 :].split("/")
        generation = int(rest[1]) if len(rest) == 2 and rest[1].isdigit() else None
        home_id = home[0].strip() if home and home[0].strip() else None
        refs.append(SnapshotRefInfo(name, commit, rest[0], generation, home_id))
    refs.sort(key=lambda r: (r.thread_key, r.generation is None, r.generation or 0, r.ref))
    return refs


def delete_thread_refs(
    root: Path | str, thread_key: str, *, state_home: Path | str, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> int:
    """Delete every snapshot ref of the thread and its private state; returns refs deleted.

    For git repositories the objects stay in the user's object store until git's own gc collects
    them; for shadow repositories call ``gc_shadow``.
    """
    validate_thread_key(thread_key)
    ws = resolve_workspace(root, state_home)
    with workspace_lock(ws.layout, lock_timeout):
        target = content_target(ws, create=False)
        deleted = _delete(target, _list(target, thread_key)) if target is not None else 0
        ws.layout.thread_index(thread_key).unlink(missing_ok=True)
        ws.layout.thread_record(thread_key).unlink(missing_ok=True)
        shutil.rmtree(ws.layout.manifest_path(thread_key, 0).parent, ignore_errors=True)
        return deleted


def prune_thread_refs(
    root: Path | str,
    thread_key: str,
    *,
    keep: int,
    state_home: Path | str,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> int:
    """Keep the newest ``keep`` generations and the newest ``keep`` safety snapshots; delete the rest."""
    if keep < 0:
        raise ValueError("keep must be >= 0")
    ws = resolve_workspace(root, state_home)
    with workspace_lock(ws.layout, lock_timeout):
        target = content_target(ws, create=False)
        if target is None:
            return 0
        refs = _list(target, thread_key)
        generations = [r for r in refs if r.generation is not None]
        safety = sorted((r for r in refs if r.generation is None), key=lambda r: r.ref)
        doomed = generations[: max(0, len(generations) - keep)] + safety[: max(0, len(safety) - keep)]
        for info in doomed:
            if info.generation is not None:
                ws.layout.manifest_path(thread_key, info.generation).unlink(missing_ok=True)
        return _delete(target, doomed)


def release_snapshot(ref, *, state_home: Path | str) -> bool:
    """Give back a claimed generation no checkpoint will record (its checkpoint lost the race
    for the generation in the store): delete the ref only while it still names this snapshot's
    commit (git compares and deletes atomically), or the manifest. True when something went."""
    from continuation.workspace.model import WorkspaceRef

    if not isinstance(ref, WorkspaceRef):
        ref = WorkspaceRef.from_dict(ref)
    ws = resolve_workspace(ref.root, state_home)
    if ref.kind == "metadata" and ref.manifest_path:
        Path(ref.manifest_path).unlink(missing_ok=True)
        return True
    if not (ref.snapshot_ref and ref.snapshot_commit):
        return False
    target = content_target(ws, create=False)
    if target is None:
        return False
    code, _, _ = target.run(["update-ref", "--no-deref", "-d", ref.snapshot_ref, ref.snapshot_commit], check=False)
    return code == 0


def repoint_snapshot_ref(root: Path | str, ref_name: str, commit: str, expected: str, *,
                         state_home: Path | str) -> bool:
    """Point ``ref_name`` back at ``commit`` (the snapshot its checkpoint records) while it still
    names ``expected`` (compare-and-swap) and git still has ``commit``; False when either fails."""
    ws = resolve_workspace(root, state_home)
    target = content_target(ws, create=False)
    if target is None or not ref_name.startswith(REF_NAMESPACE + "/"):
        return False
    if target.run(["cat-file", "-e", f"{commit}^{{commit}}"], check=False)[0] != 0:
        return False
    return target.run(["update-ref", "--no-deref", ref_name, commit, expected], check=False)[0] == 0


def _delete(target: GitTarget, refs: list[SnapshotRefInfo]) -> int:
    if not refs:
        return 0
    payload = "".join(f"delete {r.ref} {r.commit}\n" for r in refs).encode("utf-8")
    target.run(["update-ref", "--no-deref", "--stdin"], stdin=payload)
    return len(refs)


def gc_shadow(root: Path | str, *, state_home: Path | str, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> bool:
    """Collect unreferenced objects of the workspace's shadow repository (never the user's own)."""
    ws: Workspace = resolve_workspace(root, state_home)
    if ws.git is not None:
        return False
    with workspace_lock(ws.layout, lock_timeout):
        target = content_target(ws, create=False)
        if target is None:
            return False
        target.run(["gc", "--quiet", "--prune=now"])
        return True


@dataclass
class GcReport:
    refs_deleted: int = 0
    threads_deleted: list[str] = field(default_factory=list)
    workspaces_forgotten: list[str] = field(default_factory=list)  # roots that no longer exist
    errors: list[str] = field(default_factory=list)


def list_workspaces(state_home: Path | str) -> list[Path]:
    """Roots of every workspace that has state under ``state_home``."""
    base = Path(state_home).expanduser() / "workspaces"
    roots = []
    for record in sorted(base.glob("*/workspace.json")):
        data = read_json(record)
        if isinstance(data, dict) and isinstance(data.get("root"), str):
            roots.append(Path(data["root"]))
    return roots


def gc_workspaces(
    state_home: Path | str, live_threads: Iterable[str], *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> GcReport:
    """Delete the snapshot refs and private state of every thread not in ``live_threads``.

    For ``continuation gc``: the engine passes the thread keys it still keeps. Workspaces whose
    folder is gone lose their state directory (their refs went with the repository). Shadow
    repositories are then collected; the user's repositories are left to git's own gc.
    """
    live = set(live_threads)
    report = GcReport()
    base = Path(state_home).expanduser() / "workspaces"
    for record in sorted(base.glob("*/workspace.json")):
        data = read_json(record)
        root = Path(data["root"]) if isinstance(data, dict) and isinstance(data.get("root"), str) else None
        if root is None or not root.is_dir():
            shutil.rmtree(record.parent, ignore_errors=True)
            report.workspaces_forgotten.append(str(root) if root else record.parent.name)
            continue
        try:
            ws = resolve_workspace(root, state_home)
            known = {r.thread_key for r in list_snapshot_refs(root, state_home=state_home)}
            known |= {p.stem for p in ws.layout.threads_dir.glob("*.json")}
            manifests = ws.layout.state_dir / "manifests"
            known |= {p.name for p in manifests.iterdir() if p.is_dir()} if manifests.is_dir() else set()
            dead = sorted(known - live)
            for thread_key in dead:
                report.refs_deleted += delete_thread_refs(root, thread_key, state_home=state_home, lock_timeout=lock_timeout)
                report.threads_deleted.append(thread_key)
            if dead and ws.git is None:
                gc_shadow(root, state_home=state_home, lock_timeout=lock_timeout)
        except Exception as exc:  # one broken workspace must not stop the others
            report.errors.append(f"{root}: {exc}")
    return report
