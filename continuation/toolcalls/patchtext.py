"""Reading Codex ``apply_patch`` text (``*** Begin Patch`` ... ``*** End Patch``).

Only what verification needs: for each file, the operation (add, update, delete, move) and, for
updates, each hunk as (old lines, new lines) built from its context, ``-`` and ``+`` lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field

BEGIN, END = "*** Begin Patch", "*** End Patch"


@dataclass
class PatchOp:
    op: str  # add | update | delete
    path: str
    move_to: str | None = None
    added: list[str] = field(default_factory=list)  # the content of an added file
    hunks: list[tuple[list[str], list[str]]] = field(default_factory=list)


class PatchFormatError(ValueError):
    pass


def find_patch(value) -> str | None:
    """The patch text inside a string, a list or a dict of tool arguments, if any."""
    if isinstance(value, str):
        start = value.find(BEGIN)
        if start < 0:
            return None
        end = value.find(END, start)
        return value[start: end + len(END)] if end >= 0 else value[start:]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find_patch(item)
            if found is not None:
                return found
    return None


def parse(text: str) -> list[PatchOp]:
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != BEGIN:
        raise PatchFormatError("the patch does not start with '*** Begin Patch'")
    ops: list[PatchOp] = []
    current: PatchOp | None = None
    old: list[str] = []
    new: list[str] = []

    def close_hunk():
        nonlocal old, new
        if current is not None and current.op == "update" and (old or new):
            current.hunks.append((old, new))
        old, new = [], []

    for line in lines[1:]:
        if line.strip() == END:
            break
        header = None
        for tag, op in (("*** Add File: ", "add"), ("*** Update File: ", "update"),
                        ("*** Delete File: ", "delete")):
            if line.startswith(tag):
                header = (op, line[len(tag):].strip())
        if header:
            close_hunk()
            current = PatchOp(op=header[0], path=header[1])
            ops.append(current)
            continue
        if current is None:
            if line.strip():
                raise PatchFormatError(f"unexpected line before a file header: {line[:60]!r}")
            continue
        if line.startswith("*** Move to: "):
            current.move_to = line[len("*** Move to: "):].strip()
        elif line.startswith("*** End of File"):
            continue
        elif current.op == "add":
            if line.startswith("+"):
                current.added.append(line[1:])
        elif current.op == "update":
            if line.startswith("@@"):
                close_hunk()
            elif line.startswith("-"):
                old.append(line[1:])
            elif line.startswith("+"):
                new.append(line[1:])
            elif line.startswith(" ") or line == "":
                old.append(line[1:])
                new.append(line[1:])
    close_hunk()
    if not ops:
        raise PatchFormatError("the patch names no file")
    return ops
