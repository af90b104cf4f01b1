"""The tree a restore leaves, derived from its safety snapshot instead of a second scan.

A rewind commits a checkpoint right after restoring the files, and that checkpoint's snapshot
used to scan the whole work tree again (a ``git status`` over every file) to learn what the
restore itself had just written. The restore knows it exactly: the safety snapshot's tree (the
work tree a moment before) with the written paths set to the checkpoint's entries and the
deleted paths removed. ``derive_tree_after`` applies those changes to the safety snapshot's
private index (``git update-index --index-info``, no work-tree scan) and writes the tree;
``take_snapshot(..., tree_after_restore=...)`` commits it as the new checkpoint's snapshot.

It is used only when it describes what a scan would store: the snapshot is taken under the same
policy (exclude patterns, size cap) in the same folder, as ``TreeAfterRestore.fits`` checks;
otherwise the snapshot scans as usual. The written files hold what ``git checkout-index`` wrote
from the checkpoint's blobs, so the derived tree names those blobs (a clean filter that does
not give back what its smudge filter wrote is the one case where a scan would store other bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from continuation.workspace.gitrun import GitTarget
from continuation.workspace.model import Submodule
from continuation.workspace.treebuild import BuiltTree

ZERO_ID = "0" * 40


@dataclass
class TreeAfterRestore:
    """The work tree as a restore left it (``RestoreResult.tree_after``)."""

    root: str
    kind: str  # git or shadow
    exclude: tuple[str, ...]
    size_cap_bytes: int
    built: BuiltTree
    submodules: list[Submodule] = field(default_factory=list)

    def fits(self, ws, policy) -> bool:
        """A scan of ``ws`` under ``policy`` would store this tree (same folder, same kind of
        repository, same exclusions and size cap)."""
        kind = "git" if ws.git is not None else "shadow"
        return (policy.mode == "snapshot" and Path(self.root) == Path(ws.root) and self.kind == kind
                and tuple(policy.exclude) == tuple(self.exclude)
                and policy.size_cap_bytes == self.size_cap_bytes)


def derive_tree_after(
    target: GitTarget,
    index: Path,
    safety: BuiltTree,
    checkpoint_entries: dict[str, tuple[str, ...]],
    restored: list[str],
    recreated: list[str],
    deleted: list[str],
    known_tree: str | None = None,
    update_index: bool = True,
) -> BuiltTree:
    """The tree of the work tree after ``restored`` and ``recreated`` were written (set to
    ``checkpoint_entries``: path -> (letter, mode, blob id, ...)) and ``deleted`` removed, from
    ``index`` (the safety snapshot's, which the caller owns). A file that stood where a written path needs a folder was removed by git's
    checkout, so such leading paths are removed from the index too.

    ``known_tree``: the caller knows the tree: the checkpoint's, when the restore carried out
    every difference between the safety snapshot and it. ``git write-tree`` (reading and writing
    the whole index, ~9 ms at 20,000 files) is skipped, and with ``update_index`` off so is the
    index (~7 ms): the caller then does not keep it as that tree's index."""
    records: list[bytes] = []

    def line(mode: str, oid: str, path: str) -> None:
        records.append(f"{mode} {oid}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0")

    for path in deleted:
        line("0", ZERO_ID, path)
    written = [*restored, *recreated]
    for path in written:
        mode, oid = checkpoint_entries[path][1:3]
        line(mode, oid, path)
    if records and (update_index or known_tree is None):
        # --replace: an entry where a written path needs a folder goes, as the file did
        target.run(["update-index", "-z", "--replace", "--index-info"], index=index, stdin=b"".join(records))
    gone = set(deleted)
    rewritten = set(written)
    tree = known_tree if known_tree is not None else target.out(["write-tree", "--missing-ok"], index=index)
    # a written file keeps its standing in the user's index: one that was missing is tracked
    # exactly when the safety scan listed it as a tracked deletion
    untracked = [p for p in safety.untracked if p not in gone]
    untracked += [p for p in recreated if p not in safety.tracked and p not in set(untracked)]
    return BuiltTree(
        tree=tree,
        head=safety.head,
        branch=safety.branch,
        # written paths now hold the checkpoint's entries: their state against the user's index
        # is no longer the one the safety scan saw (only U and not-stored letters are read)
        tracked={p: letter for p, letter in safety.tracked.items() if p not in gone and p not in rewritten},
        untracked=untracked,
        oversized=list(safety.oversized),
        excluded=list(safety.excluded),
        nested_repos=list(safety.nested_repos),
    )
