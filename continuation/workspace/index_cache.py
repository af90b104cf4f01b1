"""The private index of a thread's last snapshot, kept to compare against that tree again.

Every snapshot writes its tree from a private index whose entries are exactly that tree, with
the stat data of the work tree's files. It is kept per thread (``threads/<thread>.index``, with
``<thread>.json`` naming its tree and the index file's size and mtime), replacing the previous
one. A restore preview compares the work tree with the checkpoint's tree through an index of
that tree: when the kept index is of that very tree (a rewind to the newest checkpoint, or, in
a git repository, to the checkpoint a rewind just restored), it is copied instead of building one with
``git read-tree`` (~30 ms on 20,000 files). The record is written after the index and names the
index by size and mtime, so a process killed between the two leaves a record that does not
match, and the preview builds its index as before. Shadow repositories also seed their next
snapshot from it (``treebuild.seed_index``).
"""

from __future__ import annotations

import os
from pathlib import Path

from continuation.workspace.layout import StateLayout
from continuation.workspace.workspace_target import read_json, write_json_atomic


def remember(layout: StateLayout, thread_key: str, index: Path, tree: str, **extra) -> None:
    """Keep ``index`` (moved, not copied) as the thread's index of ``tree``."""
    destination = layout.thread_index(thread_key)
    try:
        os.chmod(index, 0o600)  # git writes index files 0666 minus the umask
    except OSError:
        pass  # best effort (Windows)
    os.replace(index, destination)
    info = destination.stat()
    write_json_atomic(
        layout.thread_record(thread_key),
        {"tree": tree, "index_size": info.st_size, "index_mtime_ns": info.st_mtime_ns, **extra},
        durable=False,  # a stat cache and a diff base: losing it costs time, not data
    )


def recall(layout: StateLayout, thread_key: str | None, tree: str) -> Path | None:
    """The thread's kept index when it is an index of ``tree`` (and is the file its record
    names), else None."""
    if not thread_key:
        return None
    record = read_json(layout.thread_record(thread_key))
    if not isinstance(record, dict) or record.get("tree") != tree:
        return None
    index = layout.thread_index(thread_key)
    try:
        info = index.stat()
    except OSError:
        return None
    if (info.st_size, info.st_mtime_ns) != (record.get("index_size"), record.get("index_mtime_ns")):
        return None
    return index
