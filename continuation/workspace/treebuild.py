"""Build a tree of the work tree as it is now, with a private index file.

The private index starts as a byte copy of a seed: the user's ``.git/index`` (its entries are
exactly what the user tracks and its stat data lets git skip re-hashing unchanged files; copied
with its mtime so git's racy-entry check stays correct), else the thread's last snapshot index
(shadow repositories), else nothing. ``git status`` against that copy lists every tracked
change in the work tree and every untracked, not-ignored file (the user's .gitignore,
info/exclude and core.excludesFile decide); exactly those paths (minus policy
exclusions, oversized files and nested repositories) go through ``git update-index``, and
``git write-tree`` stores the tree. The user's index is only ever read.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from continuation.host import progress
from continuation.host.paths import ensure_private_dir
from continuation.host.phase_marks import mark
from continuation.workspace.gitrun import GitTarget
from continuation.workspace.headref import read_head
from continuation.workspace.workspace_target import in_progress_operation
from continuation.workspace.model import DirtySummary, OversizedFile
from continuation.workspace.policy import ExcludeMatcher
from continuation.workspace.porcelain import STATUS_ARGS, Status, parse_status

# Test seam: called with a stage name between steps (tests kill a snapshot there).
_stage_hook = None

#: Called (no arguments) in the thread whose scan of the work tree is about to start. A boundary
#: gathers its capsule's input only then: its snapshot thread's imports and lock (~30 ms of
#: Python) would otherwise share the interpreter with the gathering, and git's scan, the
#: snapshot's longest step, start that much later. A context variable: per thread.
scan_starting: ContextVar[Callable[[], None] | None] = ContextVar("scan_starting", default=None)


def _stage(name: str) -> None:
    if name == "update-index":  # fault injection: kill a checkpoint in the middle of a snapshot
        from continuation.host import faults

        faults.point("snapshot.mid")
    if _stage_hook is not None:
        _stage_hook(name)


@dataclass
class BuiltTree:
    tree: str = ""
    head: str | None = None  # HEAD commit (git), None when unborn or in a shadow repository
    branch: str | None = None  # short name, None when detached
    tracked: dict[str, str] = field(default_factory=dict)  # path -> M/T/D/U against the seed index
    untracked: list[str] = field(default_factory=list)  # not ignored, not in the seed index
    oversized: list[OversizedFile] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    nested_repos: list[str] = field(default_factory=list)
    #: untracked secret-looking files left out (``workspace.secrets``): path -> why
    secrets: dict[str, str] = field(default_factory=dict)


def parallel(*calls):
    """Run independent git commands at once (each is its own process)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]


def seed_index(target: GitTarget, destination: Path, thread_index: Path | None) -> bool:
    """Copy the best seed to ``destination``; True when it is the user's own index."""
    ensure_private_dir(destination.parent)
    if target.kind == "git" and target.user_index.is_file():
        shutil.copy2(target.user_index, destination)
        return True
    if target.kind == "shadow":  # the thread's own last index, else the newest of any thread
        others = sorted(target.layout.threads_dir.glob("*.index"), key=_mtime, reverse=True)
        for candidate in [thread_index, *others]:
            if candidate is not None and candidate.is_file():
                shutil.copy2(candidate, destination)
                return False
    else:
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
    secrets=None,
    *,
    check_tracked: bool = False,
) -> BuiltTree:
    """Bring ``index`` (already seeded) in line with the work tree and write its tree.

    One ``git status`` pass (``porcelain.STATUS_ARGS``, as a restore compares) lists tracked
    changes against the index (the work-tree column: judged by stat data, only stat-dirty
    entries of equal size re-hashed) and untracked, not-ignored files (nested repositories
    show as ``dir/``); only the paths it names are hashed by update-index. ``status`` rather
    than ``ls-files -m -d -o``, which tells the same: status checks the entries' stat data on
    several threads (git's preloaded index), ls-files one by one (20,000 files: 24 against 36
    ms). One process rather than several: on a loaded machine each process costs a
    scheduling delay.
    """
    _stage("seeded")
    mark("snapshot: git scan starting")
    progress.step("scanning the work tree")
    starting = scan_starting.get()
    if starting is not None:
        starting()
    calls = {"scan": lambda: target.run(STATUS_ARGS, index=index)[1]}
    head = read_head(target.git_dir, target.common_dir or target.git_dir) if target.kind == "git" else None
    if target.kind == "git" and head is None:  # not the plain files backend: ask git
        calls["head"] = lambda: target.run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], index=index, check=False)[1]
        calls["branch"] = lambda: target.run(["symbolic-ref", "-q", "HEAD"], index=index, check=False)[1]
    if target.kind == "git" and in_progress_operation(target.git_dir) is not None:
        calls["unmerged"] = lambda: target.run(["ls-files", "-z", "-u"], index=index)[1]
    results = dict(zip(calls, parallel(*calls.values()) if len(calls) > 1 else [calls["scan"]()]))
    built = BuiltTree()
    for entry in parse_status(results["scan"]).entries:
        if entry.kind == "?":
            if entry.is_directory:
                built.nested_repos.append(entry.path.rstrip("/"))
            else:
                built.untracked.append(entry.path)
        elif entry.y == "D":
            built.tracked[entry.path] = "D"
        elif entry.y != "." or entry.kind == "u":  # work tree differs from the index
            built.tracked.setdefault(entry.path, "M")
    if head is not None:
        built.head, built.branch = head
    elif target.kind == "git":
        built.head = results["head"].decode().strip() or None
        ref = results["branch"].decode("utf-8", "surrogateescape").strip()
        built.branch = (ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ref) or None
    for record in results.get("unmerged", b"").split(b"\0"):  # '<mode> <id> <stage>\t<path>'
        if b"\t" in record:
            built.tracked[record.split(b"\t", 1)[1].decode("utf-8", "surrogateescape")] = "U"
    _stage("status")
    removals: list[str] = []
    additions: list[str] = []
    # A tracked folder replaced by a symlink: its entries are not there any more (the symlink,
    # listed as untracked, is); git refuses to even --remove a path "beyond a symbolic link".
    behind_links = beyond_symlink(target.work_tree, list(built.tracked))
    for path in behind_links:
        built.tracked[path] = "D"
    forced_out = list(behind_links)
    for path, letter in [*built.tracked.items(), *((p, "?") for p in built.untracked)]:
        if matcher.excluded(path):
            built.excluded.append(path)
            continue
        # a secret-looking file (``workspace.secrets``) the user's repository does not track;
        # in a shadow repository (``check_tracked``) the index is ours: a changed file too
        if secrets is not None and (letter == "?" or (check_tracked and letter == "M")):
            why = secrets.why(path)
            if why is not None:
                built.secrets[path] = why
                if letter == "M":  # out of our index, never re-hashed into the object store
                    forced_out.append(path)
                continue
        if path in behind_links:
            continue
        if letter == "D":
            removals.append(path)
            continue
        try:
            info = os.lstat(target.work_tree / path)
        except FileNotFoundError:
            removals.append(path)
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > size_cap:
            built.oversized.append(OversizedFile(path, info.st_size))
            continue
        additions.append(path)
    if forced_out:
        payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in forced_out)
        target.run(["update-index", "--force-remove", "-z", "--stdin"], index=index, stdin=payload)
    if removals or additions:
        progress.step(f"storing {len(additions):,} new and changed files in the snapshot"
                      + (f", {len(removals):,} removed" if removals else ""))
        payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in removals + additions)
        target.run(["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], index=index, stdin=payload)
    _stage("update-index")
    progress.step("writing the snapshot's tree")
    # Every blob named by the index is in the object store (the user's index, or just written),
    # so git's per-entry existence check is skipped: it dominates write-tree on large trees.
    built.tree = target.out(["write-tree", "--missing-ok"], index=index)
    _stage("write-tree")
    return built


def beyond_symlink(root: Path, paths) -> list[str]:
    """The paths (``a/b/c``) one of whose leading folders is a symbolic link in the work tree
    (what git calls "beyond a symbolic link"); one lstat per distinct folder."""
    seen: dict[str, bool] = {}

    def linked(folder: str) -> bool:
        if folder not in seen:
            parent = folder.rpartition("/")[0]
            seen[folder] = (bool(parent) and linked(parent)) or os.path.islink(root / folder)
        return seen[folder]

    return [p for p in paths if "/" in p and linked(p.rpartition("/")[0])]


def raw_diff_records(raw: bytes) -> list[tuple[str, str, str, str, str, str]]:
    """``--raw -z`` records (':<old mode> <new mode> <old id> <new id> <letter>' then the path)
    as (path, letter, old mode, new mode, old id, new id)."""
    fields = raw.decode("utf-8", "surrogateescape").split("\0")
    records = []
    for meta, path in zip(fields[0::2], fields[1::2]):
        if meta.startswith(":"):
            old_mode, new_mode, old_id, new_id, letter = meta[1:].split(" ")
            records.append((path, letter[:1], old_mode, new_mode, old_id, new_id))
    return records


def _parse_raw_diff(raw: bytes) -> dict[str, str]:
    """path -> letter of ``--raw -z`` records; unmerged ('U') wins."""
    changes: dict[str, str] = {}
    for path, letter, *_ in raw_diff_records(raw):
        if changes.get(path) != "U":
            changes[path] = letter
    return changes


def tree_dirty_summary(
    changes: dict[str, str], built: BuiltTree, *, base: str
) -> DirtySummary:
    """Summarise ``changes`` (base tree -> snapshot tree); untracked and unmerged told apart.

    With base ``HEAD`` the counts match ``git status``: an added path the user's index does not
    track is untracked; paths recorded but not stored (oversized, excluded) are counted too.
    """
    summary = DirtySummary(base=base)
    untracked = set(built.untracked)
    letters: dict[str, str] = {}
    for path, letter in changes.items():
        if letter == "A":
            letters[path] = "?" if base == "HEAD" and path in untracked else "A"
        elif letter == "D":
            letters[path] = "D"
        else:
            letters[path] = "M"
    not_stored = {o.path for o in built.oversized} | set(built.excluded)
    for path in not_stored:
        letters.setdefault(path, "?" if path in untracked else "D" if built.tracked.get(path) == "D" else "M")
    for path, letter in built.tracked.items():
        if letter == "U":
            letters[path] = "U"
    for path in sorted(letters):
        summary.count(letters[path], path)
    return summary


