"""Taking checkpoints: ``take_snapshot`` and the locked building blocks restore reuses."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from continuation.host.phase_marks import mark
from continuation.workspace import index_cache
from continuation.workspace.errors import GitFailure, WorkspaceError
from continuation.workspace.gitrun import GitTarget
from continuation.workspace.layout import (
    HOME_TRAILER,
    snapshot_ref_name,
    validate_generation,
    validate_thread_key,
)
from continuation.workspace.lock import DEFAULT_LOCK_TIMEOUT, workspace_lock
from continuation.workspace.model import DIRTY_SAMPLE, Submodule, WorkspaceRef
from continuation.workspace.owner import OWNER_TRAILER, abandoned, current_owner, owner_of_commit
from continuation.workspace.policy import WorkspacePolicy
from continuation.workspace.treebuild import (
    BuiltTree,
    _parse_raw_diff,
    _stage,
    build_tree,
    seed_index,
    tree_dirty_summary,
)
from continuation.workspace.workspace_target import (
    Workspace,
    effective_matcher,
    content_target,
    in_progress_operation,
    read_json,
    resolve_workspace,
    utc_now,
)

if TYPE_CHECKING:
    from continuation.workspace.after_restore import TreeAfterRestore


def take_snapshot(
    root: Path | str,
    thread_key: str,
    generation: int,
    *,
    state_home: Path | str,
    policy: WorkspacePolicy = WorkspacePolicy(),
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    claim: bool = False,
    reclaim: Callable[[int], bool] | None = None,
    tree_after_restore: "TreeAfterRestore | None" = None,
) -> WorkspaceRef:
    """Checkpoint the workspace at ``root`` for ``thread_key`` at context ``generation``.

    git repository, policy ``snapshot``: a commit of the whole work tree (tracked changes, staged
    or not, plus untracked files the user's ignore rules allow) stored as
    ``refs/continuation/<thread_key>/<generation>`` in the user's object store. The user's HEAD,
    branch, index, stash, config, hooks and ``git status`` are unchanged (see ``treebuild``).
    Outside git: the same in a shadow repository under the state home. Policy ``metadata``: a
    manifest (path, size, mode, mtime, sha256); ``none``: the root only. Snapshotting the same
    generation twice moves its ref to the newer commit, unless ``claim``: then the generation is
    allocated with the ref itself (git creates the ref only if it does not exist, and a
    manifest is only written where none is), and when another process holds it the next free
    generation is taken; ``ref.generation`` says which. A checkpoint's ref therefore always
    names the commit the checkpoint records (two racing checkpoints moved one ref). A claim
    names its process (``owner``); ``reclaim(generation)`` (the caller's store has no checkpoint
    of it) lets a claim whose process is gone be taken over, so a checkpoint killed between its
    snapshot and its store commit leaves no hole in the generations.
    """
    validate_thread_key(thread_key)
    validate_generation(generation)
    ws = resolve_workspace(root, state_home)
    if policy.mode == "none":
        return _describe(ws, "none", thread_key, generation, policy)
    with workspace_lock(ws.layout, lock_timeout):
        if policy.mode == "metadata":
            from continuation.workspace.manifest import metadata_checkpoint

            return metadata_checkpoint(ws, thread_key, generation, policy, claim=claim, reclaim=reclaim)
        prebuilt = tree_after_restore if tree_after_restore is not None and tree_after_restore.fits(ws, policy) else None
        return snapshot_built(ws, thread_key, snapshot_ref_name(thread_key, generation), generation, policy,
                              claim=claim, reclaim=reclaim, prebuilt=prebuilt)[0]


def _describe(ws: Workspace, kind: str, thread_key: str, generation: int | None, policy: WorkspacePolicy) -> WorkspaceRef:
    return WorkspaceRef(
        root=str(ws.root),
        kind=kind,
        thread_key=thread_key,
        generation=generation,
        exclude_patterns=list(policy.exclude),
        size_cap_bytes=policy.size_cap_bytes,
        created_at=utc_now(),
    )


def snapshot_locked(
    ws: Workspace,
    thread_key: str,
    ref_name: str,
    generation: int | None,
    policy: WorkspacePolicy,
    *,
    claim: bool = False,
    reclaim: Callable[[int], bool] | None = None,
) -> WorkspaceRef:
    """Build, commit and name one snapshot. The caller holds the workspace lock.

    ``claim``: create the generation's ref only where none exists, else move on to the next
    generation (see ``take_snapshot``)."""
    return snapshot_built(ws, thread_key, ref_name, generation, policy, claim=claim, reclaim=reclaim)[0]


def snapshot_built(
    ws: Workspace,
    thread_key: str,
    ref_name: str,
    generation: int | None,
    policy: WorkspacePolicy,
    *,
    claim: bool = False,
    reclaim: Callable[[int], bool] | None = None,
    prebuilt: "TreeAfterRestore | None" = None,
    keep_index: Path | None = None,
) -> tuple[WorkspaceRef, BuiltTree]:
    """:func:`snapshot_locked`, plus the tree as built (paths tracked and untracked).

    ``prebuilt``: commit this tree instead of scanning the work tree. ``keep_index``: leave
    the private index the tree was written from at this path (the caller, under the same
    lock, derives the next tree from it and deletes it)."""
    target = content_target(ws, create=True)
    assert target is not None
    layout = ws.layout
    if target.kind == "shadow":
        _write_shadow_excludes(target, effective_matcher(ws, policy.exclude).patterns)
    scratch = layout.scratch_index(thread_key)
    previous = read_json(layout.thread_record(thread_key)) if target.kind == "shadow" else None
    previous_tree = previous.get("tree") if isinstance(previous, dict) else None
    try:
        if prebuilt is not None:
            built, submodules = prebuilt.built, list(prebuilt.submodules)
        else:
            built = _scan(target, scratch, ws, thread_key, policy)
            submodules = _submodules(target, scratch) if target.kind == "git" else []
            mark("snapshot: tree written")
        ref = _describe(ws, target.kind, thread_key, generation, policy)
        ref.snapshot_ref, ref.snapshot_tree = ref_name, built.tree
        ref.oversized = built.oversized
        ref.excluded = built.excluded[:DIRTY_SAMPLE]
        ref.excluded_count = len(built.excluded)
        ref.secrets_left_out = [{"path": p, "why": why} for p, why in sorted(built.secrets.items())]
        ref.nested_repos = built.nested_repos
        ref.submodules = submodules
        if target.kind == "git":
            ref.head = built.head
            ref.branch = built.branch
            ref.detached = built.branch is None
            ref.unborn = built.head is None
            ref.in_progress = in_progress_operation(target.git_dir)
        diff_args: list[str] | None
        if target.kind == "git" and built.head:  # against HEAD, the commit's parent
            base, diff_args = "HEAD", ["diff-tree", "-r", "-z", "--no-renames", built.head, built.tree]
        elif target.kind == "git":  # unborn: against nothing, once there is a commit (below)
            base, diff_args = "HEAD", None
        elif isinstance(previous_tree, str):
            base, diff_args = "previous-snapshot", ["diff-tree", "-r", "-z", "--no-renames", previous_tree, built.tree]
        else:
            base, diff_args = "none", []
        from concurrent.futures import ThreadPoolExecutor  # here: after git's scan has started

        with ThreadPoolExecutor(max_workers=1) as pool:
            # the diff reads two trees, not the commit: it runs while the commit and its ref
            # are made (a renamed claim keeps the tree and parent)
            diff = pool.submit(target.run, diff_args, check=False) if diff_args else None
            owner = current_owner() if claim else None
            commit = _commit(target, ref, built.head, layout.home_id, owner)
            _stage("commit-tree")
            if diff_args is None:
                diff = pool.submit(target.run, ["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id",
                                                "--root", commit], check=False)
            _clear_stale_ref_lock(target, ref_name)
            code, _, err = target.run(["update-ref", "--no-deref", ref_name, commit, *_create_only(commit, claim)],
                                      check=not claim)
            if code != 0:  # in this thread: ``reclaim`` may read the caller's SQLite connection
                commit = _claim_taken(target, ref, commit, built.head, layout.home_id, owner, reclaim, err)
            diff_raw = diff.result()[1] if diff is not None else b""
        ref_name = ref.snapshot_ref
        _stage("update-ref")
        if keep_index is not None and scratch.is_file():
            shutil.copy2(scratch, keep_index)
        if scratch.is_file():  # kept: a restore preview of this tree compares through it
            index_cache.remember(layout, thread_key, scratch, built.tree, commit=commit, ref=ref_name,
                                 generation=ref.generation)
    finally:
        scratch.unlink(missing_ok=True)
    mark("snapshot: committed")
    ref.snapshot_commit = commit
    if target.kind == "git" and os.environ.get("CONTINUATION_SNAPSHOT_REMOTE"):
        from continuation.workspace.remote import push_snapshot  # opt-in: see remote

        push_snapshot(target, thread_key, ref_name)
    changes = _parse_raw_diff(diff_raw) if base != "none" else {}
    ref.dirty = tree_dirty_summary(changes, built, base=base)
    return ref, built


def _scan(target: GitTarget, scratch: Path, ws: Workspace, thread_key: str, policy: WorkspacePolicy) -> BuiltTree:
    """The work tree's tree, built in ``scratch`` (seeded, then brought in line by one scan)."""
    from continuation.workspace.secrets import SecretFiles

    layout = ws.layout
    secrets = SecretFiles(layout.state_home, ws.root, scan_cache=layout.secret_scan)
    seeded_from_user = seed_index(target, scratch, layout.thread_index(thread_key))
    # in a folder outside git no file is the user's tracked file: a changed one is checked too
    check_tracked = target.kind != "git"
    try:
        built = build_tree(target, scratch, effective_matcher(ws, policy.exclude),
                           policy.size_cap_bytes, secrets, check_tracked=check_tracked)
    except GitFailure:
        if seeded_from_user:
            raise  # the user's own index is unreadable: git's message says why
        # Our cached index is torn or stale (killed process, disk trouble): start empty.
        scratch.unlink(missing_ok=True)
        layout.thread_index(thread_key).unlink(missing_ok=True)
        built = build_tree(target, scratch, effective_matcher(ws, policy.exclude),
                           policy.size_cap_bytes, secrets, check_tracked=check_tracked)
    secrets.save()
    return built


def _commit(target: GitTarget, ref: WorkspaceRef, head: str | None, home_id: str, owner: str | None = None) -> str:
    args = ["commit-tree", "--no-gpg-sign", ref.snapshot_tree or "", "-F", "-"]
    if head:
        args[2:2] = ["-p", head]
    return target.out(args, stdin=commit_message(ref, home_id, owner).encode("utf-8", "surrogateescape"))


def _create_only(commit: str, claim: bool) -> list[str]:
    """The old value for ``update-ref``: the zero id makes git create the ref only if absent
    (atomically), else it fails and changes nothing."""
    return ["0" * len(commit)] if claim else []


#: generations tried past the requested one before a claim gives up
CLAIM_ATTEMPTS = 64


def _claim_taken(target: GitTarget, ref: WorkspaceRef, commit: str, head: str | None, home_id: str,
                 owner: str | None, reclaim: Callable[[int], bool] | None, err: str) -> str:
    """``ref.snapshot_ref`` could not be created for ``commit``: another checkpoint claimed the
    generation. Take it over when that claim was abandoned (its process is gone and the store
    has no checkpoint of the generation), else re-commit under the next generation and claim
    that. Returns the commit the claimed ref names."""
    assert ref.thread_key is not None and ref.generation is not None
    for _ in range(CLAIM_ATTEMPTS):
        name = ref.snapshot_ref or ""
        code, out, _ = target.run(["rev-parse", "--verify", "--quiet", name], check=False)
        if code != 0:  # the ref is free: the update failed for another reason
            raise GitFailure(["update-ref", name, commit], 1, err)
        existing = out.decode().strip()
        if reclaim is not None and _abandoned(target, existing) and reclaim(ref.generation):
            # compare-and-swap: fails if another checkpoint took it over first
            if target.run(["update-ref", "--no-deref", name, commit, existing], check=False)[0] == 0:
                return commit
        ref.generation += 1
        ref.snapshot_ref = snapshot_ref_name(ref.thread_key, ref.generation)
        _clear_stale_ref_lock(target, ref.snapshot_ref)
        commit = _commit(target, ref, head, home_id, owner)  # the message names ref and generation
        code, _, err = target.run(["update-ref", "--no-deref", ref.snapshot_ref, commit, *_create_only(commit, True)],
                                  check=False)
        if code == 0:
            return commit
    raise WorkspaceError(f"no free snapshot generation for {ref.thread_key} after {CLAIM_ATTEMPTS} tries")


def _abandoned(target: GitTarget, commit: str) -> bool:
    code, out, _ = target.run(["cat-file", "commit", commit], check=False)
    return code == 0 and abandoned(owner_of_commit(out.decode("utf-8", "surrogateescape")))


def commit_message(ref: WorkspaceRef, home_id: str | None = None, owner: str | None = None) -> str:
    """Subject line plus the reference as JSON (minus what only exists after the commit), so a
    snapshot found by its ref alone still knows what it did not store (see ``load_snapshot``);
    a ``Continuation-Home`` trailer names the state home that owns it (retention), a
    ``Continuation-Owner`` trailer the process that claimed its generation (``owner``)."""
    record = ref.to_dict()
    for key in ("snapshot_commit", "dirty"):
        record.pop(key, None)
    lines = [f"{HOME_TRAILER}: {home_id}"] if home_id else []
    if owner:
        lines.append(f"{OWNER_TRAILER}: {owner}")
    trailer = "\n" + "\n".join(lines) + "\n" if lines else ""
    return (f"continuation snapshot {ref.snapshot_ref}\n\n{json.dumps(record, sort_keys=True)}\n"
            f"{trailer}")


def _clear_stale_ref_lock(target: GitTarget, ref_name: str) -> None:
    """A snapshot killed inside update-ref leaves ``<ref>.lock``; under our lock it is stale."""
    assert target.common_dir is not None
    (target.common_dir / (ref_name + ".lock")).unlink(missing_ok=True)


def _write_shadow_excludes(target: GitTarget, patterns) -> None:
    """Policy patterns become the shadow repository's info/exclude so git never even lists them."""
    lines = ["# written by continuation: workspace policy exclude patterns", *patterns]
    exclude_file = target.git_dir / "info" / "exclude"
    exclude_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    try:
        if exclude_file.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    fd = os.open(exclude_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def _submodules(target: GitTarget, index: Path) -> list[Submodule]:
    """Submodules declared in .gitmodules, with the commit the snapshot records for each."""
    if not (target.work_tree / ".gitmodules").is_file():
        return []
    code, out, _ = target.run(
        ["config", "-z", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$"], check=False
    )
    if code != 0:
        return []
    paths = [rec.split("\n", 1)[1] for rec in out.decode("utf-8", "surrogateescape").split("\0") if "\n" in rec]
    if not paths:
        return []
    listing = target.run(["ls-files", "-s", "-z", "--", *paths], index=index)[1]
    commits: dict[str, str] = {}
    for record in listing.decode("utf-8", "surrogateescape").split("\0"):
        if record.startswith("160000 "):
            meta, path = record.split("\t", 1)
            commits[path] = meta.split(" ")[1]
    return [Submodule(p, commits.get(p)) for p in paths]
