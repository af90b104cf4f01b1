"""Workspace checkpoints that never disturb the user's git.

API (filelock is imported only when a function runs, never at import; git runs as processes)::

    from continuation.workspace import (
        WorkspacePolicy, WorkspaceRef, take_snapshot, plan_restore, apply_restore, plan_undo,
        drift, load_snapshot, latest_snapshot, list_snapshot_refs, delete_thread_refs,
        prune_thread_refs, gc_shadow, gc_workspaces, list_workspaces, WorkspaceError,
    )

    ref = take_snapshot(root, "t12-abcdef", generation, state_home=home,
                        policy=WorkspacePolicy(mode="snapshot", exclude=("node_modules/",)))
    capsule_workspace = ref.to_dict()          # JSON; WorkspaceRef.from_dict() reads it back
    plan = plan_restore(ref, state_home=home, session_created=paths_written_by_tools)
    print(plan.describe())                      # `continuation restore --dry-run` stops here
    result = apply_restore(plan, state_home=home)   # result.safety = snapshot taken first
    undo = plan_undo(result, state_home=home)   # preview of undoing the restore
    report = drift(ref, state_home=home, session_paths=paths_written_by_tools)
    ref = load_snapshot(root, "t12-abcdef/3", state_home=home)   # by name, e.g. from the CLI
    ref = latest_snapshot(root, "t12-abcdef", state_home=home)   # highest generation, or None
    refs = list_snapshot_refs(root, state_home=home, thread_key="t12-abcdef")
    delete_thread_refs(root, "t12-abcdef", state_home=home)   # `thread delete` / `gc`
    prune_thread_refs(root, "t12-abcdef", keep=5, state_home=home)
    gc_workspaces(home, live_threads=engine_thread_keys)      # `continuation gc`: all workspaces

Snapshots (policy ``snapshot``, the default) in a git repository are commits under
``refs/continuation/<thread_key>/<generation>`` built with a private index under the state home;
the user's HEAD, branch, ``.git/index`` (byte for byte), stash, config, hooks and ``git status``
are unchanged, no hook runs and nothing is signed or pushed. Outside git a shadow repository under
``<state_home>/workspaces/<id>/shadow.git`` uses the folder as its work tree. Policy ``metadata``
writes a manifest (path, size, mode, mtime, sha256); ``none`` records the root only. Files over
the size cap, policy exclusions, submodules and nested repositories are recorded, not stored, and
a restore leaves them alone. A file lock per workspace serialises snapshots, restores and drift
checks of concurrent threads; each thread has its own refs.

Visible traces, by design: the snapshot commits appear under ``git log --all`` / ``gitk --all``
and are kept alive by their refs until ``delete_thread_refs`` / ``gc_workspaces``; a
``git push --mirror`` (or a ``refs/*`` push refspec) would push them. Blobs live in the user's
object store (no second copy of the repository); git's own gc collects them once the refs go.
The git index the snapshot reads is the user's (so the snapshot holds exactly what ``git
status`` shows, plus untracked files); entries marked assume-unchanged are trusted as git trusts
them. Keep the state home outside the workspace (if it is inside, it is excluded).

``thread_key`` comes from the engine and must be ref- and file-safe (``[A-Za-z0-9._-]``, see
``layout.validate_thread_key``; keep it lowercase: refs are files, and macOS and Windows file
systems ignore case). Errors are ``WorkspaceError`` subclasses with a clear message
(``WorkspaceBusy``, ``RestoreUnavailable``, ``GitFailure``, ``InvalidThreadKey``,
``InvalidPolicy``, ``CorruptReference``). How a restore decides a file was "created by the
session" is documented in ``continuation.workspace.restore``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names resolve lazily (PEP 562) so that importing this package costs the hook hot path nothing.
_EXPORTS = {
    "drift": "drift",
    "CorruptReference": "errors",
    "GitFailure": "errors",
    "InvalidThreadKey": "errors",
    "InvalidPolicy": "errors",
    "RestoreUnavailable": "errors",
    "WorkspaceBusy": "errors",
    "WorkspaceError": "errors",
    "snapshot_ref_name": "layout",
    "validate_thread_key": "layout",
    "DirtyPath": "model",
    "DirtySummary": "model",
    "DriftReport": "model",
    "ModeChange": "model",
    "OversizedFile": "model",
    "RestorePlan": "model",
    "RestoreResult": "model",
    "SkippedPath": "model",
    "Submodule": "model",
    "WorkspaceRef": "model",
    "WorkspacePolicy": "policy",
    "apply_restore": "restore",
    "plan_restore": "restore",
    "plan_undo": "restore",
    "SnapshotRefInfo": "retention",
    "delete_thread_refs": "retention",
    "gc_shadow": "retention",
    "list_snapshot_refs": "retention",
    "prune_thread_refs": "retention",
    "release_snapshot": "retention",
    "repoint_snapshot_ref": "retention",
    "GcReport": "retention",
    "gc_workspaces": "retention",
    "list_workspaces": "retention",
    "take_snapshot": "snapshot",
    "load_snapshot": "lookup",
    "latest_snapshot": "lookup",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from continuation.workspace.drift import drift
    from continuation.workspace.errors import (
        CorruptReference,
        GitFailure,
        InvalidPolicy,
        InvalidThreadKey,
        RestoreUnavailable,
        WorkspaceBusy,
        WorkspaceError,
    )
    from continuation.workspace.layout import snapshot_ref_name, validate_thread_key
    from continuation.workspace.model import (
        DirtyPath,
        DirtySummary,
        DriftReport,
        ModeChange,
        OversizedFile,
        RestorePlan,
        RestoreResult,
        SkippedPath,
        Submodule,
        WorkspaceRef,
    )
    from continuation.workspace.policy import WorkspacePolicy
    from continuation.workspace.restore import apply_restore, plan_restore, plan_undo
    from continuation.workspace.retention import (
        GcReport,
        SnapshotRefInfo,
        delete_thread_refs,
        gc_shadow,
        gc_workspaces,
        list_snapshot_refs,
        list_workspaces,
        prune_thread_refs,
        release_snapshot,
        repoint_snapshot_ref,
    )
    from continuation.workspace.snapshot import take_snapshot
    from continuation.workspace.lookup import latest_snapshot, load_snapshot

__all__ = [
    "CorruptReference",
    "DirtyPath",
    "DirtySummary",
    "DriftReport",
    "GcReport",
    "GitFailure",
    "InvalidPolicy",
    "InvalidThreadKey",
    "ModeChange",
    "OversizedFile",
    "RestorePlan",
    "RestoreResult",
    "RestoreUnavailable",
    "SkippedPath",
    "SnapshotRefInfo",
    "Submodule",
    "WorkspaceBusy",
    "WorkspaceError",
    "WorkspacePolicy",
    "WorkspaceRef",
    "apply_restore",
    "delete_thread_refs",
    "drift",
    "gc_shadow",
    "gc_workspaces",
    "latest_snapshot",
    "list_snapshot_refs",
    "list_workspaces",
    "load_snapshot",
    "plan_restore",
    "plan_undo",
    "prune_thread_refs",
    "release_snapshot",
    "repoint_snapshot_ref",
    "snapshot_ref_name",
    "take_snapshot",
    "validate_thread_key",
]
