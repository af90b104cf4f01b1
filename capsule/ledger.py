"""The work ledger: the finished tool calls of each turn, grouped so a long turn fits.

A model that continues an input after a boundary must know what that input's turns already did,
or it redoes it. Listing every call does not fit (1,000 calls of ~95 characters are ~100 KB), so
the finished calls of one turn are grouped:

- identical calls (same tool, same arguments, same status and exit code) are one group with a
  count: ``Bash {"command": "echo line >> notes.txt"} ran 46x, status ok, exit 0``;
- calls whose arguments differ only in numbers that vary together (``step 1 .. batch 1``,
  ``step 2 .. batch 2``) are one group whose arguments carry ``{N}`` where the numbers were, and
  ``values`` lists the numbers in call order, consecutive runs written ``a..b``
  (``1..36,40``). A call's arguments are the template with ``{N}`` replaced by one value.

Groups keep the order of their first call. Only numbers that vary together are templated
(one variable per group); anything else is grouped only when identical. A ``values`` list longer
than :data:`MAX_VALUES_CHARS` is split over several groups. Arguments that already contain
``{N}`` are never templated.

Files changed are the files a call's arguments name as written: the path argument of a writing
tool (Write, Edit, MultiEdit, NotebookEdit, apply_patch ...), the ``*** Add/Update/Delete File:``
lines of a patch, and the targets of ``>``, ``>>`` and ``tee`` in a shell command. It is what the
calls say, not a diff of the workspace (the snapshot holds that).
"""
from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER = "{N}"
MAX_VALUES_CHARS = 400
MAX_FILES = 12

_NUMBER = re.compile(r"\d+")
_WRITING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch", "write_file",
                            "edit_file", "create_file", "str_replace_based_edit_tool"})
_PATH_ARGS = ("file_path", "path", "notebook_path")
_SHELL_ARGS = ("command", "cmd")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
_WORD = r"('[^']*'|\"[^\"]*\"|[^\s;&|<>]+)"
_REDIRECT = re.compile(r"(?:^|[^0-9&<>])>{1,2}\s*" + _WORD)
_TEE = re.compile(r"\btee\s+(?:-a\s+|--append\s+)?" + _WORD)


def args_text(args: Any) -> str:
    """The canonical text of a call's arguments (sorted keys, non-ASCII kept)."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _shell_text(args: dict) -> str:
    for name in _SHELL_ARGS:
        value = args.get(name)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)  # Codex exec: ["bash", "-lc", "..."]
    return ""


def _unquote(word: str) -> str:
    try:
        parts = shlex.split(word)
    except ValueError:
        return word.strip("'\"")
    return parts[0] if len(parts) == 1 else word


def files_written(tool: str, args: Any) -> list[str]:
    """The files ``args`` name as written by ``tool`` (see the module docstring)."""
    if not isinstance(args, dict):
        return []
    out: list[str] = []
    if tool in _WRITING_TOOLS:
        for name in _PATH_ARGS:
            value = args.get(name)
            if isinstance(value, str) and value:
                out.append(value)
    for value in args.values():
        if isinstance(value, str) and "*** " in value:
            out += [m.group(1).strip() for m in _PATCH_FILE.finditer(value)]
    shell = _shell_text(args)
    if shell:
        for m in _REDIRECT.finditer(shell):
            target = _unquote(m.group(1))
            if target and not target.startswith("/dev/"):
                out.append(target)
        out += [_unquote(m.group(1)) for m in _TEE.finditer(shell)]
    seen: dict[str, None] = {}
    for path in out:
        seen.setdefault(path, None)
    return list(seen)


def compress_values(values: Sequence[str]) -> str:
    """Numbers in call order, consecutive ascending runs as ``a..b`` (``1..36,40,38``)."""
    parts: list[str] = []
    k = 0
    while k < len(values):
        j = k
        if _plain_int(values[k]):
            while j + 1 < len(values) and _plain_int(values[j + 1]) and int(values[j + 1]) == int(values[j]) + 1:
                j += 1
        parts.append(values[k] if j == k else f"{values[k]}..{values[j]}")
        k = j + 1
    return ",".join(parts)


def expand_values(text: str) -> list[str]:
    """The inverse of :func:`compress_values`."""
    out: list[str] = []
    for part in text.split(",") if text else []:
        a, sep, b = part.partition("..")
        if sep and _plain_int(a) and _plain_int(b) and int(b) >= int(a):
            out += [str(v) for v in range(int(a), int(b) + 1)]
        else:
            out.append(part)
    return out


def _plain_int(text: str) -> bool:
    return text.isdigit() and (text == "0" or not text.startswith("0"))


@dataclass
class CallGroup:
    """Finished calls of one turn that are the same call, or the same call but for one number."""

    tool: str
    status: str
    exit_code: int | None
    args: str  # canonical arguments; with PLACEHOLDER where ``values`` vary
    values: list[str] | None = None  # None: identical calls
    count: int = 0
    original: list[str] = field(default_factory=list)  # each call's own argument text
    files: list[str] = field(default_factory=list)
    pointers: list[str] = field(default_factory=list)

    @property
    def values_text(self) -> str | None:
        return None if self.values is None else compress_values(self.values)


@dataclass
class _Family:
    tool: str
    status: str
    exit_code: int | None
    frame: tuple[str, ...]  # the text around the numbers
    members: list[tuple[tuple[str, ...], str, Any, str]] = field(default_factory=list)  # numbers, text, args, pointer


def _varying_together(family: _Family) -> list[int] | None:
    """Positions whose numbers vary, when in every call they carry one same value; else None."""
    first = family.members[0][0]
    varying = [p for p in range(len(first)) if any(m[0][p] != first[p] for m in family.members)]
    if not varying:
        return []
    for numbers, *_ in family.members:
        if len({numbers[p] for p in varying}) != 1:
            return None
    return varying


def group_calls(calls: Iterable[tuple[str, str, int | None, Any, str]],
                text_of=args_text, template: bool = True) -> list[CallGroup]:
    """Group ``(tool, status, exit_code, args, pointer)`` finished calls of one turn, in order;
    ``text_of(args)``: the text compared and templated (default: the canonical arguments);
    ``template`` False: only identical calls are grouped (every text stays verbatim)."""
    families: dict[tuple, _Family] = {}
    order: list[tuple] = []
    for tool, status, exit_code, args, pointer in calls:
        text = text_of(args)
        pieces = _NUMBER.split(text)
        numbers = tuple(_NUMBER.findall(text))
        templatable = template and PLACEHOLDER not in text
        key = (tool, status, exit_code, tuple(pieces) if templatable else ("=", text))
        if key not in families:
            families[key] = _Family(tool, status, exit_code, tuple(pieces))
            order.append(key)
        families[key].members.append((numbers if templatable else (), text, args, pointer))
    groups: list[tuple[int, CallGroup]] = []
    for rank, key in enumerate(order):
        fam = families[key]
        varying = _varying_together(fam)
        if varying:
            template = _template(fam.frame, fam.members[0][0], set(varying))
            values = [m[0][varying[0]] for m in fam.members]
            for chunk in _chunks(fam.members, values):
                groups.append((rank, _group(fam, template, [values[i] for i in chunk],
                                            [fam.members[i] for i in chunk])))
        else:  # identical calls; or numbers that do not vary together: one group per text
            by_text: dict[str, list] = {}
            for m in fam.members:
                by_text.setdefault(m[1], []).append(m)
            for text, members in by_text.items():
                groups.append((rank, _group(fam, text, None, members)))
    return [g for _, g in groups]


def _template(frame: tuple[str, ...], numbers: tuple[str, ...], varying: set[int]) -> str:
    out = [frame[0]]
    for p, number in enumerate(numbers):
        out.append(PLACEHOLDER if p in varying else number)
        out.append(frame[p + 1])
    return "".join(out)


def _chunks(members: list, values: list[str]) -> list[list[int]]:
    """Member indexes split so that no group's values text exceeds MAX_VALUES_CHARS."""
    chunks: list[list[int]] = [[]]
    for i in range(len(members)):
        trial = chunks[-1] + [i]
        if chunks[-1] and len(compress_values([values[j] for j in trial])) > MAX_VALUES_CHARS:
            chunks.append([i])
        else:
            chunks[-1] = trial
    return chunks


def _group(fam: _Family, args: str, values: list[str] | None, members: list) -> CallGroup:
    files: dict[str, None] = {}
    for m in members:
        for path in files_written(fam.tool, m[2]):
            files.setdefault(path, None)
    return CallGroup(tool=fam.tool, status=fam.status, exit_code=fam.exit_code, args=args, values=values,
                     count=len(members), original=[m[1] for m in members], files=list(files)[:MAX_FILES],
                     pointers=[m[3] for m in members])


def expand_group(args: str, values: str | None) -> list[str]:
    """Every call's argument text of a rendered group (``values`` None: the one text)."""
    if values is None:
        return [args]
    return [args.replace(PLACEHOLDER, v) for v in expand_values(values)]
