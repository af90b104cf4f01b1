"""Gemini CLI install specifics: locations, handler shape, hook settings inside ``hooks``, the
``hooksConfig.enabled`` setting (set and put back). The generic round trips run for Gemini in
test_install_roundtrip.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuation.install import install, status, uninstall

LAUNCHER = ["/opt/tools/bin/continuation"]
COMMAND = "/opt/tools/bin/continuation hook --runtime gemini"


@pytest.mark.parametrize("scope", ["user", "project"])
def test_locations(scope: str, dirs) -> None:
    report = install("gemini", scope, command=LAUNCHER, env={}, **dirs)
    base = dirs["home"] if scope == "user" else dirs["project_dir"]
    assert report.path == base / ".gemini" / "settings.json"


def test_gemini_cli_home_is_honoured(dirs, tmp_path: Path) -> None:
    report = install("gemini", "user", command=LAUNCHER, env={"GEMINI_CLI_HOME": str(tmp_path / "gh")}, **dirs)
    assert report.path == tmp_path / "gh" / ".gemini" / "settings.json"


def test_handler_shape_events_and_matchers(dirs) -> None:
    report = install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    hooks = json.loads(report.path.read_text(encoding="utf-8"))["hooks"]
    assert sorted(hooks) == sorted(["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent",
                                    "PreCompress", "SessionEnd"])
    for event, groups in hooks.items():
        (group,) = groups
        (handler,) = group["hooks"]
        assert handler["type"] == "command" and handler["command"] == COMMAND
        assert handler["name"] == "continuation"
        # Gemini CLI reads timeouts in milliseconds (default 60,000)
        assert handler["timeout"] >= 30_000 and handler["timeout"] % 1000 == 0
        assert group.get("matcher") == ("*" if event in ("BeforeTool", "AfterTool") else None)


LEGACY = """{
  "hooks": {
    "enabled": true,
    "disabled": ["old-hook"],
    "notifications": false,
    "AfterAgent": [{"hooks": [{"type": "command", "command": "say done"}]}]
  }
}
"""


def test_settings_inside_hooks_are_left_alone_and_restored(dirs) -> None:
    path = dirs["project_dir"] / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(LEGACY, encoding="utf-8")
    install("gemini", "project", command=LAUNCHER, env={}, **dirs)
    hooks = json.loads(path.read_bytes())["hooks"]
    assert hooks["enabled"] is True and hooks["disabled"] == ["old-hook"] and hooks["notifications"] is False
    assert hooks["AfterAgent"][0] == {"hooks": [{"type": "command", "command": "say done"}]}
    assert status("gemini", "project", env={}, **dirs)["installed"] is True
    assert uninstall("gemini", "project", env={}, **dirs).outcome == "restored"
    assert path.read_text(encoding="utf-8") == LEGACY


DISABLED = '{\n  "hooksConfig": {\n    "enabled": false\n  },\n  "model": {"name": "gemini-2.5-pro"}\n}\n'


def test_hooks_switched_off_are_switched_on_and_back_byte_for_byte(dirs) -> None:
    path = dirs["home"] / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DISABLED, encoding="utf-8")
    report = install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    assert json.loads(path.read_bytes())["hooksConfig"]["enabled"] is True
    assert any("hooksConfig.enabled" in w for w in report.warnings)
    trust = status("gemini", "user", env={}, **dirs)["trust"]
    assert trust["all_trusted"] is True and trust["hooks_enabled"] is True and trust["ours_disabled"] is False
    again = install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    assert again.outcome == "already-installed" and not again.changed
    assert uninstall("gemini", "user", env={}, **dirs).outcome == "restored"
    assert path.read_text(encoding="utf-8") == DISABLED


def test_switch_put_back_when_the_file_changed_since_install(dirs) -> None:
    path = dirs["home"] / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DISABLED, encoding="utf-8")
    install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    data = json.loads(path.read_bytes())
    data["ui"] = {"theme": "Dracula"}  # the user edits the file meanwhile
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")

    assert uninstall("gemini", "user", env={}, **dirs).outcome == "removed-entries"
    after = json.loads(path.read_bytes())
    assert after == {"hooksConfig": {"enabled": False}, "model": {"name": "gemini-2.5-pro"},
                     "ui": {"theme": "Dracula"}}


def test_switch_left_alone_when_the_user_set_it_since(dirs) -> None:
    path = dirs["home"] / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DISABLED, encoding="utf-8")
    install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    # Reinstalling keeps the value from before the FIRST install.
    install("gemini", "user", command=["/other/continuation"], env={}, **dirs)
    data = json.loads(path.read_bytes())
    data["hooksConfig"]["enabled"] = "yes"  # not our true any more: not ours to change
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    uninstall("gemini", "user", env={}, **dirs)
    assert json.loads(path.read_bytes())["hooksConfig"]["enabled"] == "yes"


def test_enabled_or_absent_setting_is_not_touched(dirs) -> None:
    path = dirs["home"] / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooksConfig": {"enabled": true}}', encoding="utf-8")
    report = install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    assert not any("hooksConfig.enabled" in w for w in report.warnings)
    assert json.loads(path.read_bytes())["hooksConfig"] == {"enabled": True}


def test_our_hook_named_in_disabled_list_is_warned_about(dirs) -> None:
    path = dirs["home"] / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooksConfig": {"disabled": ["continuation"]}}', encoding="utf-8")
    report = install("gemini", "user", command=LAUNCHER, env={}, **dirs)
    assert any("hooksConfig.disabled" in w for w in report.warnings)
    assert json.loads(path.read_bytes())["hooksConfig"] == {"disabled": ["continuation"]}
    trust = status("gemini", "user", env={}, **dirs)["trust"]
    assert trust["ours_disabled"] is True and trust["all_trusted"] is False


def test_cli_install_and_uninstall_round_trip(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_bytes(DISABLED.encode())
    env = dict(os.environ, HOME=str(home), CONTINUATION_HOME=str(tmp_path / "state"))
    env.pop("GEMINI_CLI_HOME", None)
    run = [sys.executable, "-m", "continuation"]
    done = subprocess.run([*run, "install", "--runtime", "gemini"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Gemini CLI" in done.stdout and "hooksConfig.enabled" in done.stderr
    assert "hook --runtime gemini" in settings.read_text(encoding="utf-8")
    done = subprocess.run([*run, "uninstall", "--runtime", "gemini"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert settings.read_bytes() == DISABLED.encode()


def test_doctor_says_when_gemini_hooks_are_switched_off(dirs, monkeypatch) -> None:
    from continuation.commands.health import check_hooks

    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    report = install("gemini", "user", command=LAUNCHER, env={}, **dirs)

    def gemini_findings():
        return [f for f in check_hooks(dirs["state_home"], dirs["project_dir"], user_home=dirs["home"])
                if "gemini user hooks" in f.message and f.status != "info"]  # not the launcher hint

    [ok] = gemini_findings()
    assert ok.status == "ok"
    data = json.loads(report.path.read_bytes())
    data["hooksConfig"] = {"enabled": False}
    report.path.write_text(json.dumps(data), encoding="utf-8")
    [off] = gemini_findings()
    assert off.status == "problem" and "switched off" in off.message


@pytest.mark.parametrize("scope", ["user", "project"])
def test_a_policy_rule_lets_the_model_print_its_sealed_record(scope: str, dirs) -> None:
    """``<script> source`` (the sealed record, with encryption on) runs in run_shell_command
    without a confirmation: a rule in the policies folder beside the settings (the user's
    ``~/.gemini/policies``), not ``tools.allowed`` (deprecated; with it set Gemini CLI 0.61.0
    denied the user's own policy-allowed commands in ``gemini -p``). Uninstall removes it,
    and the folder when that empties it; a rule the user rewrote is left."""
    import tomllib

    from continuation.host.own_command import source_command

    report = install("gemini", scope, command=LAUNCHER, env={}, **dirs)
    policy = report.path.parent / "policies" / "continuation.toml"
    rules = tomllib.loads(policy.read_text(encoding="utf-8"))["rule"]
    assert rules == [{"toolName": "run_shell_command", "commandPrefix": source_command(),
                      "decision": "allow", "priority": 100}]
    assert str(policy) in report.message
    assert "tools" not in json.loads(report.path.read_text(encoding="utf-8"))
    again = install("gemini", scope, command=LAUNCHER, env={}, **dirs)
    assert again.outcome == "already-installed" and policy.exists()
    uninstall("gemini", scope, env={}, **dirs)
    assert not policy.exists() and not policy.parent.exists()
    # the user's own file of that name, and a folder with the user's rules, stay
    policy.parent.mkdir(parents=True)
    (policy.parent / "mine.toml").write_text("# mine\n", encoding="utf-8")
    install("gemini", scope, command=LAUNCHER, env={}, **dirs)
    policy.write_text("# the user's own now\n", encoding="utf-8")
    uninstall("gemini", scope, env={}, **dirs)
    assert policy.read_text(encoding="utf-8") == "# the user's own now\n"
    assert (policy.parent / "mine.toml").exists()
