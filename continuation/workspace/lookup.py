"""Finding a snapshot by name: for ``continuation restore CHECKPOINT`` and ``drift``."""

from __future__ import annotations

import json
from pathlib import Path

from continuation.workspace.errors import RestoreUnavailable
from continuation.workspace.layout import REF_NAMESPACE
from continuation.workspace.model import WorkspaceRef
from continuation.workspace.workspace_target import content_target, resolve_workspace

SUBJECT = "continuation snapshot "


def load_snapshot(root: Path | str, checkpoint: str, *, state_home: Path | str) -> WorkspaceRef:
    """The WorkspaceRef of a stored snapshot, read back from its commit.

    checkpoint: ``<thread_key>/<generation>``, ``<thread_key>/safety/<n>``, a full
    ``refs/continuation/...`` name, or a snapshot commit id. The reference comes from the JSON
    the snapshot commit carries (what it did not store: oversized, excluded, nested
    repositories), so a restore from a bare ref is as careful as one from a capsule. The dirty
    summary is not stored there and comes back empty.
    """
    ws = resolve_workspace(root, state_home)
    target = content_target(ws, create=False)
    if target is None:
        raise RestoreUnavailable(f"no snapshots were ever taken of {ws.root}")
    checkpoint = checkpoint.strip()
    if checkpoint.startswith("refs/"):
        name = checkpoint
    elif "/" in checkpoint:
        name = f"{REF_NAMESPACE}/{checkpoint}"
    else:
        name = checkpoint
    if name.startswith("refs/") and not name.startswith(REF_NAMESPACE + "/"):
        raise RestoreUnavailable(f"{checkpoint!r} is not a continuation snapshot ref")
    args = ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{name}^{{commit}}"]
    code, out, _ = target.run(args, check=False)
    if code != 0 and name.startswith(REF_NAMESPACE + "/"):  # taken on another machine?
        from continuation.workspace.remote import fetch_thread_snapshots

        if fetch_thread_snapshots(target, name[len(REF_NAMESPACE) + 1:].split("/", 1)[0]):
            code, out, _ = target.run(args, check=False)
    if code != 0:
        raise RestoreUnavailable(f"no snapshot {checkpoint!r} in {ws.root}")
    commit = out.decode().strip()
    raw = target.run(["cat-file", "commit", commit])[1].decode("utf-8", "surrogateescape")
    message = raw.split("\n\n", 1)[1] if "\n\n" in raw else ""
    subject, _, body = message.partition("\n\n")
    if not subject.startswith(SUBJECT):
        raise RestoreUnavailable(f"{checkpoint!r} ({commit[:12]}) is not a continuation snapshot")
    # the reference is the body's first paragraph; trailers (Continuation-Home) follow it
    reference = body.split("\n\n", 1)[0]
    try:
        data = json.loads(reference) if reference.strip() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    data.update(
        root=str(ws.root),
        kind=target.kind,
        snapshot_commit=commit,
        snapshot_ref=name if name.startswith("refs/") else data.get("snapshot_ref"),
        snapshot_tree=target.out(["rev-parse", f"{commit}^{{tree}}"]),
    )
    data.pop("dirty", None)
    return WorkspaceRef.from_dict(data)


def latest_snapshot(root: Path | str, thread_key: str, *, state_home: Path | str) -> WorkspaceRef | None:
    """The thread's highest-generation snapshot (for ``continuation drift`` without a capsule)."""
    from continuation.workspace.retention import list_snapshot_refs

    generations = [r for r in list_snapshot_refs(root, state_home=state_home, thread_key=thread_key) if r.generation is not None]
    if not generations:
        return None
    return load_snapshot(root, generations[-1].ref, state_home=state_home)
