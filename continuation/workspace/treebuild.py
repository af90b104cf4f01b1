"""Build a tree of the work tree as it is now, with a private index file.

The private index starts as a byte copy of a seed: the user's ``.git/index`` (its entries are
exactly what the user tracks and its stat data lets git skip re-hashing unchanged files; copied
with its mtime so git's racy-entry check stays correct), else the thread's last snapshot index
(shadow repositories), else nothing. One ``git status`` pass against that copy refreshes stat
data and lists every tracked change and every untracked, not-ignored file; exactly those paths
(minus policy exclusions, oversized files and nested repositories) go through
``git update-index``; ``git write-tree`` then stores the tree. The user's index is only read.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .gitrun import GitTarget
from .model import DIRTY_SAMPLE, DirtyPath, DirtySummary, OversizedFile
from .policy import ExcludeMatcher
from .porcelain import STATUS_ARGS, Status, StatusEntry, parse_status

# Test seam: called with a stage name between steps (tests kill a snapshot there).
_stage_hook = None


def _stage(name: str) -> None:
    if _stage_hook is not None:
        _stage_hook(name)


@dataclass
class BuiltTree:
    tree: str
    status: Status
    oversized: list[OversizedFile] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    nested_repos: list[str] = field(default_factory=list)


def seed_index(target: GitTarget, destination: Path, thread_index: Path | None) -> bool:
    """Copy the best seed to ``destination``; True when it is the user's own index."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if target.kind == "git" and target.user_index.is_file():
        shutil.copy2(target.user_index, destination)
        return True
    candidates = [thread_index] if thread_index is not None else []
    if target.kind == "shadow":
        others = sorted(target.layout.threads_dir.glob("*.index"), key=_mtime, reverse=True)
        candidates += others
    for candidate in candidates:
        if candidate is not None and candidate.is_file():
            shutil.copy2(candidate, destination)
            return False
    if target.kind == "git":
        # No index file at all (unusual): start from HEAD; stat data is empty so git re-hashes.
        target.run(["read-tree", "HEAD"], index=destination, check=False)
    return False


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def read_status(target: GitTarget, index: Path) -> Status:
    return parse_status(target.run(STATUS_ARGS, index=index)[1])


def build_tree(
    target: GitTarget,
    index: Path,
    matcher: ExcludeMatcher,
    size_cap: int,
) -> BuiltTree:
    """Bring ``index`` (already seeded) in line with the work tree and write its tree."""
    _stage("seeded")
    status = read_status(target, index)
    _stage("status")
    built = BuiltTree(tree="", status=status)
    removals: list[str] = []
    additions: list[str] = []
    for entry in status.entries:
        if entry.kind == "1" and entry.y == ".":
            continue
        if entry.is_directory:
            built.nested_repos.append(entry.path.rstrip("/"))
            continue
        if matcher.excluded(entry.path):
            built.excluded.append(entry.path)
            continue
        if entry.kind == "1" and entry.y == "D":
            removals.append(entry.path)
            continue
        try:
            info = os.lstat(target.work_tree / entry.path)
        except FileNotFoundError:
            removals.append(entry.path)
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > size_cap:
            built.oversized.append(OversizedFile(entry.path, info.st_size))
            continue
        additions.append(entry.path)
    if removals or additions:
        payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in removals + additions)
        target.run(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], index=index, stdin=payload)
    _stage("update-index")
    built.tree = target.out(["write-tree"], index=index)
    _stage("write-tree")
    return built


def dirty_summary(target: GitTarget, status: Status, *, seeded_from_user: bool) -> DirtySummary:
    """Counts like ``git status`` (git, seeded from the user's index) or since the seed (shadow)."""
    summary = DirtySummary(base="HEAD" if seeded_from_user else "previous-snapshot")
    for entry in status.entries:
        letter = _classify(entry, relative_to_head=seeded_from_user)
        if letter is None:
            continue
        if letter == "M":
            summary.modified += 1
        elif letter == "A":
            summary.added += 1
        elif letter == "D":
            summary.deleted += 1
        elif letter == "U":
            summary.unmerged += 1
        else:
            summary.untracked += 1
        if len(summary.paths) < DIRTY_SAMPLE:
            summary.paths.append(DirtyPath(letter, entry.path))
        else:
            summary.truncated = True
    return summary


def _classify(entry: StatusEntry, *, relative_to_head: bool) -> str | None:
    if entry.kind == "u":
        return "U"
    if entry.kind == "?":
        return "?" if relative_to_head else "A"
    x = entry.x if relative_to_head else "."
    if "D" in (x, entry.y):
        return "D"
    if x == "A":
        return "A"
    if x in ("M", "T") or entry.y in ("M", "T"):
        return "M"
    return None
