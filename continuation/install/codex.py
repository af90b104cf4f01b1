"""Codex CLI: our command hooks in ``hooks.json``, and Codex's hook trust.

Where
    * user scope: ``$CODEX_HOME/hooks.json`` (``~/.codex/hooks.json`` by default);
    * project scope: ``<project>/.codex/hooks.json``. Codex loads a project's
      ``.codex/`` layer only in a trusted project: trust the folder when Codex
      asks, run ``codex exec --trust`` once in it, or add
      ``[projects."<dir>"] trust_level = "trusted"`` to ``$CODEX_HOME/config.toml``.

Format (Codex CLI 0.171.0): ``{"hooks": {"<Event>": [{"matcher"?, "hooks":
[{"type": "command", "command", "timeout"}]}]}}``; the root may also hold a
``description``. Events: SessionStart, UserPromptSubmit, PreToolUse,
PostToolUse, PreCompact, PostCompact, Stop, SessionEnd (0.171.0 fires
SessionEnd too, with a budget of 1 to 3 seconds) and Interrupt (0.171.0 fires it, with
the ``turn_id``, when the user interrupts a running turn, e.g. Ctrl-C in
``codex exec``: no PostToolUse and no Stop follow for that turn). Only PreToolUse, PostToolUse,
PermissionRequest and SessionStart look at a matcher: the tool events get
``"*"``; SessionStart gets none so it fires for startup, resume, clear and
compact.

Trust (why installed hooks may do nothing)
    Codex 0.171.0 runs a non-managed hook only after the user trusted that
    exact definition; an untrusted or modified hook is skipped WITHOUT any
    message. Trust lives in ``$CODEX_HOME/config.toml`` as
    ``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"]
    trusted_hash = "sha256:..."``, where the hash covers the event, matcher
    and normalised handler (command, timeout, async). To trust our hooks:
    start ``codex`` interactively, type ``/hooks``, review the continuation
    hooks and trust them (again after any change of the command line, e.g.
    a new install path). For automation that vets its hooks itself,
    ``codex exec --dangerously-bypass-hook-trust`` runs enabled hooks
    without trust for that invocation. We never write trust for the user.

    :func:`codex_hook_hash` reproduces Codex's hash (checked against
    ``codex app-server`` ``hooks/list`` of the real 0.171.0 binary in the
    e2e test) so ``status()`` can say which of our hooks are trusted,
    untrusted, modified or disabled.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from continuation.install.jsonfile import read_config
from continuation.install.target import HookTarget, Scope

CODEX_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SessionEnd",
    "Interrupt",
)
# Events whose matcher Codex evaluates (codex-rs/hooks/src/events/common.rs).
MATCHER_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PermissionRequest", "SessionStart"})
# Events Codex 0.171.0 gives a short budget: no timeout means 1 s, and any
# timeout is held to at most 3 s (measured with `codex app-server` hooks/list:
# SessionEnd 60 -> 3, none -> 1; Interrupt 30 -> 3, 1 -> 1, none -> 1).
SHORT_BUDGET_EVENTS = frozenset({"SessionEnd", "Interrupt"})
SHORT_BUDGET_DEFAULT_S, SHORT_BUDGET_MAX_S = 1, 3
BYPASS_FLAG = "--dangerously-bypass-hook-trust"
TRUST_HOWTO = (
    "Codex runs a hook only after you trust it and silently skips untrusted ones: "
    "start `codex`, type /hooks, review the continuation hooks and trust them "
    "(again after the hook command changes). For automation that already vets its hooks, "
    f"`codex exec {BYPASS_FLAG}` runs them without trust for that one invocation."
)


def event_key_label(event: str) -> str:
    """``PreToolUse`` -> ``pre_tool_use`` (Codex's trust-key spelling)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def effective_timeout(event: str, timeout: Any) -> int:
    """The timeout Codex actually applies (and hashes) for a handler of ``event``."""
    given = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None
    if event in SHORT_BUDGET_EVENTS:
        return min(max(given if given is not None else SHORT_BUDGET_DEFAULT_S, 1), SHORT_BUDGET_MAX_S)
    return max(given if given is not None else 600, 1)


def codex_hook_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    """Codex's trust hash of one command handler (``HookListEntry.currentHash``).

    Identity = event label + matcher (for events that use one) + the handler
    normalised the way Codex does it (:func:`effective_timeout`; absent
    optional fields dropped), as canonical JSON (sorted keys, no whitespace),
    sha256.
    """
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": effective_timeout(event, handler.get("timeout")),
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_key_label(event), "hooks": [normalized]}
    if event in MATCHER_EVENTS and matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    explicit = env.get("CODEX_HOME")
    return (Path(explicit).expanduser() if explicit else Path(home) / ".codex").absolute()


def _load_toml(path: Path) -> tuple[dict[str, Any], str | None]:
    try:
        return tomllib.loads(read_config(path).decode("utf-8")), None
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, f"{path}: {exc}"


class CodexTarget(HookTarget):
    def config_path(self, scope: Scope, *, project_dir: Path, home: Path, env: Mapping[str, str]) -> Path:
        if scope == "project":
            return Path(project_dir).absolute() / ".codex" / "hooks.json"
        return codex_home(home, env) / "hooks.json"

    def install_message(self, path: Path, scope: Scope, *, project_dir: Path) -> str:
        message = f"continuation hooks for Codex are in {path}. {TRUST_HOWTO}"
        if scope == "project":
            message += (
                f" Codex reads {path} only in a trusted project: trust {project_dir} when Codex asks, "
                f"run `codex exec --trust` once there, or add [projects.\"{Path(project_dir).absolute()}\"] "
                "trust_level = \"trusted\" to $CODEX_HOME/config.toml."
            )
        return message

    def trust(
        self, path: Path, scope: Scope, data: Mapping[str, Any], *, project_dir: Path, home: Path, env: Mapping[str, str]
    ) -> dict[str, Any]:
        config_path = codex_home(home, env) / "config.toml"
        config, error = _load_toml(config_path)
        hooks_table = config.get("hooks") if isinstance(config.get("hooks"), dict) else {}
        states = hooks_table.get("state") if isinstance(hooks_table.get("state"), dict) else {}
        per_event: dict[str, str] = {}
        hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
        for event, groups in hooks.items():
            if not isinstance(groups, list):
                continue
            for group_index, group in enumerate(groups):
                if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                    continue
                for handler_index, handler in enumerate(group["hooks"]):
                    if not (isinstance(handler, dict) and isinstance(handler.get("command"), str)):
                        continue
                    if not self.is_ours(handler["command"]):
                        continue
                    label = event_key_label(event)
                    keys = {f"{p}:{label}:{group_index}:{handler_index}" for p in (path, path.resolve())}
                    state = next((states[k] for k in keys if isinstance(states.get(k), dict)), {})
                    current = codex_hook_hash(event, group.get("matcher"), handler)
                    if state.get("enabled") is False:
                        per_event[event] = "disabled"
                    elif state.get("trusted_hash") == current:
                        per_event[event] = "trusted"
                    elif state.get("trusted_hash"):
                        per_event[event] = "modified"
                    else:
                        per_event[event] = "untrusted"
        result: dict[str, Any] = {
            "required": True,
            "config": str(config_path),
            "hooks": per_event,
            "all_trusted": bool(per_event) and all(s == "trusted" for s in per_event.values()),
            "bypass_flag": BYPASS_FLAG,
            "howto": TRUST_HOWTO,
        }
        if error:
            result["error"] = error
        inline = sorted(k for k in hooks_table if k != "state") if scope == "user" else []
        if inline:
            # Same layer in both forms: Codex loads both and warns at every start.
            result["inline_hooks_in_config"] = inline
        if scope == "project":
            projects = config.get("projects") if isinstance(config.get("projects"), dict) else {}
            candidates = {str(Path(project_dir).absolute()), str(Path(project_dir).resolve())}
            levels = [projects[c].get("trust_level") for c in candidates if isinstance(projects.get(c), dict)]
            result["project_trusted"] = "trusted" in levels
        return result


CODEX = CodexTarget(
    runtime="codex",
    events=CODEX_EVENTS,
    tool_events=frozenset({"PreToolUse", "PostToolUse"}),
    timeouts={"PreCompact": 60, "SessionStart": 60, "SessionEnd": SHORT_BUDGET_MAX_S, "Interrupt": SHORT_BUDGET_MAX_S},
    default_timeout=30,
)
