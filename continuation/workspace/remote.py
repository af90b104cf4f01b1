"""Sharing workspace snapshots through a git remote the user names, so that ``restore`` works
on another machine: ``CONTINUATION_SNAPSHOT_REMOTE=origin``.

Never by default. When set, each snapshot taken in a git repository pushes exactly its own ref
(``refs/continuation/<thread>/<generation>``, forced: a generation's ref may move) and nothing
else - no branch, no tag; and a restore or lookup that misses a snapshot fetches
``refs/continuation/<thread>/*`` from that remote before giving up. Pushes run with the
repository's hooks disabled (see ``gitrun``); a failed push never fails the snapshot (the local
ref is there), it is said on stderr. Shadow repositories (folders outside git) are not pushed.
"""
from __future__ import annotations

import os
import sys

from continuation.workspace.errors import InvalidThreadKey
from continuation.workspace.layout import thread_ref_prefix

ENV = "CONTINUATION_SNAPSHOT_REMOTE"


def snapshot_remote() -> str | None:
    return (os.environ.get(ENV) or "").strip() or None


def push_snapshot(target, thread_key: str, ref_name: str) -> bool:
    """Push ``ref_name`` (one of ``thread_key``'s snapshot refs) when a remote is named."""
    remote = snapshot_remote()
    if remote is None or target.kind != "git":
        return False
    if not ref_name.startswith(thread_ref_prefix(thread_key)):
        raise ValueError(f"{ref_name} is not a snapshot ref of {thread_key}")
    held = secret_paths_in(target, ref_name)
    if held:
        sys.stderr.write(f"continuation: not pushing {ref_name} to {remote}: its tree holds "
                         f"{len(held)} secret-looking file(s) ({', '.join(held[:3])}); see "
                         "docs/workspace.md, \"Secret files\"\n")
        return False
    code, _, err = target.run(["push", "--quiet", "--no-verify", remote,
                               f"+{ref_name}:{ref_name}"], check=False)
    if code != 0:
        sys.stderr.write(f"continuation: could not push {ref_name} to {remote}: "
                         f"{(err.strip().splitlines() or ['?'])[-1]}\n")
    return code == 0


def fetch_thread_snapshots(target, thread_key: str | None) -> bool:
    """Fetch ``thread_key``'s snapshot refs from the named remote; False when none is named
    or the fetch failed."""
    remote = snapshot_remote()
    if remote is None or target.kind != "git" or not thread_key:
        return False
    try:
        spec = thread_ref_prefix(thread_key) + "*"
    except InvalidThreadKey:
        return False
    code, _, _ = target.run(["fetch", "--quiet", "--no-tags", remote, f"+{spec}:{spec}"],
                            check=False)
    return code == 0


def secret_paths_in(target, ref_name: str) -> list[str]:
    """Paths of ``ref_name``'s tree a secret pattern names (a snapshot an older version took,
    or a file the user committed under such a name): such a tree is never pushed."""
    from continuation.workspace.secrets import SecretFiles

    code, out, _ = target.run(["ls-tree", "-r", "-z", "--name-only", ref_name], check=False)
    if code != 0:
        return []
    names = SecretFiles(target.layout.state_home, target.work_tree)
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0")
            if p and names.name_matches(p)]
