"""install / uninstall round trips for every runtime (byte-equal restore, idempotence, bad files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuation.host.own_command import source_command
from continuation.install import InstallError, install, status, uninstall

LAUNCHER = ["/opt/tools/bin/continuation"]
RUNTIMES = ["codex", "claude", "gemini"]


def target_file(runtime: str, scope: str, dirs: dict[str, Path]) -> Path:
    base = dirs["home"] if scope == "user" else dirs["project_dir"]
    return base / {"codex": ".codex/hooks.json", "claude": ".claude/settings.json",
                   "gemini": ".gemini/settings.json"}[runtime]


def end_event(runtime: str) -> str:
    """The turn-end event, installed for every runtime under its own name."""
    return "AfterAgent" if runtime == "gemini" else "Stop"


#: the settings list each runtime's install adds the state home's contexts folder to
GRANTS = {"claude": ("permissions", "additionalDirectories"), "gemini": ("context", "includeDirectories")}
#: the rule letting Claude Code's Bash print the sealed record without a prompt
SOURCE_RULE = f"Bash({source_command()}:*)"


def do_install(runtime: str, scope: str, dirs: dict[str, Path], command=LAUNCHER):
    return install(runtime, scope, command=command, env={}, **dirs)


def do_uninstall(runtime: str, scope: str, dirs: dict[str, Path]):
    return uninstall(runtime, scope, env={}, **dirs)


def our_commands(data: dict, runtime: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for handler in group.get("hooks", []):
                if f"hook --runtime {runtime}" in handler.get("command", ""):
                    found.setdefault(event, []).append(handler["command"])
    return found


USER_FILE_CLAUDE = """{
    "model": "sonnet",
    "permissions": {
        "allow": ["Bash(git status)", "Read"],
        "deny": ["Bash(rm -rf *)"]
    },
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]
            }
        ],
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]}
        ]
    },
    "env": {"GREETING": "grüß dich"}
}
"""

USER_FILE_CODEX = """{
  "description": "team hooks",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "^Bash$",
        "hooks": [
          {
            "type": "command",
            "command": "python3 ~/.codex/guard.py",
            "statusMessage": "checking"
          }
        ]
      }
    ]
  }
}
"""


USER_FILE_GEMINI = """{
    "model": {"name": "gemini-2.5-pro", "compressionThreshold": 0.6},
    "hooksConfig": {"notifications": false},
    "hooks": {
        "BeforeTool": [
            {
                "matcher": "run_shell_command",
                "hooks": [{"type": "command", "name": "guard", "command": "~/bin/guard.sh", "timeout": 5000}]
            }
        ],
        "AfterAgent": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]}
        ]
    },
    "ui": {"theme": "GitHub", "greeting": "grüß dich"}
}
"""


def user_file(runtime: str) -> str:
    return {"codex": USER_FILE_CODEX, "claude": USER_FILE_CLAUDE, "gemini": USER_FILE_GEMINI}[runtime]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("scope", ["user", "project"])
def test_absent_file_round_trip_leaves_nothing_behind(runtime: str, scope: str, dirs) -> None:
    path = target_file(runtime, scope, dirs)
    report = do_install(runtime, scope, dirs)
    assert report.outcome == "installed" and report.changed
    assert report.path == path
    data = json.loads(path.read_text(encoding="utf-8"))
    ours = our_commands(data, runtime)
    assert sorted(ours) == sorted(report.events)
    assert all(cmds == [f"/opt/tools/bin/continuation hook --runtime {runtime}"] for cmds in ours.values())

    back = do_uninstall(runtime, scope, dirs)
    assert back.outcome == "restored"
    assert not path.exists()
    assert not path.parent.exists(), "the folder we created is removed again"
    assert dirs["project_dir"].exists(), "folders that existed before stay"


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_existing_file_keeps_user_hooks_and_settings_and_restores_bytes(runtime: str, newline: str, dirs) -> None:
    path = target_file(runtime, "project", dirs)
    path.parent.mkdir(parents=True)
    original = user_file(runtime).replace("\n", newline).encode("utf-8")
    path.write_bytes(original)
    before = json.loads(original)

    do_install(runtime, "project", dirs)
    raw = path.read_bytes()
    after = json.loads(raw)
    # Key order and the user's own entries are kept, ours come last in each event.
    assert list(after)[: len(before)] == list(before)
    grant = GRANTS.get(runtime)
    for key in before:
        if key == (grant or ("",))[0]:  # the contexts folder added to the user's own list
            listed = after[key][grant[1]]
            assert listed[:-1] == before[key].get(grant[1], [])
            assert listed[-1] == str(dirs["state_home"].absolute() / "contexts")
            if runtime == "claude":  # and our command rule last in the user's allow list
                assert after[key]["allow"] == [*before[key].get("allow", []), SOURCE_RULE]
            assert {k: v for k, v in after[key].items() if k not in (grant[1], "allow")} == {
                k: v for k, v in before[key].items() if k not in (grant[1], "allow")}
        elif key != "hooks":
            assert after[key] == before[key]
    for event, groups in before["hooks"].items():
        assert after["hooks"][event][: len(groups)] == groups
        assert "hook --runtime" in after["hooks"][event][-1]["hooks"][0]["command"]
    # The user's indentation and line endings are kept.
    indent = "  " if runtime == "codex" else "    "
    assert (newline + indent + '"hooks"').encode() in raw
    assert (b"\r\n" in raw) == (newline == "\r\n")
    assert "grüß".encode() in raw or runtime == "codex"

    do_uninstall(runtime, "project", dirs)
    assert path.read_bytes() == original


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_installing_twice_is_installing_once(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    original = user_file(runtime).encode("utf-8")
    path.write_bytes(original)

    first = do_install(runtime, "user", dirs)
    once = path.read_bytes()
    second = do_install(runtime, "user", dirs)
    assert (first.outcome, second.outcome) == ("installed", "already-installed")
    assert not second.changed
    assert path.read_bytes() == once
    assert all(len(c) == 1 for c in our_commands(json.loads(once), runtime).values())

    assert do_uninstall(runtime, "user", dirs).outcome == "restored"
    assert path.read_bytes() == original
    assert do_uninstall(runtime, "user", dirs).outcome == "not-installed"
    assert path.read_bytes() == original


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_new_launcher_path_replaces_our_entries_and_still_restores(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    original = user_file(runtime).encode("utf-8")
    path.write_bytes(original)

    do_install(runtime, "user", dirs)
    report = do_install(runtime, "user", dirs, command=["/new place/bin/continuation"])
    assert report.outcome == "updated"
    ours = our_commands(json.loads(path.read_bytes()), runtime)
    assert all(cmds == [f"'/new place/bin/continuation' hook --runtime {runtime}"] for cmds in ours.values())
    st = status(runtime, "user", env={}, command=["/new place/bin/continuation"], **dirs)
    assert st["installed"] and st["command_matches"] is True

    do_uninstall(runtime, "user", dirs)
    assert path.read_bytes() == original


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize(
    "content, needle",
    [
        (b'{"hooks": {"Stop": [', b"not valid JSON"),
        (b"[1, 2, 3]\n", b"expected a JSON object"),
        (b'{"hooks": ["Stop"]}', b'"hooks" must be a JSON object'),
        (b'{"hooks": {"Stop": {"command": "x"}}}', b"hooks.Stop must be a list"),
        (b'{"model": "\xff\xfe"}', b"not UTF-8"),
    ],
)
def test_malformed_file_is_refused_without_writing(runtime: str, content: bytes, needle: bytes, dirs) -> None:
    path = target_file(runtime, "project", dirs)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(InstallError) as info:
        do_install(runtime, "project", dirs)
    assert needle.decode() in str(info.value)
    assert str(path) in str(info.value)
    assert path.read_bytes() == content
    assert not list((dirs["state_home"] / "install").glob("*.json")), "no install record for a refused file"
    st = status(runtime, "project", env={}, **dirs)
    assert st["valid"] is False and needle.decode() in st["error"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_file_changed_after_install_loses_only_our_entries(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    original = user_file(runtime).encode("utf-8")
    path.write_bytes(original)
    do_install(runtime, "user", dirs)

    # Somebody edits the file in between: a new setting and a new hook of their own.
    edited = json.loads(path.read_bytes())
    edited["theme"] = "dark"
    edited["hooks"].setdefault("PostToolUse", []).append(
        {"matcher": "Write", "hooks": [{"type": "command", "command": "fmt.sh"}]}
    )
    path.write_text(json.dumps(edited, indent=2) + "\n", encoding="utf-8")

    report = do_uninstall(runtime, "user", dirs)
    assert report.outcome == "removed-entries"
    assert any("changed since install" in w for w in report.warnings)
    result = json.loads(path.read_bytes())
    expected = json.loads(original)
    expected["theme"] = "dark"
    expected["hooks"].setdefault("PostToolUse", []).append(
        {"matcher": "Write", "hooks": [{"type": "command", "command": "fmt.sh"}]}
    )
    assert result == expected
    assert list(result) == list(expected), "key order kept"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_absent_file_then_created_by_user_meanwhile(runtime: str, dirs) -> None:
    path = target_file(runtime, "project", dirs)
    do_install(runtime, "project", dirs)
    data = json.loads(path.read_bytes())
    end = end_event(runtime)
    data["hooks"][end].insert(0, {"hooks": [{"type": "command", "command": "mine.sh"}]})
    path.write_text(json.dumps(data), encoding="utf-8")

    assert do_uninstall(runtime, "project", dirs).outcome == "removed-entries"
    assert json.loads(path.read_bytes()) == {"hooks": {end: [{"hooks": [{"type": "command", "command": "mine.sh"}]}]}}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_handler_moved_into_a_user_group_is_taken_out_on_install(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    end = end_event(runtime)
    mixed = {
        "hooks": {
            end: [
                {
                    "hooks": [
                        {"type": "command", "command": "mine.sh"},
                        {"type": "command", "command": f"continuation hook --runtime {runtime}"},
                    ]
                }
            ]
        }
    }
    path.write_text(json.dumps(mixed, indent=2), encoding="utf-8")
    assert do_install(runtime, "user", dirs).outcome == "updated"
    stop = json.loads(path.read_bytes())["hooks"][end]
    assert stop[0] == {"hooks": [{"type": "command", "command": "mine.sh"}]}
    assert len(stop) == 2 and stop[1]["hooks"][0]["command"].startswith("/opt/tools/bin/continuation hook")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_entries_removed_by_hand_then_reinstalled_restores_latest_original(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    do_install(runtime, "user", dirs)
    # The user deletes our entries by hand and writes their own file.
    hand = b'{\n\t"model": "x"\n}\n'
    path.write_bytes(hand)
    do_install(runtime, "user", dirs)
    assert b'\n\t"hooks"' in path.read_bytes(), "tab indentation kept"
    assert do_uninstall(runtime, "user", dirs).outcome == "restored"
    assert path.read_bytes() == hand


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("content", [b"", b"  \n", b"\xef\xbb\xbf{}\n", b'{"a": 1, "b": [1, 2]}'])
def test_blank_bom_and_one_line_files_round_trip(runtime: str, content: bytes, dirs) -> None:
    path = target_file(runtime, "project", dirs)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    do_install(runtime, "project", dirs)
    raw = path.read_bytes()
    assert our_commands(json.loads(raw.decode("utf-8-sig")), runtime)
    assert raw.startswith(b"\xef\xbb\xbf") == content.startswith(b"\xef\xbb\xbf")
    if content.startswith(b'{"a"'):
        assert b"\n" not in raw, "a one-line file stays one line"
    do_uninstall(runtime, "project", dirs)
    assert path.read_bytes() == content


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_damaged_install_record_falls_back_to_removing_our_entries(runtime: str, dirs) -> None:
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    path.write_text('{"keep": true}', encoding="utf-8")
    report = do_install(runtime, "user", dirs)
    report.record_path.write_text('{"schema_version": 1, "runtime": ', encoding="utf-8")
    back = do_uninstall(runtime, "user", dirs)
    assert back.outcome == "removed-entries"
    assert any("ignored the install record" in w for w in back.warnings)
    assert json.loads(path.read_bytes()) == {"keep": True}


def test_future_record_schema_is_not_trusted(dirs) -> None:
    path = target_file("claude", "user", dirs)
    report = do_install("claude", "user", dirs)
    record = json.loads(report.record_path.read_text(encoding="utf-8"))
    record["schema_version"] = 99
    report.record_path.write_text(json.dumps(record), encoding="utf-8")
    back = do_uninstall("claude", "user", dirs)
    assert back.outcome == "removed-entries"
    assert any("newer than this version" in w for w in back.warnings)
    assert json.loads(path.read_bytes()) == {}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_status_reports_installed_events(runtime: str, dirs) -> None:
    st = status(runtime, "user", env={}, **dirs)
    assert st["exists"] is False and st["installed"] is False and st["events"] == []
    report = do_install(runtime, "user", dirs)
    st = status(runtime, "user", env={}, command=LAUNCHER, **dirs)
    assert st["installed"] is True
    assert st["events"] == report.events and st["missing_events"] == []
    assert st["command_matches"] is True
    assert st["record"] == str(report.record_path)
    # One event removed by hand: status says which.
    path = target_file(runtime, "user", dirs)
    data = json.loads(path.read_bytes())
    boundary = "PreCompress" if runtime == "gemini" else "PreCompact"
    del data["hooks"][boundary]
    path.write_text(json.dumps(data), encoding="utf-8")
    st = status(runtime, "user", env={}, **dirs)
    assert st["installed"] is False and st["missing_events"] == [boundary]


def test_a_launcher_we_could_not_recognise_is_refused(dirs) -> None:
    with pytest.raises(InstallError, match="would not be recognised"):
        do_install("codex", "user", dirs, command=["/usr/bin/my-wrapper"])
    assert not target_file("codex", "user", dirs).exists()


def test_python_module_launcher_and_string_command_are_recognised(dirs) -> None:
    do_install("claude", "user", dirs, command=["/usr/bin/python3", "-m", "continuation"])
    assert status("claude", "user", env={}, **dirs)["installed"]
    report = do_install("claude", "user", dirs, command='"C:\\Program Files\\continuation.exe"')
    assert report.outcome == "updated"
    assert status("claude", "user", env={}, **dirs)["commands"] == [
        '"C:\\Program Files\\continuation.exe" hook --runtime claude'
    ]


@pytest.mark.parametrize("launcher", [
    ["/usr/bin/python3", "-P", "/venv/lib/python3.11/site-packages/continuation/__main__.py"],
    ["/a b/python3", "-P", "/a b/site-packages/continuation/__main__.py"],  # quoted by shlex
    '"C:\\Program Files\\Python\\python.exe" -P "C:\\Program Files\\Lib\\site-packages\\continuation\\__main__.py"',
])
def test_the_package_main_launcher_is_recognised_and_uninstalled(launcher, dirs) -> None:
    """`<python> -P <package>/__main__.py` (what `default_command` writes), however its paths
    are quoted, is ours: installing over it updates it, uninstalling removes it."""
    path = target_file("claude", "user", dirs)
    do_install("claude", "user", dirs, command=launcher)
    assert status("claude", "user", env={}, **dirs)["installed"]
    assert do_install("claude", "user", dirs, command=["/opt/bin/continuation"]).outcome == "updated"
    assert status("claude", "user", env={}, **dirs)["commands"] == [
        "/opt/bin/continuation hook --runtime claude"]
    do_install("claude", "user", dirs, command=launcher)
    do_uninstall("claude", "user", dirs)
    assert not path.exists()


def test_the_default_launcher_runs_the_main_of_the_package_installed_for_the_interpreter(
        monkeypatch, tmp_path) -> None:
    """`default_command`: this interpreter, `-P`, the `__main__.py` of the package that
    interpreter imports with `-P -E` (as installed): not a `continuation/` folder in the working
    directory the install ran from, nor one on PYTHONPATH; `-m continuation` where that package
    is not a folder of files (inside a zip)."""
    import subprocess
    import sys

    from continuation.install.core import default_command

    decoys = []
    for where in ("project", "pythonpath"):
        decoy = tmp_path / where / "continuation"
        decoy.mkdir(parents=True)
        (decoy / "__init__.py").write_text("")
        (decoy / "__main__.py").write_text("raise SystemExit('decoy')\n")
        decoys.append(decoy)
    monkeypatch.chdir(decoys[0].parent)
    monkeypatch.setenv("PYTHONPATH", str(decoys[1].parent))
    command = default_command()
    assert command[:2] == [sys.executable, "-P"] and Path(command[2]).is_file()
    installed = subprocess.run([sys.executable, "-E", "-P", "-c",
                                "import continuation; print(continuation.__file__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert Path(command[2]) == Path(installed).parent / "__main__.py"
    assert Path(command[2]).parent not in decoys

    real_run = subprocess.run

    def zipped(args, **kwargs):  # the interpreter's answer for a package inside a zip
        if args[:4] == [sys.executable, "-E", "-P", "-c"]:
            return subprocess.CompletedProcess(args, 0, "/opt/app.zip/continuation/__init__.py\n", "")
        return real_run(args, **kwargs)

    monkeypatch.setattr(subprocess, "run", zipped)
    assert default_command() == [sys.executable, "-P", "-m", "continuation"]


def test_other_runtime_entries_are_not_ours(dirs) -> None:
    path = target_file("claude", "user", dirs)
    path.parent.mkdir(parents=True)
    foreign = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "continuation hook --runtime codex"}]}]}}
    path.write_text(json.dumps(foreign), encoding="utf-8")
    do_install("claude", "user", dirs)
    stop = json.loads(path.read_bytes())["hooks"]["Stop"]
    assert stop[0] == foreign["hooks"]["Stop"][0] and len(stop) == 2


def test_unknown_runtime_and_scope_are_clear_errors(dirs) -> None:
    with pytest.raises(InstallError, match="unknown runtime"):
        install("aider", "user", env={}, **dirs)  # type: ignore[arg-type]
    with pytest.raises(InstallError, match="unknown scope"):
        install("codex", "global", env={}, **dirs)  # type: ignore[arg-type]


@pytest.mark.skipif(__import__("os").name == "nt", reason="POSIX permission bits")
def test_file_mode_is_kept(dirs) -> None:
    path = target_file("claude", "user", dirs)
    path.parent.mkdir(parents=True)
    path.write_text("{}", encoding="utf-8")
    path.chmod(0o600)
    do_install("claude", "user", dirs)
    assert path.stat().st_mode & 0o777 == 0o600
    do_uninstall("claude", "user", dirs)
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_user_and_project_scope_naming_the_same_file_share_one_record(runtime: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    same = {"project_dir": home, "home": home, "state_home": tmp_path / "state"}
    path = target_file(runtime, "user", same)
    path.parent.mkdir(parents=True)
    original = b'{"mine": 1}\n'
    path.write_bytes(original)
    assert install(runtime, "user", command=LAUNCHER, env={}, **same).outcome == "installed"
    assert install(runtime, "project", command=LAUNCHER, env={}, **same).outcome == "already-installed"
    assert uninstall(runtime, "project", env={}, **same).outcome == "restored"
    assert path.read_bytes() == original


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_our_entries_without_a_record_are_not_restored_by_uninstall(runtime: str, dirs) -> None:
    # Our hooks are in the file (an older install whose state home is gone), next to the user's.
    path = target_file(runtime, "user", dirs)
    path.parent.mkdir(parents=True)
    data = json.loads(user_file(runtime))
    data["hooks"].setdefault(end_event(runtime), []).append(
        {"hooks": [{"type": "command", "command": f"/old/continuation hook --runtime {runtime}"}]}
    )
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    assert do_install(runtime, "user", dirs).outcome == "updated"
    assert do_uninstall(runtime, "user", dirs).outcome == "restored"
    assert our_commands(json.loads(path.read_bytes()), runtime) == {}
    assert json.loads(path.read_bytes()) == json.loads(user_file(runtime))


def test_installing_in_both_scopes_warns(tmp_path):
    from continuation.install import install

    dirs = dict(project_dir=tmp_path / "proj", home=tmp_path / "home", state_home=tmp_path / "st")
    dirs["project_dir"].mkdir()
    first = install("claude", "user", command=["/x/continuation"], env={}, **dirs)
    assert not first.warnings
    second = install("claude", "project", command=["/x/continuation"], env={}, **dirs)
    assert any("also installed" in w and "user scope" in w for w in second.warnings)
