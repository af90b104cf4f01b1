"""Claude Code specifics: settings.json locations and Claude Code's matcher rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuation.host.own_command import source_command
from continuation.install import install, status, uninstall

EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
          "PermissionDenied",
          "PreCompact", "PostCompact", "Stop", "StopFailure", "SessionEnd"}


@pytest.mark.parametrize("scope", ["user", "project"])
def test_locations(scope: str, dirs) -> None:
    report = install("claude", scope, command=["/x/continuation"], env={}, **dirs)
    base = dirs["home"] if scope == "user" else dirs["project_dir"]
    assert report.path == base / ".claude" / "settings.json"
    assert "trust" not in status("claude", scope, env={}, **dirs), "Claude Code has no hook trust step"


def test_claude_config_dir_is_honoured(dirs, tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    report = install("claude", "user", command=["/x/continuation"], env=env, **dirs)
    assert report.path == tmp_path / "cfg" / "settings.json"
    assert status("claude", "user", env=env, **dirs)["installed"]
    uninstall("claude", "user", env=env, **dirs)
    assert not report.path.exists()


def test_matcher_rules(dirs) -> None:
    report = install("claude", "project", command=["/x/continuation"], env={}, **dirs)
    hooks = json.loads(report.path.read_text(encoding="utf-8"))["hooks"]
    assert set(hooks) == EVENTS
    for event, (group,) in hooks.items():
        if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"):
            assert group["matcher"] == "*", "tool events: every tool"
        else:
            # No matcher = every occurrence (SessionStart: startup/resume/clear/compact;
            # PreCompact: manual/auto); UserPromptSubmit and Stop take none at all.
            assert "matcher" not in group
        (handler,) = group["hooks"]
        assert handler == {"type": "command", "command": "/x/continuation hook --runtime claude",
                           "timeout": handler["timeout"]}
        assert 1 <= handler["timeout"] <= 600


def test_permissions_for_the_e2e_style_settings_survive(dirs) -> None:
    settings = dirs["home"] / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = json.dumps({"permissions": {"allow": ["Bash", "Read", "Write"]}}, indent=2).encode() + b"\n"
    settings.write_bytes(original)
    install("claude", "user", command=["/x/continuation"], env={}, **dirs)
    data = json.loads(settings.read_bytes())
    # the user's rules kept; the state home's contexts folder readable by the model's Read tool;
    # `continuation source` (this installation's script, by its path: the sealed record's
    # pages) run by its Bash without a prompt
    rule = f"Bash({source_command()}:*)"
    assert rule.endswith("continuation source:*)")
    assert data["permissions"] == {"allow": ["Bash", "Read", "Write", rule],
                                   "additionalDirectories": [str(dirs["state_home"].absolute() / "contexts")]}
    assert list(data) == ["permissions", "hooks"]
    uninstall("claude", "user", env={}, **dirs)
    assert settings.read_bytes() == original
