"""Claude Code: our command hooks in ``settings.json``.

* user scope: ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR/settings.json``
  when that variable is set, as Claude Code itself does);
* project scope: ``<project>/.claude/settings.json``.

Events: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact,
PostCompact, Stop, SessionEnd. Matchers follow Claude Code's rules: the tool
events get ``"matcher": "*"`` (every tool); the other events get no matcher,
which means "every occurrence" (SessionStart: startup, resume, clear,
compact; PreCompact: manual and auto), and UserPromptSubmit / Stop take none.
Everything else in the file (permissions, env, model, the user's own hooks)
is left as it is. Claude Code needs no trust step for hooks in these files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from continuation.install.target import HookTarget, Scope

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    # a failed tool call fires this instead of PostToolUse: without it the call would have no
    # outcome and its input would wait for reconciliation
    "PostToolUseFailure",
    # PreToolUse fires before the permission check: a refused call gets no PostToolUse
    "PermissionDenied",
    "PreCompact",
    "PostCompact",
    "Stop",
    "StopFailure",  # the turn ended on an API error: recorded as aborted, not completed
    "SessionEnd",
)


class ClaudeTarget(HookTarget):
    def config_path(self, scope: Scope, *, project_dir: Path, home: Path, env: Mapping[str, str]) -> Path:
        if scope == "project":
            return Path(project_dir).absolute() / ".claude" / "settings.json"
        config_dir = env.get("CLAUDE_CONFIG_DIR")
        base = Path(config_dir).expanduser() if config_dir else Path(home) / ".claude"
        return base.absolute() / "settings.json"

    def command_rule(self, command: str) -> str:
        # Claude Code's prefix rule: the sealed record's pages print without a prompt
        return f"Bash({command}:*)"

    def install_message(self, path: Path, scope: Scope, *, project_dir: Path) -> str:
        where = "every Claude Code session" if scope == "user" else f"Claude Code sessions in {project_dir}"
        return (
            f"continuation hooks for Claude Code are in {path}; they run in {where} "
            "(start a new session or run /hooks to reload)."
        )


CLAUDE = ClaudeTarget(
    runtime="claude",
    events=CLAUDE_EVENTS,
    tool_events=frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"}),
    # The hot path answers in milliseconds; boundaries may snapshot a worktree.
    timeouts={"PreCompact": 60, "SessionStart": 60},
    default_timeout=30,
    # the work record's pages and spilled contexts are read by the model's Read tool: a folder
    # outside the working directories is refused in the default permission mode otherwise
    read_grant_path=("permissions", "additionalDirectories"),
    command_grant_path=("permissions", "allow"),
)
