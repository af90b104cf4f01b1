"""What kind of tool call is this: read-only, a file edit, or an external effect?

- ``read_only``: safe to run again (reads, listings, searches);
- ``file_edit``: Write / Edit / MultiEdit / NotebookEdit / apply_patch: the result can be checked
  against the files (see :mod:`.verify_edits`);
- ``external``: everything else (a command with effects, a network call, an unknown tool): must
  be checked by the user, never assumed.

The decision comes from the tool name and its arguments only (Claude Code and Codex names).
"""
from __future__ import annotations

from dataclasses import dataclass

from continuation.toolcalls import shellcheck
from continuation.toolcalls.patchtext import find_patch

READ_ONLY, FILE_EDIT, EXTERNAL = "read_only", "file_edit", "external"

#: tools that only read (Claude Code, Codex and common MCP-less names)
READ_ONLY_TOOLS = frozenset({
    "Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoRead",
    "read_file", "list_dir", "list_directory", "grep_files", "search_files", "view_image",
    "glob", "grep", "ls", "web_search",
    # Gemini CLI's
    "read_many_files", "search_file_content", "google_web_search", "web_fetch",
})
#: tools that only update the agent's own plan (no effect outside the conversation)
PLAN_TOOLS = frozenset({"TodoWrite", "update_plan"})
FILE_EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch",
                             "write_file", "edit_file"})
SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "container.exec",
                         "unified_exec", "run_command", "PowerShell"})


@dataclass
class Classification:
    kind: str
    reason: str
    command: str | None = None  # the shell command line, for shell tools

    def to_dict(self) -> dict:
        return {"kind": self.kind, "reason": self.reason, "command": self.command}


def shell_command(args: dict) -> str | None:
    """The command line of a shell tool call (a string, or an argv such as
    ``["bash", "-lc", "..."]``)."""
    value = args.get("command", args.get("cmd", args.get("input")))
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(value) >= 3 and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and \
                value[1] in ("-c", "-lc", "-ic"):
            return value[2]
        import shlex

        return shlex.join(value)
    return None


def classify(tool: str, args: dict | None) -> Classification:
    args = args if isinstance(args, dict) else {}
    tool = tool or ""
    if tool in READ_ONLY_TOOLS:
        return Classification(READ_ONLY, f"{tool} only reads")
    if tool in PLAN_TOOLS:
        return Classification(READ_ONLY, f"{tool} only updates the agent's plan")
    if tool in FILE_EDIT_TOOLS:
        return Classification(FILE_EDIT, f"{tool} edits files: compare them with its input")
    if tool in SHELL_TOOLS or (not tool and "command" in args):
        command = shell_command(args)
        if command is None:
            return Classification(EXTERNAL, "shell call without a readable command line")
        if find_patch(command) is not None:
            return Classification(FILE_EDIT, "apply_patch through the shell: compare the files",
                                   command)
        ok, why = shellcheck.is_read_only(command)
        if ok:
            return Classification(READ_ONLY, f"`{command}` only reads", command)
        return Classification(EXTERNAL, f"`{command}` may have effects: {why}", command)
    if tool.startswith("mcp__"):
        return Classification(EXTERNAL, f"MCP tool {tool}: its effects are unknown")
    return Classification(EXTERNAL, f"tool {tool or '?'}: its effects are unknown")
