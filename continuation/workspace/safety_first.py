"""A restore applied at once: its safety snapshot taken first, its preview read off that snapshot.

A restore that is previewed and then confirmed scans the work tree twice: the preview compares
it with the checkpoint (``git status`` against the checkpoint's index), and the apply takes the
safety snapshot (``git status`` against the user's index, then the tree). When nothing stands
between the two (``continuation rewind --yes``, a harness's ``rewind()``), one scan is enough:
the safety snapshot is taken first, and the preview is what ``git status`` against the
checkpoint's index would list, read from the difference between the two trees
(``git diff-tree``, no work-tree scan) and from what the safety scan saw but did not store.

:func:`status_from_safety` gives that listing only where the two trees tell it exactly: a path
the checkpoint has that is still in the work tree but not in the safety snapshot (ignored now,
over the size cap, under a nested repository), a submodule, a merge in progress, or Windows
(modes and links) make it answer None, and the preview scans as before. A new path that the
user's index tracks is checked against the ignore rules (``git check-ignore --no-index``), as
``git status`` would not list it when ignored.

Between the preview and the apply, the apply checks the paths it is about to write or delete
against the safety snapshot's index (``git diff-files``): one changed since is left as is and
reported, as a path changed after a previewed plan is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from continuation.workspace.gitrun import GitTarget
from continuation.workspace.porcelain import Status, StatusEntry
from continuation.workspace.treebuild import BuiltTree, raw_diff_records

GITLINK = "160000"
#: a safety snapshot older than this when the apply starts is taken again (a caller that held
#: the plan, e.g. to ask the user, is not applying at once)
FRESH_FOR_S = 5.0
#: paths (and their bytes) checked by name in one ``git diff-files``; beyond either the whole
#: index is compared (a command line stays far below the system's limit)
PATHS_BY_NAME = 2000
PATH_BYTES_BY_NAME = 128 * 1024


@dataclass
class TakenSafety:
    """The safety snapshot a preview was read from, for the apply that follows it."""

    ref: object  # WorkspaceRef
    built: BuiltTree
    #: path -> (letter, checkpoint mode, checkpoint blob, safety mode, safety blob), safety -> checkpoint
    changes: dict[str, tuple[str, str, str, str, str]]
    tree: str  # the checkpoint's
    taken_at: float  # time.monotonic()


def tree_changes(target: GitTarget, old_tree: str, new_tree: str) -> dict[str, tuple[str, str, str, str, str]]:
    """path -> (A/D/M/T, new mode, new blob, old mode, old blob) going from old_tree to new_tree."""
    raw = target.run(["diff-tree", "-r", "-z", "--no-renames", old_tree, new_tree])[1]
    return {path: (letter, new_mode, new_id, old_mode, old_id)
            for path, letter, old_mode, new_mode, old_id, new_id in raw_diff_records(raw)}


def status_from_safety(target: GitTarget, taken: TakenSafety, in_progress: bool) -> Status | None:
    """What ``git status`` of the work tree against the checkpoint's index lists, from the safety
    snapshot taken a moment ago, or None where that cannot be told exactly (see the module)."""
    if in_progress or os.name == "nt":
        return None
    built, root = taken.built, target.work_tree
    listed_untracked = set(built.untracked)  # not ignored: the safety scan listed them
    not_stored = {o.path for o in built.oversized} | set(built.excluded) | set(built.secrets)
    tracked: list[StatusEntry] = []
    untracked: list[str] = []
    maybe_ignored: list[str] = []
    for path, (letter, mode, blob, now_mode, now_blob) in taken.changes.items():
        if GITLINK in (mode, now_mode):
            return None
        if letter in ("M", "T"):
            tracked.append(StatusEntry("1", path, ".", letter, mode, now_mode, blob, now_blob))
        elif letter == "D":  # new since the checkpoint
            untracked.append(path)
            if path not in listed_untracked:
                maybe_ignored.append(path)
        elif letter == "A":  # the checkpoint's: gone now, or there but not stored
            if path in not_stored or os.path.lexists(root / path):
                return None
            tracked.append(StatusEntry("1", path, ".", "D", mode, "000000", blob))
        else:
            return None
    for path in not_stored:  # over the size cap, excluded or a secret: recorded, not stored
        if path not in listed_untracked:  # the user's index tracks it: its entry stays as it was
            return None
        if path not in taken.changes:  # (one the checkpoint has returned None above)
            untracked.append(path)
    if maybe_ignored:
        ignored = _ignored(target, maybe_ignored)
        if ignored is None:  # git could not tell: the scan will
            return None
        untracked = [p for p in untracked if p not in ignored]
    untracked += [folder.rstrip("/") + "/" for folder in built.nested_repos]
    status = Status(head=built.head, branch=built.branch)
    status.entries = sorted(tracked, key=lambda e: e.path) + [StatusEntry("?", p) for p in sorted(untracked)]
    return status


def _ignored(target: GitTarget, paths: list[str]) -> set[str] | None:
    """The paths the ignore rules match, tracked or not (``git status`` does not list an
    untracked one); None when git fails."""
    payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    code, out, _ = target.run(["check-ignore", "--no-index", "-z", "--stdin"], stdin=payload, check=False)
    if code not in (0, 1):  # 0: some are ignored, 1: none is
        return None
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}


def changed_since(target: GitTarget, index: Path, paths: list[str]) -> set[str]:
    """Of ``paths`` (all in ``index``, the safety snapshot's), those whose file no longer holds
    what the index records (written, deleted, replaced since the snapshot)."""
    if not paths:
        return set()
    args = ["--literal-pathspecs", "diff-files", "-z", "--name-only"]
    wanted = set(paths)
    if len(paths) <= PATHS_BY_NAME and sum(len(p) for p in paths) <= PATH_BYTES_BY_NAME:
        args += ["--", *paths]
    out = target.run(args, index=index)[1]
    return {p for p in (r.decode("utf-8", "surrogateescape") for r in out.split(b"\0") if r) if p in wanted}
