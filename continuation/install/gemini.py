"""Gemini CLI: our command hooks in ``settings.json``, and the setting that enables hooks.

Where (Gemini CLI 0.61.0)
    * user scope: ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini/settings.json`` when
      that variable is set, as the CLI's own ``homedir()`` does);
    * project scope: ``<project>/.gemini/settings.json``. With folder trust on
      (``security.folderTrust.enabled``), Gemini runs no hooks at all in an untrusted folder,
      and warns once before running a project's hooks it has not seen.

Format: ``{"hooks": {"<Event>": [{"matcher"?, "sequential"?, "hooks": [{"type": "command",
"command", "name"?, "timeout"? (milliseconds, default 60,000)}]}]}}``. The tool events take
a regex matcher (``"*"``: every tool); lifecycle events match their trigger exactly, and no
matcher means every one. ``hooks.enabled`` / ``hooks.disabled`` / ``hooks.notifications``
inside the same object are settings, not events, and are left alone.

Enabling: hooks run unless ``hooksConfig.enabled`` is false (default true). When the file says
false, install sets it to true and says so; uninstall puts false back (the original bytes, or,
when the file changed since, the one setting while it still holds our true).
``hooksConfig.disabled`` lists hook names the user switched off; ours is ``continuation``, and
install warns when it is listed there rather than overriding the user.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from continuation.install.target import SIDE_FILE_MARK, HookTarget, Scope

GEMINI_EVENTS = (
    "SessionStart",
    "BeforeAgent",  # the prompt; its answer is added to the prompt the model reads
    "BeforeTool",
    "AfterTool",  # its answer is appended to the tool result the model reads
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
)
HOOK_NAME = "continuation"
ENABLE_PATH = ("hooksConfig", "enabled")


class GeminiTarget(HookTarget):
    def config_path(self, scope: Scope, *, project_dir: Path, home: Path, env: Mapping[str, str]) -> Path:
        if scope == "project":
            return Path(project_dir).absolute() / ".gemini" / "settings.json"
        base = env.get("GEMINI_CLI_HOME")
        return (Path(base).expanduser() if base else Path(home)).absolute() / ".gemini" / "settings.json"

    def group_for(self, event: str, hook_command: str) -> dict[str, Any]:
        seconds = self.timeouts.get(event, self.default_timeout)
        handler = {"type": "command", "name": HOOK_NAME, "command": hook_command, "timeout": seconds * 1000}
        if event in self.tool_events:
            return {"matcher": "*", "hooks": [handler]}
        return {"hooks": [handler]}

    def enable(self, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        section = data.get(ENABLE_PATH[0])
        if not isinstance(section, dict) or section.get(ENABLE_PATH[1]) is not False:
            return data, {}
        result = copy.deepcopy(data)
        result[ENABLE_PATH[0]][ENABLE_PATH[1]] = True
        return result, {".".join(ENABLE_PATH): False}

    def restore(self, data: dict[str, Any], changed: Mapping[str, Any]) -> dict[str, Any]:
        key = ".".join(ENABLE_PATH)
        section = data.get(ENABLE_PATH[0])
        if key not in changed or not isinstance(section, dict) or section.get(ENABLE_PATH[1]) is not True:
            return data
        result = copy.deepcopy(data)
        result[ENABLE_PATH[0]][ENABLE_PATH[1]] = changed[key]
        return result

    def warnings(self, data: Mapping[str, Any]) -> list[str]:
        if self.trust(Path(), "user", data, project_dir=Path(), home=Path(), env={})["ours_disabled"]:
            return [f"hooksConfig.disabled lists {HOOK_NAME!r}: Gemini CLI will not run these hooks "
                    "until you take it out of that list"]
        return []

    def trust(
        self, path: Path, scope: Scope, data: Mapping[str, Any], *, project_dir: Path, home: Path, env: Mapping[str, str]
    ) -> dict[str, Any] | None:
        section = data.get(ENABLE_PATH[0]) if isinstance(data, Mapping) else None
        section = section if isinstance(section, Mapping) else {}
        disabled = section.get("disabled") if isinstance(section.get("disabled"), list) else []
        enabled, ours_disabled = section.get(ENABLE_PATH[1]) is not False, HOOK_NAME in disabled
        return {"all_trusted": enabled and not ours_disabled, "hooks_enabled": enabled,
                "ours_disabled": ours_disabled,
                "howto": f"set hooksConfig.enabled to true and take {HOOK_NAME!r} out of "
                         f"hooksConfig.disabled in {path}"}

    def side_file(self, settings_path: Path) -> tuple[Path, bytes] | None:
        """A rule of Gemini's policy engine in the policies folder beside the settings file
        (the user's ``~/.gemini/policies``): ``<script> source`` runs in run_shell_command
        without a confirmation (the sealed record, with encryption on). Not ``tools.allowed``:
        0.61.0 calls it deprecated, and with it set the user's own policy rules for other
        commands were denied in ``gemini -p``."""
        import json

        from continuation.host.own_command import source_command

        text = (f"{SIDE_FILE_MARK}: the model prints its sealed work record (encryption on)\n"
                "# without a confirmation. `continuation uninstall --runtime gemini` removes this file.\n"
                '[[rule]]\ntoolName = "run_shell_command"\n'
                f"commandPrefix = {json.dumps(source_command())}\n"  # a JSON string is a TOML one
                'decision = "allow"\npriority = 100\n')
        return settings_path.parent / "policies" / "continuation.toml", text.encode("utf-8")

    def install_message(self, path: Path, scope: Scope, *, project_dir: Path) -> str:
        where = "every Gemini CLI session" if scope == "user" else f"Gemini CLI sessions in {project_dir}"
        return f"continuation hooks for Gemini CLI are in {path}; they run in {where} (start a new session)."


GEMINI = GeminiTarget(
    runtime="gemini",
    events=GEMINI_EVENTS,
    tool_events=frozenset({"BeforeTool", "AfterTool"}),
    timeouts={"PreCompress": 60, "SessionStart": 60, "AfterTool": 60, "BeforeAgent": 60},
    default_timeout=30,
    hook_settings_keys=frozenset({"enabled", "disabled", "notifications"}),
    # read_file reads only the workspace's folders: the work record's pages are outside it
    read_grant_path=("context", "includeDirectories"),
)
