"""Restoring a snapshot: preview first (``plan_restore``), then ``apply_restore``.

How "created by the session" is known (the only files a restore deletes): a path qualifies when
it is absent from the checkpoint's tree, is not hidden by the user's ignore rules (git never
lists ignored files here), was not recorded at the checkpoint as oversized, excluded or inside a
nested repository, is not in HEAD's tree (the user committed it), AND the engine names it in
``session_created`` (from its tool-call records: files a successful Write, creating Edit or
apply_patch ``Add File`` of the agent created; see ``continuation.toolcalls.files``). A later snapshot of the thread is no evidence: it records the user's own new
files too. Any other new file (one a shell command of the agent may have made included) is
listed as ``kept`` and left alone: a restore never deletes a file the agent is not known to have
created. Untracked files that existed at the
checkpoint are in its tree, so they are restored, never deleted.

``apply_restore`` never moves HEAD, never changes the branch and never writes the user's index:
contents are written with ``git checkout-index`` from a scratch index. It first takes a safety
snapshot (``RestoreResult.safety``); ``plan_undo(result)`` previews undoing the restore. A plan
applied at once (``plan_restore(..., at_once=True)``) takes the safety snapshot itself and
reads its preview off it: one scan of the work tree instead of two (``safety_first``).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from continuation.host.units import utc_time
from continuation.workspace import index_cache
from continuation.workspace.after_restore import TreeAfterRestore, derive_tree_after
from continuation.workspace.compare import (
    SkipRules,
    open_snapshot_target,
    relative_paths,
    snapshot_tree,
    status_against_snapshot,
)
from continuation.workspace.gitrun import GitTarget
from continuation.workspace.layout import safety_ref_name
from continuation.workspace.lock import DEFAULT_LOCK_TIMEOUT, workspace_lock
from continuation.workspace.model import (
    ModeChange,
    RestorePlan,
    RestoreResult,
    SkippedPath,
    WorkspaceRef,
)
from continuation.workspace.policy import WorkspacePolicy
from continuation.workspace.safety_first import (
    FRESH_FOR_S,
    TakenSafety,
    changed_since,
    status_from_safety,
    tree_changes,
)
from continuation.workspace.snapshot import snapshot_built
from continuation.workspace.workspace_target import in_progress_operation, resolve_workspace


def plan_restore(
    ref: WorkspaceRef,
    *,
    state_home: Path | str,
    session_created: Iterable[str | Path] = (),
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    keep_committed: bool = True,
    while_scanning: Callable[[], None] | None = None,
    at_once: bool = False,
    agent_named: Iterable[str | Path] = (),
    call_windows: Iterable[tuple[float, float]] | None = None,
    keep_unsure: bool = False,
) -> RestorePlan:
    """What restoring ``ref`` would change; changes nothing in the work tree (this is
    ``--dry-run``).

    ``keep_committed``: never delete a path in HEAD's tree (off only for undoing a restore,
    whose re-created files are exactly what the undo removes). ``while_scanning``: called just
    before git scans the work tree (the plan's longest wait), e.g. to start work in a thread
    that would otherwise contend with this one's own Python work until then. ``at_once``: the
    caller applies the plan right away, with nothing to confirm in between: the safety snapshot
    is taken now and the preview read off it, one scan of the work tree instead of two
    (``safety_first``); ``apply_restore`` uses that snapshot while it is fresh.

    ``call_windows`` (start, end times of the agent's tool calls since the checkpoint) and
    ``agent_named`` (the files those calls name): a changed file no agent call can have
    changed is the user's and is kept (:func:`_sort_edits`); None restores every change
    (``rewind --all``, an undo)."""
    ws = resolve_workspace(ref.root, state_home)
    target = open_snapshot_target(ws, ref)
    with workspace_lock(ws.layout, lock_timeout):
        tree = snapshot_tree(target, ref)
        taken = status = None
        if at_once and target.kind == "git":
            taken = _take_safety(ws, target, ref, tree, while_scanning)
            status = status_from_safety(target, taken, in_progress_operation(target.git_dir) is not None)
        elif while_scanning is not None:
            while_scanning()
        if status is None:
            status = status_against_snapshot(target, ref, tree)
        plan = RestorePlan(checkpoint=ref, taken=taken)
        rules = SkipRules(ref, ws)
        new_paths: list[str] = []
        mode_candidates = []
        for entry in status.entries:
            if entry.kind == "1" and entry.y == ".":
                continue
            reason = rules.reason(entry)
            secret = rules.secret(entry) if reason is None else None
            if reason is not None:
                plan.skipped.append(SkippedPath(entry.path.rstrip("/"), reason))
            elif secret is not None:
                plan.secrets.append(SkippedPath(entry.path, secret))
            elif entry.kind == "?":
                new_paths.append(entry.path)
            elif entry.y == "D":
                plan.recreated.append(entry.path)
            elif entry.y == "M" and entry.mode_index != entry.mode_worktree:
                mode_candidates.append(entry)
            else:
                plan.modified.append(entry.path)
        for entry, same_content in zip(mode_candidates, _same_content(target, mode_candidates)):
            plan.mode_changes.append(ModeChange(entry.path, entry.mode_worktree, entry.mode_index))
            if not same_content:
                plan.modified.append(entry.path)
        if call_windows is not None:
            _sort_edits(plan, target, ws.root, set(relative_paths(ws.root, agent_named)),
                        list(call_windows), keep_unsure)
        created = _created_by_session(target, new_paths, relative_paths(ws.root, session_created),
                                      keep_committed)
        for path in new_paths:
            (plan.deleted if path in created else plan.kept).append(path)
        blocked = _under_kept(ws.root, [*plan.modified, *plan.recreated, *(m.path for m in plan.mode_changes)],
                              set(plan.deleted))
        if blocked:
            plan.modified = [p for p in plan.modified if p not in blocked]
            plan.recreated = [p for p in plan.recreated if p not in blocked]
            plan.mode_changes = [m for m in plan.mode_changes if m.path not in blocked]
            plan.skipped += [SkippedPath(p, why) for p, why in sorted(blocked.items())]
        for bucket in (plan.modified, plan.recreated, plan.deleted, plan.kept):
            bucket.sort()
        return plan


#: seconds around a call's recorded start and end that still count as inside it (the hook
#: records the start before the tool runs and the end after; file times have coarse clocks)
WINDOW_SLACK_S = 1.0


def _sort_edits(plan: RestorePlan, target: GitTarget, root: Path, named: set[str],
                windows: list[tuple[float, float]], keep_unsure: bool) -> None:
    """Take the user's own edits out of what is restored. A modified file is the agent's when
    an agent call names it (a Write, an Edit, a patch). Otherwise: staged in the user's index,
    or last changed outside every agent call's time window, no call can have changed it: it
    is kept (staged: when the index was last written outside every call, for an agent's shell
    may stage too). Changed while a call ran and named by none, it may be either: unsure,
    restored unless ``keep_unsure``. A missing file is re-created (a deletion has no time)."""
    def inside(moment: float) -> bool:
        return any(w[0] - WINDOW_SLACK_S <= moment <= w[1] + WINDOW_SLACK_S for w in windows)

    staged = _staged(target, root)
    if staged:  # staged by the user only if the index was last written outside every call
        try:
            staged = set() if inside(os.stat(target.user_index).st_mtime) else staged
        except OSError:
            staged = set()
    mine: list[str] = []
    for path in plan.modified:
        if path in named:
            mine.append(path)
            continue
        if path in staged:
            plan.kept_edits.append(SkippedPath(path, "staged in your index outside every agent "
                                                     "call; no call names it"))
            continue
        try:
            changed = os.lstat(root / path).st_mtime
        except OSError:
            mine.append(path)
            continue
        if not inside(changed):
            plan.kept_edits.append(SkippedPath(
                path, f"changed at {utc_time(changed)}, outside every agent call; no call "
                      "names it"))
            continue
        why = (f"changed at {utc_time(changed)} while a call "
               "of the agent ran, named by none: " + ("kept (--keep-unsure)" if keep_unsure else
                                                       "restored (--keep-unsure keeps it)"))
        plan.unsure.append(SkippedPath(path, why))
        if not keep_unsure:
            mine.append(path)
    kept = {k.path for k in plan.kept_edits} | ({u.path for u in plan.unsure} if keep_unsure
                                                else set())
    plan.modified = mine
    plan.mode_changes = [m for m in plan.mode_changes if m.path not in kept]


def _staged(target: GitTarget, root: Path) -> set[str]:
    """Paths (relative to ``root``) the user's own index stages against HEAD."""
    if target.kind != "git":
        return set()
    code, out, _ = target.run(["diff", "--cached", "--name-only", "-z", "--no-renames"],
                              check=False, optional_locks=False)
    if code != 0:
        return set()
    work_tree = Path(target.work_tree)
    found = set()
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            try:
                found.add((work_tree / name).relative_to(root).as_posix())
            except ValueError:
                pass
    return found


def _restore_policy(ref: WorkspaceRef) -> WorkspacePolicy:
    """The checkpoint's own policy: the safety snapshot stores what the checkpoint could."""
    return WorkspacePolicy(
        exclude=tuple(ref.exclude_patterns),
        size_cap_bytes=ref.size_cap_bytes if ref.size_cap_bytes is not None else WorkspacePolicy().size_cap_bytes,
    )


def _take_safety(ws, target: GitTarget, ref: WorkspaceRef, tree: str,
                 while_scanning: Callable[[], None] | None) -> TakenSafety:
    """The safety snapshot, taken for a plan applied at once (the caller holds the lock)."""
    from continuation.workspace.treebuild import scan_starting

    thread_key = ref.thread_key or "restore"
    token = scan_starting.set(while_scanning)
    try:
        safety, built = snapshot_built(ws, thread_key, safety_ref_name(thread_key), None, _restore_policy(ref))
    finally:
        scan_starting.reset(token)
    return TakenSafety(safety, built, tree_changes(target, safety.snapshot_tree or "", tree), tree,
                       time.monotonic())


def _holds_kept(folder: Path, rel: str, deleting: set[str]) -> bool:
    """The folder holds something the plan does not delete (so it will not be empty)."""
    for here, dirs, files in os.walk(folder):
        base = rel + here[len(str(folder)):].replace(os.sep, "/")
        for name in files + [d for d in dirs if os.path.islink(os.path.join(here, d))]:
            if f"{base}/{name}" not in deleting:
                return True
    return False


def _under_kept(root: Path, paths: list[str], deleting: set[str]) -> dict[str, str]:
    """Writes under a symlink or a file that now stands where the checkpoint had a folder and
    that the plan keeps, or onto a folder with files in it: path -> why it is skipped. Writing them would replace what the preview
    says is kept (git removes a leading symlink or file to make the folder), and a write
    through a symlinked folder would land outside the workspace."""
    kinds: dict[str, str] = {}
    blocked: dict[str, str] = {}
    for path in paths:
        full = root / path
        if full.is_dir() and not full.is_symlink() and _holds_kept(full, path, deleting):
            blocked[path] = "a folder with files is in the way; left as is"
            continue
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            if prefix not in kinds:
                full = root / prefix
                kinds[prefix] = ("symbolic link" if full.is_symlink() else "folder" if full.is_dir()
                                 else "file" if full.exists() else "absent")
            kind = kinds[prefix]
            if kind == "folder":
                continue
            if kind != "absent" and prefix not in deleting:
                blocked[path] = f"{prefix} is a {kind} now and is kept; left as is"
            break
    return blocked


def plan_undo(result: RestoreResult, *, state_home: Path | str) -> RestorePlan:
    """Preview undoing a restore: back to its safety snapshot; files it re-created are removed."""
    return plan_restore(result.safety, state_home=state_home, session_created=result.recreated,
                        keep_committed=False)


def _same_content(target: GitTarget, entries) -> list[bool]:
    if not entries:
        return []
    if all(e.hash_worktree for e in entries):  # read off a snapshot: known without hashing
        return [e.hash_worktree == e.hash_index for e in entries]
    payload = "".join(e.path + "\n" for e in entries).encode("utf-8", "surrogateescape")
    if any("\n" in e.path for e in entries):
        return [False] * len(entries)
    hashes = target.out(["hash-object", "--stdin-paths"], stdin=payload).split("\n")
    return [h == e.hash_index for h, e in zip(hashes, entries)]


def _created_by_session(target: GitTarget, candidates: list[str], named: set[str],
                        keep_committed: bool) -> set[str]:
    """The candidates the engine's tool-call records name as written by the agent, minus any
    path in HEAD's tree (a file the user committed is never deleted, whoever first wrote it).

    A later snapshot of the thread is NOT evidence: it records everything in the work tree, the
    user's own new files included (a file the user wrote between two checkpoints was deleted by
    that rule)."""
    created = [p for p in candidates if p in named and "\n" not in p]
    if not created or not keep_committed:
        return set(created)
    payload = "".join(f"HEAD:{path}\n" for path in created).encode("utf-8", "surrogateescape")
    try:
        lines = target.out(["cat-file", "--batch-check"], stdin=payload).split("\n")
    except Exception:  # unborn HEAD or no git: nothing is committed yet
        return set(created)
    return {path for path, line in zip(created, lines) if line.endswith(" missing")}


def apply_restore(
    plan: RestorePlan,
    *,
    state_home: Path | str,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    derive_tree: bool = False,
) -> RestoreResult:
    """Carry out ``plan``: safety snapshot first, then deletions, then contents and modes.

    Only paths that still differ between the safety snapshot and the checkpoint are touched, so a
    file changed after the plan was made, or one the safety snapshot could not store (oversized),
    is reported in ``skipped`` instead of being overwritten.

    ``derive_tree``: also set ``result.tree_after``, the tree the restore left, derived from the
    safety snapshot without scanning the work tree again (``after_restore``), for a snapshot
    taken right after (a rewind's new checkpoint).
    """
    ref = plan.checkpoint
    ws = resolve_workspace(ref.root, state_home)
    target = open_snapshot_target(ws, ref)
    thread_key = ref.thread_key or "restore"
    with workspace_lock(ws.layout, lock_timeout):
        index = ws.layout.scratch_index("after-restore")
        taken = _still_usable(plan.taken, ws.layout, thread_key, index)
        tree = taken.tree if taken is not None else snapshot_tree(target, ref)
        try:
            return _apply_locked(plan, ws, target, tree, thread_key, _restore_policy(ref),
                                 index if derive_tree or taken is not None else None, taken, derive_tree)
        finally:
            index.unlink(missing_ok=True)


def _still_usable(taken: TakenSafety | None, layout, thread_key: str, index: Path) -> TakenSafety | None:
    """The plan's safety snapshot when it is fresh (see ``safety_first.FRESH_FOR_S``) and its
    index is still the thread's kept one, copied to ``index``; else None (the apply takes it)."""
    if taken is None or time.monotonic() - taken.taken_at > FRESH_FOR_S:
        return None
    kept = index_cache.recall(layout, thread_key, taken.ref.snapshot_tree)
    if kept is None:  # another snapshot of the thread since: take the safety snapshot again
        return None
    try:
        shutil.copy2(kept, index)
    except OSError:
        return None
    return taken


def _apply_locked(plan: RestorePlan, ws, target: GitTarget, tree: str, thread_key: str,
                  policy: WorkspacePolicy, kept_index: Path | None, taken: TakenSafety | None = None,
                  derive_tree: bool = False) -> RestoreResult:
    if taken is not None:
        safety, safety_built, changes = taken.ref, taken.built, taken.changes
    else:
        safety, safety_built = snapshot_built(ws, thread_key, safety_ref_name(thread_key), None, policy,
                                              keep_index=kept_index)
        changes = tree_changes(target, safety.snapshot_tree or "", tree)
    result = RestoreResult(safety=safety)
    not_backed_up = {o.path for o in safety.oversized}
    planned_writes = [*plan.modified, *plan.recreated, *(m.path for m in plan.mode_changes)]
    # checked again: a symlink or file may have taken a folder's place since the plan
    blocked = _under_kept(ws.root, planned_writes, set(plan.deleted))
    writes: list[str] = []
    for path in dict.fromkeys(planned_writes):
        if path in blocked:
            result.skipped.append(SkippedPath(path, blocked[path]))
        elif path in not_backed_up:
            result.skipped.append(SkippedPath(path, "too large for the safety snapshot; left as is"))
        elif changes.get(path, ("",))[0] in ("M", "T", "A"):
            writes.append(path)
    deletions = [p for p in plan.deleted if changes.get(p, ("",))[0] == "D" and p not in not_backed_up]
    for path in plan.deleted:
        if path not in deletions:
            result.skipped.append(SkippedPath(path, "changed after the plan was made; left as is"))
    known = {*planned_writes, *plan.deleted, *plan.kept, *(s.path for s in plan.skipped)}
    for path in sorted(set(changes) - known):
        result.skipped.append(SkippedPath(path, "changed after the plan was made; left as is"))
    moved: set[str] = set()
    if taken is not None and kept_index is not None:  # the snapshot was taken before the plan
        moved = changed_since(target, kept_index, [p for p in writes if changes[p][0] in ("M", "T")] + deletions)
        for path in sorted(moved):
            result.skipped.append(SkippedPath(path, "changed after the safety snapshot; left as is"))
        writes = [p for p in writes if p not in moved]
        deletions = [p for p in deletions if p not in moved]
    _delete_created(target, tree, deletions, result)
    writes = _backed_up(ws.root, changes, writes, result)
    writes = _unblocked(target, safety.snapshot_tree or "", writes, result)
    _write_from_tree(target, changes, writes, result)
    for path in writes:
        (result.recreated if path in plan.recreated else result.restored).append(path)
    # (a path changed since the safety snapshot holds what neither it nor the checkpoint has:
    # the next snapshot scans the work tree instead)
    if derive_tree and kept_index is not None and kept_index.is_file() and not result.errors and not moved:
        # every difference from the checkpoint carried out: the work tree is the checkpoint's tree
        whole = tree if {*result.restored, *result.recreated, *result.deleted} == set(changes) else None
        # kept as that tree's index for a later preview to compare through; a restore applied at
        # once was not previewed, and one that follows re-points an index (read-tree, ~10 ms)
        keep_index = taken is None or whole is None
        built = derive_tree_after(target, kept_index, safety_built, changes, result.restored,
                                  result.recreated, result.deleted, known_tree=whole, update_index=keep_index)
        if target.kind == "git" and keep_index:  # a shadow repository's record is its next diff base
            index_cache.remember(ws.layout, thread_key, kept_index, built.tree)
        result.tree_after = TreeAfterRestore(str(ws.root), target.kind, policy.exclude,
                                             policy.size_cap_bytes, built, list(safety.submodules))
    return result


def _backed_up(root: Path, changes: dict[str, tuple[str, str, str]], paths: list[str],
               result: RestoreResult) -> list[str]:
    """Drop writes over a file the safety snapshot does not hold: one absent from its tree
    (letter ``A`` going to the checkpoint) that is there all the same, e.g. a file untracked at
    the checkpoint that the user's ignore rules hide now (the snapshot stores no ignored file).
    Overwriting it would lose what it holds for good. (A folder in the way is ``_unblocked``'s.)"""
    ok: list[str] = []
    for path in paths:
        full = root / path
        if changes[path][0] == "A" and os.path.lexists(full) and (full.is_symlink() or not full.is_dir()):
            result.skipped.append(SkippedPath(path, "not in the safety snapshot (ignored now?); left as is"))
        else:
            ok.append(path)
    return ok


def _unblocked(target: GitTarget, safety_tree: str, paths: list[str], result: RestoreResult) -> list[str]:
    """Drop writes that would make git remove something the safety snapshot does not hold.

    ``git checkout-index -f`` removes a folder standing where a file goes (with everything in
    it) and a file or symlink standing where a folder goes. An empty folder is removed here; a
    non-empty one, or a blocking file the safety snapshot lacks (ignored, oversized), stays and
    the write is skipped.
    """
    root = target.work_tree
    ok: list[str] = []
    blockers: dict[str, list[str]] = {}
    for path in paths:
        full = root / path
        if full.is_dir() and not full.is_symlink():
            try:
                full.rmdir()
            except OSError:
                result.skipped.append(SkippedPath(path, "a folder with files is in the way; left as is"))
                continue
        parts = path.split("/")
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            candidate = root / prefix
            if candidate.is_symlink() or candidate.is_file():
                blockers.setdefault(prefix, []).append(path)
                break
            if not candidate.is_dir():
                break
        ok.append(path)
    if blockers:
        prefixes = list(blockers)
        payload = "".join(f"{safety_tree}:{p}\n" for p in prefixes).encode("utf-8", "surrogateescape")
        lines = target.out(["cat-file", "--batch-check"], stdin=payload).split("\n")
        for prefix, line in zip(prefixes, lines):
            if line.endswith(" missing"):
                for path in blockers[prefix]:
                    ok.remove(path)
                    result.skipped.append(SkippedPath(path, f"{prefix} is in the way and is not in the safety snapshot"))
    return ok


def _write_from_tree(
    target: GitTarget, changes: dict[str, tuple[str, str, str]], paths: list[str], result: RestoreResult
) -> None:
    """Write ``paths`` as the checkpoint has them, through ``git checkout-index`` (filters, modes,
    symlinks as git does) from a scratch index holding just those entries."""
    if not paths:
        return
    scratch = target.layout.scratch_index("restore")
    try:
        entries = b"".join(
            f"{changes[p][1]} {changes[p][2]}\t".encode() + p.encode("utf-8", "surrogateescape") + b"\0" for p in paths
        )
        target.run(["update-index", "-z", "--index-info"], index=scratch, stdin=entries)
        payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        code, _, err = target.run(
            ["checkout-index", "-f", "-q", "-z", "--stdin"], index=scratch, stdin=payload, check=False
        )
        if code != 0:
            result.errors.append(f"git checkout-index: {err.strip()}")
    finally:
        scratch.unlink(missing_ok=True)


def _delete_created(target: GitTarget, tree: str, paths: list[str], result: RestoreResult) -> None:
    root = target.work_tree
    parents: set[str] = set()
    for path in paths:
        full = root / path
        try:
            if full.is_dir() and not full.is_symlink():
                result.skipped.append(SkippedPath(path, "is a folder now; left as is"))
                continue
            try:
                full.unlink()
            except PermissionError:  # read-only files on Windows
                os.chmod(full, stat.S_IWRITE)
                full.unlink()
            result.deleted.append(path)
        except FileNotFoundError:
            result.deleted.append(path)
        except OSError as exc:
            result.errors.append(f"cannot delete {path}: {exc}")
            continue
        parent = Path(path).parent
        while parent != Path("."):
            parents.add(parent.as_posix())
            parent = parent.parent
    _remove_empty_new_folders(target, tree, parents)


def _remove_empty_new_folders(target: GitTarget, tree: str, folders: set[str]) -> None:
    """Folders left empty by deletions go too, unless the checkpoint had them."""
    if not folders:
        return
    ordered = sorted(folders, key=lambda f: f.count("/"), reverse=True)
    payload = "".join(f"{tree}:{f}\n" for f in ordered).encode("utf-8", "surrogateescape")
    lines = target.out(["cat-file", "--batch-check"], stdin=payload).split("\n")
    for folder, line in zip(ordered, lines):
        if line.endswith(" missing") or " tree " not in line:  # absent, or a file at the checkpoint
            try:
                (target.work_tree / folder).rmdir()
            except OSError:
                pass  # not empty: something else lives there
