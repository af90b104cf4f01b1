"""The engine's use of the workspace package: snapshots at checkpoints, paths the session wrote.

Policy comes from ``CONTINUATION_WORKSPACE_POLICY`` (``snapshot`` default, ``metadata``,
``none``), ``CONTINUATION_WORKSPACE_EXCLUDE`` (comma-separated patterns) and
``CONTINUATION_WORKSPACE_SIZE_CAP`` (bytes).
"""
from __future__ import annotations

import os
from pathlib import Path

from continuation.host.paths import holds_git
from continuation.session.engine import Thread

SNAPSHOT_LOCK_TIMEOUT_S = 20


def policy():
    from continuation.workspace import WorkspacePolicy

    mode = os.environ.get("CONTINUATION_WORKSPACE_POLICY", "snapshot").strip() or "snapshot"
    exclude = tuple(p.strip() for p in os.environ.get("CONTINUATION_WORKSPACE_EXCLUDE", "").split(",")
                    if p.strip())
    kwargs = {"mode": mode, "exclude": exclude}
    cap = os.environ.get("CONTINUATION_WORKSPACE_SIZE_CAP")
    if cap and cap.isdigit():
        kwargs["size_cap_bytes"] = int(cap)
    return WorkspacePolicy(**kwargs)


#: a folder outside git larger than this gets no snapshot at a boundary (a hook has seconds)
DEFAULT_MAX_FILES = 20_000


def _too_large_outside_git(root: Path) -> str | None:
    """Why a non-git folder is not snapshotted at a boundary, or None. A runtime started in
    $HOME or / would otherwise copy the whole tree into a shadow repository in every PreCompact
    (measured: 45 s for a 310,000-file /tmp, past the hook's timeout)."""
    if holds_git(root):
        return None
    try:
        if root.resolve() in (Path.home().resolve(), Path(root.anchor)):
            return f"{root} is the home or root folder"
    except OSError:
        return None
    raw = os.environ.get("CONTINUATION_WORKSPACE_MAX_FILES", "")
    limit = int(raw) if raw.isdigit() else DEFAULT_MAX_FILES
    count = 0
    for _, dirs, files in os.walk(root):
        count += len(files)
        if count > limit:
            return (f"{root} is not a git repository and holds more than {limit} files "
                    f"(CONTINUATION_WORKSPACE_MAX_FILES)")
        dirs[:] = [d for d in dirs if d != ".git"]
    return None


def snapshot_workspace(root: str, thread_key: str, home, generation: int, *,
                       tree_after_restore=None) -> dict:
    """The snapshot of ``root`` for the checkpoint ``generation`` of ``thread_key``, as a dict.

    Touches no store connection of its caller (a boundary runs this in a worker thread while
    its own thread gathers the capsule): whether the store already holds a checkpoint of a
    claimed generation is asked on a connection of its own, opened only when needed.
    ``tree_after_restore``: the tree a restore just left (``RestoreResult.tree_after``),
    committed without a scan when it fits this policy and folder."""
    from continuation.workspace import take_snapshot

    if policy().mode != "none":
        reason = _too_large_outside_git(Path(root))
        if reason:
            return {"root": root, "kind": "none", "skipped": reason}
    # a hook has a deadline (Codex gives PreCompact its own timeout): wait for another
    # thread's snapshot of this workspace a short while, not the library's default 120 s
    # claim: the ref is created for this checkpoint alone; when another checkpoint of the
    # thread holds the generation, the next free one is taken (ref.generation)
    ref = take_snapshot(Path(root), thread_key, generation, state_home=home,
                        policy=policy(), lock_timeout=SNAPSHOT_LOCK_TIMEOUT_S, claim=True,
                        reclaim=lambda g: not _committed(home, thread_key, g),
                        tree_after_restore=tree_after_restore)
    return ref.to_dict()


def _committed(home, thread_key: str, generation: int) -> bool:
    """The store holds a checkpoint of ``generation`` (or a later one): its claim is not ours.
    Asked on a connection of this thread's own (a SQLite connection belongs to the thread
    that opened it)."""
    from continuation.store import open_store

    store = open_store(str(home), create=False)
    try:
        if int(store.thread(thread_key)["generation"]) >= generation:
            return True
        rows = store.checkpoint_rows(thread_key, upto_generation=generation, newest_first=True,
                                     limit=1)
        return bool(rows) and int(rows[0]["generation"]) == generation
    finally:
        store.close()


def release_snapshot(thread: Thread, workspace: dict | None) -> None:
    """Give back the generation a snapshot claimed when its checkpoint was not committed.
    Best effort: a leftover ref only holds objects until ``gc`` prunes the thread."""
    if not workspace or workspace.get("error") or workspace.get("skipped"):
        return
    try:
        from continuation.workspace import release_snapshot as release

        release(workspace, state_home=thread.engine.home)
    except Exception:
        pass


def _relative(root: str | None, value: str) -> str | None:
    """A call's path relative to the workspace root (relative paths are taken as relative to
    it); None when it points outside."""
    p = Path(value)
    if root and p.is_absolute():
        try:
            p = p.resolve().relative_to(Path(root).resolve())
        except ValueError:
            return None
    return p.as_posix()


def session_written_paths(thread: Thread, after_seq: int = 0) -> list[str]:
    """Files the session's tools wrote (or tried to) after ``after_seq``, relative to the
    workspace root when inside it: drift tells them apart from the user's changes."""
    from continuation.toolcalls.files import written_paths

    root = thread.row["workspace_root"]
    out = {rel for call in thread.tool_calls(after_seq=after_seq)
           for value in written_paths(call.tool, call.args)
           if (rel := _relative(root, value)) is not None}
    return sorted(out)


def session_created_paths(thread: Thread, after_seq: int = 0) -> list[str]:
    """Files a SUCCESSFUL tool call of the session created after ``after_seq`` (see
    ``continuation.toolcalls.files``): the only files ``rewind --files`` may delete. A denied or
    failed Write, an Edit of an existing file, a call without outcome: none of them counts."""
    from continuation.toolcalls.files import created_paths, reported_update, succeeded

    root = thread.row["workspace_root"]
    store = thread.store

    def finish_status(call):
        rows = store.events(thread.key, after=call.finished_seq - 1, upto=call.finished_seq)
        return (rows[0]["data"] or {}).get("status", "ok") if rows else None

    out: set[str] = set()
    for call in thread.tool_calls(after_seq=after_seq):  # only the calls past it are read
        if not succeeded(call, finish_status):
            continue
        if reported_update(call):
            continue
        for value in created_paths(call.tool, call.args):
            rel = _relative(root, value)
            if rel is not None:
                out.add(rel)
    return sorted(out)


def agent_call_windows(thread: Thread, after_seq: int, since: float) -> list[tuple[float, float]]:
    """(start, end) times of the agent's tool calls that ran after event ``after_seq`` (a
    call started before it and still running then counts from ``since``): when the agent
    could have changed a file. A call without an end is open until now."""
    import time

    from statemachine import events as ev

    starts: dict[str, float] = {}
    windows = []
    for event in thread.store.events_of_types(thread.key, (ev.TOOL_STARTED, ev.TOOL_FINISHED),
                                              after=after_seq):
        call = (event["data"] or {}).get("call_id")
        if event["type"] == ev.TOOL_STARTED:
            starts[call] = float(event["ts"])
        else:
            windows.append((starts.pop(call, since), float(event["ts"])))
    now = time.time()
    windows += [(start, now) for start in starts.values()]
    windows += [(since, now) for call in thread.tool_calls(("in_flight", "unknown"))
                if call.started_seq <= after_seq]
    return windows
