"""What differs between runtimes: where the file is, which events, which matchers.

A :class:`HookTarget` describes one runtime's hook file. The install,
uninstall and status logic in :mod:`continuation.install.core` is the same
for every runtime and only asks the target these questions.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Runtime = Literal["codex", "claude", "gemini"]
Scope = Literal["user", "project"]


def render_command(command: list[str] | str) -> str:
    """The launcher as one shell word list (the runtimes run hook commands through a shell)."""
    if isinstance(command, str):
        return command
    if not command:
        raise ValueError("command must not be empty")
    if os.name == "nt":
        return subprocess.list2cmdline(command)
    return shlex.join(command)


def hook_command_line(command: list[str] | str, runtime: str) -> str:
    return f"{render_command(command)} hook --runtime {runtime}"


def ours_pattern(runtime: str) -> re.Pattern[str]:
    # Matches "<...>continuation hook --runtime codex" however the launcher
    # path is quoted ('/a b/continuation', continuation.exe, python -m continuation,
    # python -P '/a b/continuation/__main__.py').
    return re.compile(
        r"continuation(?:\.exe|[/\\]__main__\.py)?['\"]?\s+hook\s+--runtime(?:\s+|=)['\"]?"
        + re.escape(runtime) + r"(?![\w-])"
    )


#: the first line of a file install writes beside a runtime's settings (``side_file``)
SIDE_FILE_MARK = "# written by `continuation install`"


@dataclass(frozen=True)
class HookTarget:
    runtime: Runtime
    events: tuple[str, ...]
    tool_events: frozenset[str]
    timeouts: Mapping[str, int]
    default_timeout: int

    def config_path(self, scope: Scope, *, project_dir: Path, home: Path, env: Mapping[str, str]) -> Path:
        raise NotImplementedError

    def is_ours(self, command: str) -> bool:
        return bool(ours_pattern(self.runtime).search(command))

    def group_for(self, event: str, hook_command: str) -> dict[str, Any]:
        handler = {"type": "command", "command": hook_command, "timeout": self.timeouts.get(event, self.default_timeout)}
        if event in self.tool_events:
            return {"matcher": "*", "hooks": [handler]}
        return {"hooks": [handler]}

    def desired_groups(self, hook_command: str) -> dict[str, dict[str, Any]]:
        return {event: self.group_for(event, hook_command) for event in self.events}

    #: keys of the ``hooks`` object that are settings, not events (left alone)
    hook_settings_keys: frozenset[str] = frozenset()
    #: the settings list of folders the runtime's own file tools may read without asking (None:
    #: the runtime reads them anyway, as Codex's shell does)
    read_grant_path: tuple[str, ...] | None = None

    #: the settings list of command rules the runtime runs without asking, where it asks before
    #: a shell command (None: it does not ask, or asks by other means)
    command_grant_path: tuple[str, ...] | None = None

    def side_file(self, settings_path: Path) -> tuple[Path, bytes] | None:
        """A file of ours beside the settings file, and its bytes: install writes it, uninstall
        removes it while it still starts with :data:`SIDE_FILE_MARK` (None: no such file)."""
        return None

    def command_rule(self, command: str) -> str:
        """The rule in :attr:`command_grant_path` letting every ``command ...`` run."""
        raise NotImplementedError

    def grants(self, folder: str) -> list[tuple[tuple[str, ...], str]]:
        """What the model needs to reach its record without a prompt: the contexts folder for
        the runtime's file tools, and (sealed, with encryption on) ``continuation source`` in
        its shell tool; as (settings list, value)."""
        from continuation.host.own_command import source_command

        found = []
        if self.read_grant_path is not None:
            found.append((self.read_grant_path, folder))
        if self.command_grant_path is not None:
            found.append((self.command_grant_path, self.command_rule(source_command())))
        return found

    def grant_reads(self, data: dict[str, Any], folder: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``data`` with each of :meth:`grants` in its list, and what was added (``"+<dotted
        path>"`` -> value) for :meth:`revoke_reads`."""
        import copy

        result, added = copy.deepcopy(data), {}
        for path, value in self.grants(folder):
            if _add_listed(result, path, value):
                added["+" + ".".join(path)] = value
        return (result, added) if added else (data, {})

    def revoke_reads(self, data: dict[str, Any], changed: Mapping[str, Any]) -> dict[str, Any]:
        """Undo :meth:`grant_reads`: each value out of its list (the list and its objects out
        too when that leaves them empty)."""
        import copy

        result, removed = copy.deepcopy(data), False
        for path in (self.read_grant_path, self.command_grant_path):
            value = changed.get("+" + ".".join(path)) if path is not None else None
            if value is not None:
                removed = _remove_listed(result, path, value) or removed
        return result if removed else data

    def enable(self, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``data`` with whatever setting the runtime needs to run hooks at all, and the
        previous values of what changed (dotted path -> value, ``None``: absent)."""
        return data, {}

    def restore(self, data: dict[str, Any], changed: Mapping[str, Any]) -> dict[str, Any]:
        """Undo :meth:`enable` where the setting still holds the value we wrote."""
        return data

    def warnings(self, data: Mapping[str, Any]) -> list[str]:
        """What in the installed file would still keep our hooks from running."""
        return []

    def trust(
        self, path: Path, scope: Scope, data: Mapping[str, Any], *, project_dir: Path, home: Path, env: Mapping[str, str]
    ) -> dict[str, Any] | None:
        """Runtime-specific "will these hooks actually run?" facts, or ``None``."""
        return None

    def install_message(self, path: Path, scope: Scope, *, project_dir: Path) -> str:
        return f"continuation hooks are in {path}."


def _add_listed(data: dict[str, Any], path: tuple[str, ...], value: str) -> bool:
    """``value`` appended to the list at ``path`` in ``data`` (made when absent); False when it
    is there already or the user's own value there is not an object or a list (left alone)."""
    *parents, leaf = path
    node = data
    for key in parents:
        if not isinstance(node.get(key), dict):
            if key in node:
                return False
            node[key] = {}
        node = node[key]
    listed = node.setdefault(leaf, [])
    if not isinstance(listed, list) or value in listed:
        return False
    listed.append(value)
    return True


def _remove_listed(data: dict[str, Any], path: tuple[str, ...], value: str) -> bool:
    chain = [data]
    for key in path[:-1]:
        if not isinstance(chain[-1].get(key), dict):
            return False
        chain.append(chain[-1][key])
    listed = chain[-1].get(path[-1])
    if not isinstance(listed, list) or value not in listed:
        return False
    listed.remove(value)
    if not listed:
        del chain[-1][path[-1]]
        for parent, key in zip(reversed(chain[:-1]), reversed(path[:-1])):
            if parent[key]:
                break
            del parent[key]
    return True
