"""Metadata checkpoints: path, size, mode, mtime and sha256 of files, no contents.

Outside git the manifest lists every file under the root (nested ``.git`` folders are recorded as
nested repositories and not descended; symlinks are recorded as links, never followed). Inside a
git repository it lists only the files ``git status`` reports as changed or untracked, since
every other file equals HEAD, and records HEAD/branch like a snapshot does. A file's sha256 is
reused from the thread's previous manifest when its size, mode and mtime are unchanged.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from continuation.host.userfiles import hash_prefix
from continuation.workspace.errors import WorkspaceError
from continuation.workspace.owner import abandoned, current_owner
from continuation.workspace.model import (
    DIRTY_SAMPLE,
    DirtySummary,
    DriftReport,
    OversizedFile,
    WorkspaceRef,
)
from continuation.workspace.policy import WorkspacePolicy
from continuation.workspace.porcelain import Status, StatusEntry
from continuation.workspace.treebuild import read_status, seed_index
from continuation.workspace.workspace_target import (
    Workspace,
    effective_matcher,
    in_progress_operation,
    read_json,
    utc_now,
    write_json_atomic,
)

MANIFEST_VERSION = 1
Entry = dict[str, object]


def metadata_checkpoint(ws: Workspace, thread_key: str, generation: int, policy: WorkspacePolicy,
                        *, claim: bool = False, reclaim=None) -> WorkspaceRef:
    """Write a manifest for the workspace; the caller holds the workspace lock.

    ``claim``: never overwrite another checkpoint's manifest (unless abandoned, see
    ``take_snapshot``); take the next free generation (manifests are only written under the
    workspace lock, so the check cannot race)."""
    while claim and not _free(ws.layout.manifest_path(thread_key, generation), generation, reclaim):
        generation += 1
    matcher = effective_matcher(ws, policy.exclude)
    previous = _latest_manifest(ws, thread_key)
    ref = WorkspaceRef(
        root=str(ws.root),
        kind="metadata",
        thread_key=thread_key,
        generation=generation,
        exclude_patterns=list(policy.exclude),
        size_cap_bytes=policy.size_cap_bytes,
        created_at=utc_now(),
    )
    if ws.git is not None:
        status = _git_status(ws)
        paths, deleted, nested = _dirty_scope(status)
        ref.head, ref.branch = status.head, status.branch
        ref.detached, ref.unborn = status.branch is None, status.head is None
        ref.in_progress = in_progress_operation(ws.git.git_dir)
        ref.dirty = status_dirty_summary(status)
    else:
        paths, nested = _walk(ws.root)
        deleted = []
    excluded = [p for p in paths if matcher.excluded(p)]
    entries: dict[str, Entry] = {p: {"deleted": True} for p in deleted}
    for path in paths:
        if path in excluded:
            continue
        entry = _describe_file(ws.root / path, policy.size_cap_bytes, previous.get(path))
        if entry is None:
            continue
        if entry.get("oversized"):
            ref.oversized.append(OversizedFile(path, int(entry["size"])))
        entries[path] = entry
    if ws.git is None:
        ref.dirty = _manifest_dirty(previous, entries) if previous else DirtySummary(base="none")
    ref.excluded, ref.excluded_count = excluded[:DIRTY_SAMPLE], len(excluded)
    ref.nested_repos = nested
    manifest_path = ws.layout.manifest_path(thread_key, generation)
    manifest = {"manifest_version": MANIFEST_VERSION, "root": str(ws.root), "created_at": ref.created_at,
                "head": ref.head, "entries": entries}
    if claim:
        manifest["owner"] = current_owner()
    write_json_atomic(manifest_path, manifest)
    ref.manifest_path = str(manifest_path)
    return ref


def _free(path: Path, generation: int, reclaim) -> bool:
    """No manifest claims ``generation``, or its claim was abandoned (process gone, no
    checkpoint of it in the caller's store)."""
    if not path.exists():
        return True
    data = read_json(path)
    owner = data.get("owner") if isinstance(data, dict) else None
    return reclaim is not None and abandoned(owner) and reclaim(generation)


def metadata_drift(ws: Workspace, ref: WorkspaceRef, report: DriftReport) -> None:
    stored = _load_entries(Path(ref.manifest_path)) if ref.manifest_path else None
    if stored is None:
        raise WorkspaceError(f"metadata checkpoint manifest {ref.manifest_path} is missing or unreadable")
    matcher = effective_matcher(ws, ref.exclude_patterns)
    cap = ref.size_cap_bytes if ref.size_cap_bytes is not None else WorkspacePolicy().size_cap_bytes
    untracked_now: set[str] = set()
    if ws.git is not None:
        status = _git_status(ws)
        report.head, report.branch = status.head, status.branch
        paths, deleted_now, _ = _dirty_scope(status)
        untracked_now = {e.path for e in status.entries if e.kind == "?"}
        scope = set(paths) | set(deleted_now) | set(stored)
        clean = "clean"  # equal to HEAD: outside the manifest at checkpoint, outside status now
    else:
        paths, _ = _walk(ws.root)
        deleted_now, scope, clean = [], set(paths) | set(stored), "absent"
    current_paths = set(paths)
    for path in sorted(scope):
        if matcher.excluded(path):
            continue
        before = stored.get(path, {"deleted": True} if clean == "absent" else {"clean": True})
        if path in deleted_now:
            now: Entry = {"deleted": True}
        elif path in current_paths:
            now = _describe_file(ws.root / path, cap, before if "sha256" in before else None) or {"deleted": True}
        else:
            now = {"deleted": True} if clean == "absent" else {"clean": True}
        if _same(before, now):
            continue
        if now.get("deleted"):
            report.deleted.append(path)
        elif before.get("deleted") or (before.get("clean") and path in untracked_now):
            report.added.append(path)
        else:
            report.modified.append(path)


def _same(a: Entry, b: Entry) -> bool:
    if a.get("deleted") or b.get("deleted") or a.get("clean") or b.get("clean"):
        return bool(a.get("deleted")) == bool(b.get("deleted")) and bool(a.get("clean")) == bool(b.get("clean"))
    keys = ("size", "mode", "sha256", "link") if a.get("sha256") and b.get("sha256") else ("size", "mode", "mtime_ns", "link")
    return all(a.get(k) == b.get(k) for k in keys)


def _git_status(ws: Workspace) -> Status:
    assert ws.git is not None
    scratch = ws.layout.scratch_index("metadata")
    try:
        seed_index(ws.git, scratch, None)
        return read_status(ws.git, scratch)
    finally:
        scratch.unlink(missing_ok=True)


def _dirty_scope(status: Status) -> tuple[list[str], list[str], list[str]]:
    present, deleted, nested = [], [], []
    for entry in status.entries:
        if entry.kind == "1" and entry.y == "." and entry.x not in "MTA":
            if entry.x == "D":
                deleted.append(entry.path)
            continue
        if entry.is_directory:
            nested.append(entry.path.rstrip("/"))
        elif entry.kind == "1" and entry.y == "D":
            deleted.append(entry.path)
        else:
            present.append(entry.path)
    return present, deleted, nested


def _walk(root: Path) -> tuple[list[str], list[str]]:
    files: list[str] = []
    nested: list[str] = []
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        if prefix and ".git" in dirs + names:
            nested.append(rel)
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d != ".git")
        # symlinked folders are listed as files (links), never followed
        files += [prefix + d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        files += [prefix + n for n in sorted(names) if n != ".git"]
    return files, nested


def _describe_file(path: Path, cap: int, previous: Entry | None) -> Entry | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    entry: Entry = {"size": info.st_size, "mode": oct(stat.S_IMODE(info.st_mode) | stat.S_IFMT(info.st_mode)),
                    "mtime_ns": info.st_mtime_ns}
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        entry["link"] = target
        entry["sha256"] = hashlib.sha256(os.fsencode(target)).hexdigest()
        return entry
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size > cap:
        entry["oversized"] = True
        return entry
    if previous and all(previous.get(k) == entry[k] for k in ("size", "mode", "mtime_ns")) and previous.get("sha256"):
        entry["sha256"] = previous["sha256"]
        return entry
    digest = hashlib.sha256()
    try:  # opened afresh: it may have become a FIFO since the lstat above
        hash_prefix(path, digest, limit=cap)
    except OSError:
        return None
    entry["sha256"] = digest.hexdigest()
    return entry


def _load_entries(path: Path) -> dict[str, Entry] | None:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        return None
    return {str(k): v for k, v in data["entries"].items() if isinstance(v, dict)}


def _latest_manifest(ws: Workspace, thread_key: str) -> dict[str, Entry]:
    folder = ws.layout.manifest_path(thread_key, 0).parent
    if not folder.is_dir():
        return {}
    generations = sorted((int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()), reverse=True)
    for generation in generations:
        entries = _load_entries(folder / f"{generation}.json")
        if entries is not None:
            return entries
    return {}


def _manifest_dirty(previous: dict[str, Entry], current: dict[str, Entry]) -> DirtySummary:
    summary = DirtySummary(base="previous-snapshot")
    for path in sorted(set(previous) | set(current)):
        before, now = previous.get(path, {"deleted": True}), current.get(path, {"deleted": True})
        if _same(before, now):
            continue
        letter = "D" if now.get("deleted") else "A" if before.get("deleted") else "M"
        summary.count(letter, path)
    return summary


def status_dirty_summary(status: Status) -> DirtySummary:
    """Counts from a ``git status`` run against a copy of the user's index, like ``git status``."""
    summary = DirtySummary(base="HEAD")
    for entry in status.entries:
        letter = _classify(entry)
        if letter is not None and not entry.is_directory:
            summary.count(letter, entry.path)
    return summary


def _classify(entry: StatusEntry) -> str | None:
    if entry.kind in ("u", "?"):
        return "U" if entry.kind == "u" else "?"
    if "D" in (entry.x, entry.y):
        return "D"
    if entry.x == "A":
        return "A"
    if entry.x in ("M", "T") or entry.y in ("M", "T"):
        return "M"
    return None
