"""The aligned checkpoints of a thread, as rows for ``continuation checkpoints``.

"Files changed since the previous one" compares the two snapshot trees (``git diff-tree``) in the
repository that holds them (the user's, or the shadow repository for folders outside git). For
the first snapshot of a thread it is the snapshot's dirty summary (changes against HEAD); for a
metadata checkpoint, its dirty summary against the previous manifest. A dirty summary counts
every change but names only the first ``DIRTY_SAMPLE`` paths: the count is its total, and the
full list (``all_files``) is the snapshot's tree against the HEAD it was taken on.

Each row names where the checkpoint sits in the thread as ``position``: the last event it
names (``rewind.operation.aligned_position``), the event a rewind to it returns to.
"""
from __future__ import annotations

from datetime import datetime, timezone

from continuation.boundary import checkpoints as cps
from continuation.session.engine import Thread

FILES_SAMPLE = 20


def _snapshot_pruned(ws: dict | None, live: dict) -> bool | None:
    """True when the checkpoint's snapshot ref is gone (None: no snapshot, or cannot tell)."""
    ref, root = (ws or {}).get("snapshot_ref"), (ws or {}).get("root")
    if not ref or live.get(root) is None:
        return None
    return ref not in live[root]


def _objective(cp: cps.Checkpoint) -> str:
    if cp.pruned:
        return "(capsule pruned by `continuation gc`)"
    try:
        from capsule.decode import decode_capsule

        capsule = decode_capsule(cp.capsule_bytes)
    except Exception as exc:  # a corrupt capsule is listed, not fatal
        return f"(capsule unreadable: {type(exc).__name__})"
    return capsule.objective.text or ""


def _tree_changes(home, old: dict, new: dict) -> list[str] | None:
    """Paths differing between two snapshot trees, or None when they cannot be compared."""
    from continuation.workspace import WorkspaceError, WorkspaceRef

    try:
        a, b = WorkspaceRef.from_dict(old), WorkspaceRef.from_dict(new)
        if not (a.has_contents and b.has_contents and a.snapshot_tree and b.snapshot_tree):
            return None
        if a.root != b.root or a.kind != b.kind:
            return None
        from continuation.workspace.compare import open_snapshot_target
        from continuation.workspace.workspace_target import resolve_workspace

        target = open_snapshot_target(resolve_workspace(b.root, home), b)
        code, out, _ = target.run(["diff-tree", "-r", "-z", "--name-only", "--no-renames",
                                   a.snapshot_tree, b.snapshot_tree], check=False)
        if code != 0:
            return None
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (WorkspaceError, ValueError, OSError):
        return None


def _dirty_paths(ws: dict) -> tuple[list[str], int] | None:
    """The dirty summary's named paths and its count of every change."""
    dirty = (ws or {}).get("dirty")
    if not isinstance(dirty, dict):
        return None
    paths = [p.get("path") for p in dirty.get("paths") or [] if isinstance(p, dict)]
    counted = sum(v for k in ("modified", "added", "deleted", "untracked", "unmerged")
                  if isinstance(v := dirty.get(k), int))
    return paths, max(counted, len(paths))


def _against_head(home, ws: dict) -> list[str] | None:
    """Every path of a first snapshot that differs from the HEAD it was taken on."""
    if not ws.get("head") or ws.get("kind") != "git":
        return None
    return _tree_changes(home, {**ws, "snapshot_tree": ws["head"]}, ws)


def _live_refs(home, roots: set[str], thread_key: str) -> dict[str, set[str] | None]:
    """Per workspace root, the snapshot refs of the thread still there (None: cannot tell)."""
    from continuation.workspace import WorkspaceError
    from continuation.workspace.retention import list_snapshot_refs

    out: dict[str, set[str] | None] = {}
    for root in roots:
        try:
            out[root] = {r.ref for r in list_snapshot_refs(root, state_home=home,
                                                             thread_key=thread_key)}
        except (WorkspaceError, OSError):
            out[root] = None
    return out


def checkpoint_rows(thread: Thread, *, all_files: bool = False) -> list[dict]:
    """One row per checkpoint, oldest first. ``files`` names the first :data:`FILES_SAMPLE`
    changed paths, or every one with ``all_files`` (``files_complete`` says which)."""
    from continuation.rewind.operation import aligned_position

    rows = []
    previous: dict | None = None
    listed = cps.list_checkpoints(thread)
    live = _live_refs(thread.engine.home, {cp.workspace["root"] for cp in listed
                                            if (cp.workspace or {}).get("snapshot_ref")
                                            and cp.workspace.get("root")}, thread.key)
    for cp in listed:
        ws = cp.workspace or None
        changed: list[str] | None = None
        count: int | None = None
        if ws and not ws.get("error"):
            if previous is not None and ws.get("kind") in ("git", "shadow"):
                changed = _tree_changes(thread.engine.home, previous, ws)
            if changed is None and (dirty := _dirty_paths(ws)) is not None:
                changed, count = dirty
                if all_files and count > len(changed):
                    changed = _against_head(thread.engine.home, ws) or changed
            previous = ws
        if changed is not None and count is None:
            count = len(changed)
        rows.append({
            "checkpoint_id": cp.checkpoint_id,
            "time": datetime.fromtimestamp(cp.created_at, timezone.utc).isoformat(timespec="seconds"),
            "created_at": cp.created_at,
            "generation": cp.generation,
            "seq": cp.seq,
            "position": aligned_position(thread, cp),
            "reason": cp.reason,
            "objective": _objective(cp),
            "files_changed": count,
            "files": (changed or []) if all_files else (changed or [])[:FILES_SAMPLE],
            "files_complete": count is None or len(changed or []) >= count
                              and (all_files or count <= FILES_SAMPLE),
            "snapshot_ref": (ws or {}).get("snapshot_ref"),
            "workspace_kind": (ws or {}).get("kind") or ("error" if ws and ws.get("error") else None),
            "corrupt": cps.verify(cp),
            # what `continuation gc` removed: the capsule's bytes, the workspace snapshot's ref
            "capsule_pruned": cp.pruned,
            "snapshot_pruned": _snapshot_pruned(ws, live),
            "pruned": cp.pruned or bool(_snapshot_pruned(ws, live)),
        })
    return rows
