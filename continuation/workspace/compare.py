"""Comparing the work tree with a stored snapshot, without writing objects or touching the user.

A scratch index is built for the snapshot's tree: a copy of the thread's last snapshot index
(or the user's index) re-pointed at that tree with ``git read-tree --reset``, which keeps the
stat data of every entry that matches, so only files that really differ are re-hashed. ``git status``
against that index then lists exactly what differs from the snapshot.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from posixpath import normpath

from continuation.workspace import index_cache
from continuation.workspace.errors import RestoreUnavailable
from continuation.workspace.gitrun import GitTarget
from continuation.workspace.model import WorkspaceRef
from continuation.workspace.porcelain import Status, StatusEntry
from continuation.workspace.treebuild import read_status
from continuation.workspace.workspace_target import Workspace, content_target, effective_matcher

GITLINK = "160000"


def open_snapshot_target(ws: Workspace, ref: WorkspaceRef) -> GitTarget:
    if not ref.has_contents:
        raise RestoreUnavailable(
            f"checkpoint of {ref.root} is a {ref.kind!r} checkpoint and stores no file contents"
        )
    target = content_target(ws, create=False)
    if target is None or target.kind != ref.kind:
        raise RestoreUnavailable(
            f"checkpoint of {ref.root} was a {ref.kind} snapshot but the folder is now "
            f"{'not a git repository' if ws.git is None else 'a git repository'}"
        )
    return target


def snapshot_tree(target: GitTarget, ref: WorkspaceRef) -> str:
    """The snapshot's tree id, after checking its commit still exists."""
    args = ["rev-parse", "--verify", "--quiet", f"{ref.snapshot_commit}^{{tree}}"]
    code, out, _ = target.run(args, check=False)
    if code != 0:  # taken on another machine? (CONTINUATION_SNAPSHOT_REMOTE)
        from continuation.workspace.remote import fetch_thread_snapshots

        if fetch_thread_snapshots(target, ref.thread_key):
            code, out, _ = target.run(args, check=False)
    if code != 0:
        raise RestoreUnavailable(
            f"snapshot {ref.snapshot_ref or ref.snapshot_commit} is gone from {target.git_dir} "
            "(its ref was deleted and git collected the objects?)"
        )
    return out.decode().strip()


def checkpoint_index(target: GitTarget, scratch: Path, tree: str, thread_key: str | None) -> None:
    kept = index_cache.recall(target.layout, thread_key, tree)
    if kept is not None:  # the thread's last snapshot was of this very tree
        shutil.copy2(kept, scratch)
        return
    seeds = []
    if thread_key:
        seeds.append(target.layout.thread_index(thread_key))
    if target.kind == "git":
        seeds.append(target.user_index)
    for seed in seeds:
        if seed.is_file():
            shutil.copy2(seed, scratch)
            # --reset: a one-tree merge that keeps the stat data of entries whose blob matches and,
            # unlike plain -m, does not refuse when the work tree has changes.
            code, _, _ = target.run(["read-tree", "--reset", tree], index=scratch, check=False)
            if code == 0:
                return
            scratch.unlink(missing_ok=True)
    target.run(["read-tree", tree], index=scratch)


def status_against_snapshot(target: GitTarget, ref: WorkspaceRef, tree: str) -> Status:
    scratch = target.layout.scratch_index("compare")
    try:
        checkpoint_index(target, scratch, tree, ref.thread_key)
        return read_status(target, scratch)
    finally:
        scratch.unlink(missing_ok=True)


class SkipRules:
    """Paths a checkpoint never stored, so restore and drift must leave them alone."""

    def __init__(self, ref: WorkspaceRef, ws: Workspace) -> None:
        from continuation.workspace.secrets import SecretFiles

        self.oversized = {o.path for o in ref.oversized}
        self.matcher = effective_matcher(ws, ref.exclude_patterns)
        self.containers = [p.rstrip("/") + "/" for p in ref.nested_repos] + [s.path.rstrip("/") + "/" for s in ref.submodules]
        self.left_out = {x["path"]: x["why"] for x in ref.secrets_left_out}
        self.secrets = SecretFiles(ws.layout.state_home, ws.root)

    def secret(self, entry: StatusEntry) -> str | None:
        """Why a path the checkpoint does not hold is a secret file (``workspace.secrets``):
        left out of the checkpoint, or one now; never snapshotted, so never restored or
        deleted. None for any other path."""
        if entry.kind != "?" or entry.is_directory:
            return None
        if entry.path in self.left_out:
            return self.left_out[entry.path] + " (left out of the checkpoint)"
        return self.secrets.why(entry.path)

    def reason(self, entry: StatusEntry) -> str | None:
        path = entry.path
        if entry.is_directory:
            return "nested repository (recorded, not descended)"
        if GITLINK in (entry.mode_index, entry.mode_worktree):
            return "submodule (recorded, not descended)"
        if path in self.oversized:
            return "over the size cap at the checkpoint (recorded, not stored)"
        if self.matcher.excluded(path):
            return "excluded by the workspace policy"
        if any(path.startswith(c) for c in self.containers):
            return "inside a nested repository or submodule"
        return None


def relative_paths(root: Path, paths) -> set[str]:
    """Normalise caller-given paths (absolute or root-relative) to root-relative posix paths."""
    result: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_absolute():
            try:
                path = path.relative_to(root)
            except ValueError:
                try:  # the caller may name the file through a symlinked parent folder
                    path = (path.parent.resolve() / path.name).relative_to(root)
                except (ValueError, OSError):
                    continue
        text = normpath(path.as_posix())
        if text and text != "." and not text.startswith("../"):
            result.add(text)
    return result
