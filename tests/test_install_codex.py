"""Codex specifics: file locations, matchers, and the hook-trust status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuation.install import install, status, uninstall
from continuation.install.codex import codex_hook_hash, event_key_label


# Hashes reported as `currentHash` by `codex app-server` (hooks/list) of the real
# Codex CLI 0.171.0 for these exact handlers (measured).
REAL_CODEX_HASHES = [
    ("PreToolUse", "*", {"type": "command", "command": "/usr/bin/python3 /work/main/tests/e2e/recorder_hook.py"},
     "sha256:20cfbe6ac08baa55a0b691973fd0203c7cf6602fd568c536f0308d2b7063361a"),
    ("PreCompact", None, {"type": "command", "command": "/usr/bin/python3 /work/main/tests/e2e/recorder_hook.py"},
     "sha256:cf5ccf1b1b8647791f5eb26bf7714882db95166716ba187129b0b8bf42f0e023"),
    ("SessionEnd", None, {"type": "command", "command": "/usr/bin/python3 /work/main/tests/e2e/recorder_hook.py"},
     "sha256:9534d0eb98e21e9133fa8dfd5312da7c6a5bd1ca44a370b30b924d80350d88c6"),
]


# Timeouts Codex applies (hooks/list timeoutSec of 0.171.0; "at least 1" is from codex-rs discovery.rs).
REAL_CODEX_TIMEOUTS = [("SessionEnd", 60, 3), ("SessionEnd", None, 1), ("Interrupt", 30, 3), ("Interrupt", 1, 1),
                       ("Interrupt", None, 1), ("Stop", None, 600), ("Stop", 30, 30), ("PreToolUse", 0, 1)]


@pytest.mark.parametrize("event, timeout, applied", REAL_CODEX_TIMEOUTS)
def test_effective_timeouts_match_the_real_binary(event, timeout, applied) -> None:
    from continuation.install.codex import effective_timeout

    assert effective_timeout(event, timeout) == applied


@pytest.mark.parametrize("event, matcher, handler, expected", REAL_CODEX_HASHES)
def test_trust_hash_matches_the_real_binary(event, matcher, handler, expected) -> None:
    assert codex_hook_hash(event, matcher, handler) == expected


def test_matcher_is_ignored_for_events_codex_does_not_match_on() -> None:
    handler = {"type": "command", "command": "x"}
    assert codex_hook_hash("Stop", "^done$", handler) == codex_hook_hash("Stop", None, handler)
    assert codex_hook_hash("PreToolUse", "Bash", handler) != codex_hook_hash("PreToolUse", None, handler)


def test_event_key_labels() -> None:
    assert [event_key_label(e) for e in ("PreToolUse", "SessionStart", "UserPromptSubmit", "Stop")] == [
        "pre_tool_use", "session_start", "user_prompt_submit", "stop"
    ]


def test_codex_home_env_decides_the_user_file(dirs, tmp_path: Path) -> None:
    codex_home = tmp_path / "elsewhere"
    report = install("codex", "user", command=["/x/continuation"], env={"CODEX_HOME": str(codex_home)}, **dirs)
    assert report.path == codex_home / "hooks.json"
    assert not (dirs["home"] / ".codex").exists()
    uninstall("codex", "user", env={"CODEX_HOME": str(codex_home)}, **dirs)
    assert not (codex_home / "hooks.json").exists()


def test_layout_and_matchers(dirs) -> None:
    report = install("codex", "project", command=["/x/continuation"], env={}, **dirs)
    assert report.path == dirs["project_dir"] / ".codex" / "hooks.json"
    data = json.loads(report.path.read_text(encoding="utf-8"))
    assert list(data) == ["hooks"], "Codex refuses unknown root keys: we add nothing but hooks"
    hooks = data["hooks"]
    assert set(hooks) == {
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop",
        "SessionEnd", "Interrupt",
    }
    for event, groups in hooks.items():
        (group,) = groups
        assert group.get("matcher") == ("*" if event in ("PreToolUse", "PostToolUse") else None)
        (handler,) = group["hooks"]
        assert handler["type"] == "command"
        assert handler["command"] == "/x/continuation hook --runtime codex"
        assert isinstance(handler["timeout"], int) and handler["timeout"] >= 1
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3, "Codex allows SessionEnd at most 3 seconds"
    assert hooks["Interrupt"][0]["hooks"][0]["timeout"] == 3


def test_message_tells_how_trust_works(dirs) -> None:
    report = install("codex", "project", command=["/x/continuation"], env={}, **dirs)
    assert "/hooks" in report.message
    assert "--dangerously-bypass-hook-trust" in report.message
    assert "silently" in report.message
    assert "trust_level" in report.message and str(dirs["project_dir"]) in report.message


def _trust_table(path: Path, hooks_json: Path, entries: dict[str, dict]) -> None:
    lines = []
    for event_index, (key_suffix, state) in enumerate(entries.items()):
        lines.append(f'[hooks.state."{hooks_json}:{key_suffix}"]')
        for k, v in state.items():
            lines.append(f"{k} = {json.dumps(v)}")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def test_status_reads_trust_from_config_toml(dirs) -> None:
    hooks_json = dirs["home"] / ".codex" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    # The user already has one hook of their own for Stop: ours is the second group.
    hooks_json.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]}}, indent=2),
        encoding="utf-8",
    )
    install("codex", "user", command=["/x/continuation"], env={}, **dirs)
    data = json.loads(hooks_json.read_text(encoding="utf-8"))

    def current(event: str, group_index: int = 0) -> str:
        group = data["hooks"][event][group_index]
        return codex_hook_hash(event, group.get("matcher"), group["hooks"][0])

    _trust_table(
        dirs["home"] / ".codex" / "config.toml",
        hooks_json,
        {
            "pre_tool_use:0:0": {"trusted_hash": current("PreToolUse")},
            "stop:1:0": {"trusted_hash": current("Stop", 1)},
            "post_tool_use:0:0": {"trusted_hash": "sha256:" + "0" * 64},
            "pre_compact:0:0": {"enabled": False, "trusted_hash": current("PreCompact")},
        },
    )
    trust = status("codex", "user", env={}, **dirs)["trust"]
    assert trust["hooks"]["PreToolUse"] == "trusted"
    assert trust["hooks"]["Stop"] == "trusted"
    assert trust["hooks"]["PostToolUse"] == "modified"
    assert trust["hooks"]["PreCompact"] == "disabled"
    assert trust["hooks"]["SessionStart"] == "untrusted"
    assert trust["all_trusted"] is False
    assert trust["bypass_flag"] == "--dangerously-bypass-hook-trust"


def test_status_all_trusted_and_project_trust(dirs) -> None:
    hooks_json = dirs["project_dir"] / ".codex" / "hooks.json"
    install("codex", "project", command=["/x/continuation"], env={}, **dirs)
    data = json.loads(hooks_json.read_text(encoding="utf-8"))
    entries = {
        f"{event_key_label(event)}:0:0": {
            "trusted_hash": codex_hook_hash(event, groups[0].get("matcher"), groups[0]["hooks"][0])
        }
        for event, groups in data["hooks"].items()
    }
    config = dirs["home"] / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    _trust_table(config, hooks_json, entries)
    trust = status("codex", "project", env={}, **dirs)["trust"]
    assert trust["all_trusted"] is True
    assert trust["project_trusted"] is False
    with config.open("a", encoding="utf-8") as handle:
        handle.write(f'\n[projects."{dirs["project_dir"]}"]\ntrust_level = "trusted"\n')
    assert status("codex", "project", env={}, **dirs)["trust"]["project_trusted"] is True


def test_malformed_config_toml_is_reported_not_raised(dirs) -> None:
    install("codex", "user", command=["/x/continuation"], env={}, **dirs)
    (dirs["home"] / ".codex" / "config.toml").write_text("[hooks.state\nbroken", encoding="utf-8")
    trust = status("codex", "user", env={}, **dirs)["trust"]
    assert "config.toml" in trust["error"]
    assert set(trust["hooks"].values()) == {"untrusted"}


def test_status_notices_inline_hooks_in_config_toml(dirs) -> None:
    install("codex", "user", command=["/x/continuation"], env={}, **dirs)
    config = dirs["home"] / ".codex" / "config.toml"
    config.write_text('[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "mine.sh"\n', encoding="utf-8")
    assert status("codex", "user", env={}, **dirs)["trust"]["inline_hooks_in_config"] == ["Stop"]
    config.write_text('model = "x"\n', encoding="utf-8")
    assert "inline_hooks_in_config" not in status("codex", "user", env={}, **dirs)["trust"]
