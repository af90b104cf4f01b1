"""Parsing ``git status --porcelain=v2 -z --branch`` output."""

from __future__ import annotations

from dataclasses import dataclass, field

STATUS_ARGS = [
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--no-ahead-behind",
    "--untracked-files=all",
    "--no-renames",
    "--ignore-submodules=dirty",
]


@dataclass
class StatusEntry:
    kind: str  # "1" ordinary, "u" unmerged, "?" untracked
    path: str
    x: str = "."  # HEAD vs index
    y: str = "."  # index vs work tree
    mode_index: str = ""
    mode_worktree: str = ""
    hash_index: str = ""
    hash_worktree: str = ""  # known only when read off a snapshot (``safety_first``)

    @property
    def is_directory(self) -> bool:
        """Untracked entries ending in '/' are nested repositories git does not descend into."""
        return self.kind == "?" and self.path.endswith("/")


@dataclass
class Status:
    head: str | None = None  # None when the branch is unborn
    branch: str | None = None  # None when HEAD is detached
    entries: list[StatusEntry] = field(default_factory=list)


def parse_status(raw: bytes) -> Status:
    status = Status()
    records = raw.split(b"\0")
    i = 0
    while i < len(records):
        record = records[i].decode("utf-8", "surrogateescape")
        i += 1
        if not record:
            continue
        tag = record[0]
        if tag == "#":
            _, key, _, value = _header(record)
            if key == "branch.oid":
                status.head = None if value == "(initial)" else value
            elif key == "branch.head":
                status.branch = None if value == "(detached)" else value
        elif tag == "1":
            parts = record.split(" ", 8)
            xy, m_index, m_work, h_index = parts[1], parts[4], parts[5], parts[7]
            status.entries.append(StatusEntry("1", parts[8], xy[0], xy[1], m_index, m_work, h_index))
        elif tag == "2":  # rename record (only if renames were on): path, then original path
            parts = record.split(" ", 9)
            xy = parts[1]
            status.entries.append(StatusEntry("1", parts[9], xy[0], xy[1], parts[4], parts[5], parts[7]))
            i += 1
        elif tag == "u":
            parts = record.split(" ", 10)
            status.entries.append(StatusEntry("u", parts[10], parts[1][0], parts[1][1], "", parts[6], ""))
        elif tag == "?":
            status.entries.append(StatusEntry("?", record[2:]))
    return status


def _header(record: str) -> tuple[str, str, str, str]:
    parts = record.split(" ", 2)
    key = parts[1] if len(parts) > 1 else ""
    value = parts[2] if len(parts) > 2 else ""
    return "#", key, "", value
