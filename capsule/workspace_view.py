"""The workspace as a model needs it: where it is, which branch or commit, what is dirty, and
where the snapshot is. Not the internal record (tree ids, size caps, exclusion patterns, schema
versions stay in the checkpoint's workspace record, readable at the capsule's workspace pointer).

Reads any writer's mapping: ``WorkspaceRef.to_dict()`` of continuation.workspace (``root``,
``head``, ``branch``, ``detached``, ``dirty`` {counts, paths}, ``snapshot_ref`` ...), a bare
``{"root": ...}``, a failed snapshot (``error``/``skipped``) and older spellings
(``canonical_root``, ``dirty_summary``, ``dirty_count``).
"""
from __future__ import annotations

from typing import Any

MAX_DIRTY_PATHS = 12
_COUNTS = ("modified", "added", "deleted", "untracked", "unmerged")
_LETTER = {"?": "??"}


def _dirty(value: Any) -> tuple[list[str] | None, int | None]:
    """(``"M path"`` lines, total changed) of a dirty summary in any spelling."""
    if isinstance(value, dict):
        paths = [f"{_LETTER.get(str(p.get('status', '?')), p.get('status', '?'))} {p['path']}"
                 for p in value.get("paths") or [] if isinstance(p, dict) and "path" in p]
        total = sum(v for k in _COUNTS if isinstance(v := value.get(k), int))
        return paths, max(total, len(paths))
    if isinstance(value, list):
        return [str(v) for v in value], len(value)
    if isinstance(value, str):
        return ([value] if value else []), None
    return None, None


def workspace_view(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The model-facing workspace reference (see the module docstring); None stays None."""
    if not isinstance(record, dict):
        return None
    out: dict[str, Any] = {}
    root = record.get("root") or record.get("canonical_root")
    if root is not None:
        out["root"] = root
    if record.get("unborn"):
        out["head"] = "(no commit yet)"
    elif record.get("head"):
        out["head"] = record["head"]
    if record.get("detached"):
        out["branch"] = "(detached HEAD)"
    elif record.get("branch"):
        out["branch"] = record["branch"]
    if record.get("in_progress"):
        out["in_progress"] = record["in_progress"]
    paths, total = _dirty(record.get("dirty", record.get("dirty_summary")))
    if total is None and isinstance(record.get("dirty_count"), int):
        total = record["dirty_count"]
    if paths is not None or total is not None:
        paths = paths or []
        more = (total or 0) - min(len(paths), MAX_DIRTY_PATHS)
        shown = paths[:MAX_DIRTY_PATHS] + ([f"(+{more} more)"] if more > 0 else [])
        out["dirty"] = shown if (shown or total is None) else "clean"
    ref = record.get("snapshot_ref") or record.get("snapshot_id") or record.get("checkpoint_id")
    if ref:
        out["snapshot_ref"] = ref
    elif record.get("kind") in ("metadata", "none") or record.get("skipped") or record.get("error"):
        out["snapshot"] = record.get("error") or record.get("skipped") or f"{record['kind']} only (no file contents)"
    return out or None
