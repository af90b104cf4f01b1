"""Did an interrupted file edit happen? Compare the files it targeted with what its input implies.

Verdicts per file, then for the call:
- ``applied``: the file holds the result the call would produce;
- ``not_applied``: the file still holds what the call would have replaced (or is absent for a
  file the call creates);
- ``diverged``: neither: the file changed in another way since (or the edit was partial);
- ``unknown``: the call cannot be checked (unreadable file, unsupported tool or input).

Only reads files; never writes. Text is compared with line endings normalised to ``\\n``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from continuation.toolcalls.patchtext import PatchFormatError, find_patch, parse

APPLIED, NOT_APPLIED, DIVERGED, UNKNOWN = "applied", "not_applied", "diverged", "unknown"
MAX_READ = 32 * 1024 * 1024


@dataclass
class FileCheck:
    path: str
    verdict: str
    detail: str

    def to_dict(self) -> dict:
        return {"path": self.path, "verdict": self.verdict, "detail": self.detail}


@dataclass
class EditCheck:
    verdict: str
    files: list[FileCheck] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "files": [f.to_dict() for f in self.files]}

    def summary(self) -> str:
        if not self.files:
            return self.verdict
        return "; ".join(f"{f.path}: {f.verdict.replace('_', ' ')} ({f.detail})" for f in self.files)


def _norm(text: str) -> str:
    return text.replace("\r\n", "\n")


def _resolve(path: str, base: Path | None) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() or base is None else base / p


def _read(path: Path) -> str | None:
    """The file's text, or None when it does not exist. Raises OSError when unreadable, larger
    than :data:`MAX_READ`, or not a regular file (a FIFO or ``/dev/zero`` never ends)."""
    from continuation.host.userfiles import read_bounded

    try:
        data = read_bounded(path, MAX_READ)
    except FileNotFoundError:
        return None
    return _norm(data.decode("utf-8", "surrogateescape"))


def _combine(files: list[FileCheck]) -> str:
    verdicts = {f.verdict for f in files}
    if not files or UNKNOWN in verdicts:
        return UNKNOWN
    if len(verdicts) == 1:
        return verdicts.pop()
    return DIVERGED  # some parts applied, others not: a partial edit


def replacement_verdict(text: str, old: str, new: str) -> tuple[str, str]:
    """Where ``old`` was to become ``new`` in ``text``."""
    old, new = _norm(old), _norm(new)
    has_old, has_new = old in text, bool(new) and new in text
    if old == new:
        return (APPLIED, "the edit changes nothing") if has_old else (DIVERGED, "text not found")
    if not new:  # a deletion
        return (NOT_APPLIED, "the text to delete is still there") if has_old else (
            APPLIED, "the deleted text is gone")
    if old and old in new:  # the new text contains the old one (an insertion around it)
        if has_new:
            return APPLIED, "the new text is there"
        return (NOT_APPLIED, "only the old text is there") if has_old else (
            DIVERGED, "neither the old nor the new text is there")
    if new in old:  # the old text contains the new one (a removal inside it)
        if has_old:
            return NOT_APPLIED, "the old text is still there"
        return (APPLIED, "the old text is gone and the new one is there") if has_new else (
            DIVERGED, "neither the old nor the new text is there")
    if has_new and not has_old:
        return APPLIED, "the new text is there and the old one is gone"
    if has_old and not has_new:
        return NOT_APPLIED, "the old text is still there, the new one is not"
    if has_old and has_new:
        return DIVERGED, "both the old and the new text are there"
    return DIVERGED, "neither the old nor the new text is there"


def _check_write(path: str, content: str, base) -> FileCheck:
    text = _read(_resolve(path, base))
    if text is None:
        return FileCheck(path, NOT_APPLIED, "the file does not exist")
    if text == _norm(content):
        return FileCheck(path, APPLIED, "the file holds exactly the written content")
    return FileCheck(path, DIVERGED, "the file holds other content (not written, or changed since)")


def _check_edits(path: str, edits: list[tuple[str, str]], base) -> FileCheck:
    text = _read(_resolve(path, base))
    if text is None:
        return FileCheck(path, DIVERGED, "the file does not exist")
    results = [replacement_verdict(text, old, new) for old, new in edits]
    verdicts = {v for v, _ in results}
    if len(verdicts) == 1:
        return FileCheck(path, verdicts.pop(), results[0][1] if len(results) == 1
                         else f"all {len(results)} edits: {results[0][1]}")
    return FileCheck(path, DIVERGED, "some edits are there, others are not: "
                     + ", ".join(v for v, _ in results))


def _check_patch(patch: str, base) -> list[FileCheck]:
    out = []
    for op in parse(patch):
        target = _resolve(op.path, base)
        if op.op == "add":
            content = "\n".join(op.added) + ("\n" if op.added else "")
            out.append(_check_write(op.path, content, base))
        elif op.op == "delete":
            gone = not target.exists()
            out.append(FileCheck(op.path, APPLIED if gone else NOT_APPLIED,
                                 "the file is gone" if gone else "the file still exists"))
        else:
            moved = _resolve(op.move_to, base) if op.move_to else None
            where = op.path
            if moved is not None and moved.exists() and not target.exists():
                where = op.move_to  # the move happened: the edits must be in the new file
            elif moved is not None and target.exists() and not moved.exists():
                where = op.path
            edits = [("\n".join(old), "\n".join(new)) for old, new in op.hunks]
            check = _check_edits(where, edits, base) if edits else FileCheck(
                where, APPLIED if where != op.path else NOT_APPLIED, "a move without edits")
            if op.move_to and where == op.path and check.verdict == APPLIED:
                check = FileCheck(op.path, DIVERGED, "edited but not moved to " + op.move_to)
            out.append(check)
    return out


def verify(tool: str, args: dict | None, base: Path | str | None = None) -> EditCheck:
    """Check a file-edit call against the files (relative paths against ``base``)."""
    args = args if isinstance(args, dict) else {}
    base = Path(base) if base else None
    path = args.get("file_path") or args.get("path") or args.get("notebook_path")
    try:
        patch = find_patch(args)
        if patch is not None:
            files = _check_patch(patch, base)
        elif tool in ("Write", "write_file") and isinstance(path, str) and isinstance(
                args.get("content"), str):
            files = [_check_write(path, args["content"], base)]
        elif tool in ("Edit", "edit_file") and isinstance(path, str) and isinstance(
                args.get("old_string"), str) and isinstance(args.get("new_string"), str):
            files = [_check_edits(path, [(args["old_string"], args["new_string"])], base)]
        elif tool == "MultiEdit" and isinstance(path, str) and isinstance(args.get("edits"), list):
            edits = [(e.get("old_string", ""), e.get("new_string", "")) for e in args["edits"]
                     if isinstance(e, dict)]
            files = [_check_edits(path, edits, base)] if edits else []
        else:
            return EditCheck(UNKNOWN, [FileCheck(str(path or "?"), UNKNOWN,
                                                 f"{tool or 'this tool'}'s input cannot be checked")])
    except PatchFormatError as exc:
        return EditCheck(UNKNOWN, [FileCheck("?", UNKNOWN, f"unreadable patch: {exc}")])
    except OSError as exc:
        return EditCheck(UNKNOWN, [FileCheck(str(path or "?"), UNKNOWN, f"cannot read: {exc}")])
    return EditCheck(_combine(files), files)
