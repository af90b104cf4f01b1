"""Which files an agent's tool call wrote, and which it created, from its name and arguments.

Written (for drift: "changed by the session"): the path arguments of Write / Edit / MultiEdit /
NotebookEdit (Claude Code) and of generic ``write_file`` / ``edit_file`` tools, and every file
an ``apply_patch`` patch names (Codex; also when it goes through a shell call).

Created (the only files ``rewind --files`` may delete), counted only when the call SUCCEEDED
(outcome ``ok``, or reconciled as ``applied``; a call rolled back by a conversation rewind
counts by the outcome it had): a Claude Code ``Write`` (unless its response says it updated
an existing file), an ``Edit`` / ``MultiEdit`` whose (first) ``old_string`` is empty (Claude
Code's way to create a file with them), a ``write_file``, and a patch's ``*** Add File`` and
``*** Move to`` targets. A denied, failed or unanswered call created nothing we know of; an
Edit of an existing file never creates one; a shell command's files are unknown. The restore
itself further requires the file to be absent at the checkpoint and not committed in HEAD.
"""
from __future__ import annotations

import re

from continuation.toolcalls.classify import SHELL_TOOLS
from continuation.toolcalls.patchtext import PatchFormatError, find_patch, parse

#: tool argument names that name a file the tool writes
PATH_ARGS = ("file_path", "path", "notebook_path")
WRITING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch",
                           "write_file", "edit_file"})
#: tools that create the file they name when it is absent
_CREATING_TOOLS = frozenset({"Write", "write_file"})
#: Claude Code's Write response starts with its kind: "create" or "update"
_UPDATED = re.compile(r'^\s*\{\s*"type"\s*:\s*"update"')


def _patch_ops(tool: str, args: dict):
    if tool != "apply_patch" and tool not in SHELL_TOOLS:
        return []
    text = find_patch(args)
    if text is None:
        return []
    try:
        return parse(text)
    except PatchFormatError:
        return []


def _path_args(args: dict) -> list[str]:
    return [v for name in PATH_ARGS if isinstance(v := args.get(name), str) and v]


def written_paths(tool: str, args) -> list[str]:
    """Files the call writes if it runs (paths as the call names them)."""
    args = args if isinstance(args, dict) else {}
    out = _path_args(args) if tool in WRITING_TOOLS else []
    for op in _patch_ops(tool, args):
        out.append(op.path)
        if op.move_to:
            out.append(op.move_to)
    return out


def _creates_by_edit(tool: str, args: dict) -> bool:
    if tool == "Edit":
        return args.get("old_string") == ""
    if tool == "MultiEdit":
        edits = args.get("edits")
        return isinstance(edits, list) and bool(edits) and isinstance(edits[0], dict) \
            and edits[0].get("old_string") == ""
    return False


def created_paths(tool: str, args) -> list[str]:
    """Files the call creates when it succeeds (paths as the call names them)."""
    args = args if isinstance(args, dict) else {}
    out = _path_args(args) if tool in _CREATING_TOOLS or _creates_by_edit(tool, args) else []
    for op in _patch_ops(tool, args):
        if op.op == "add":
            out.append(op.path)
        if op.move_to:
            out.append(op.move_to)
    return out


def succeeded(call, finish_status=None) -> bool:
    """Whether the call is known to have taken effect. ``finish_status``: for a call a rewind
    rolled back, a callable giving the status its finish event recorded (or None)."""
    if call.status == "ok":
        return True
    if call.status == "reconciled":
        return call.decision == "applied"
    if call.status == "rolled_back" and call.finished_seq is not None:
        status = (call.outcome or {}).get("status")
        if status is None and finish_status is not None:
            status = finish_status(call)
        return status == "ok"
    return False


def reported_update(call) -> bool:
    """The runtime answered that the call updated a file that already existed."""
    output = (call.outcome or {}).get("output")
    return isinstance(output, str) and bool(_UPDATED.match(output))
