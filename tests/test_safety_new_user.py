"""Commands without ``--thread`` pick the thread of the workspace
you are in; ``rewind`` and ``fork`` take ``--thread``; the Claude install honours
``$CLAUDE_CONFIG_DIR`` (and the README says so); ``install`` keeps an inline hooks layout."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_rewind_support import HookSession, cli

from continuation.session.engine import Engine

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture
def two_workspaces(tmp_path, home, monkeypatch):
    """Thread "old" in workspace a/, then thread "new" (more recent) in workspace b/."""
    monkeypatch.setenv("CONTINUATION_WORKSPACE_POLICY", "none")
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    old = HookSession(home, a, session_id="old-session")
    old.prompt("asked in a")
    old.compact()
    new = HookSession(home, b, session_id="new-session")
    new.prompt("asked in b")
    new.compact()
    return a, b


def _inputs(home, cwd) -> list[str]:
    r = cli("inputs", "--json", home=home, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return [i["text"] for i in json.loads(r.stdout)["inputs"]]


def test_commands_pick_the_thread_of_the_workspace_you_are_in(two_workspaces, home, tmp_path):
    a, b = two_workspaces
    assert _inputs(home, a) == ["asked in a"]
    assert _inputs(home, a / "sub") == ["asked in a"]  # a folder inside the workspace
    assert _inputs(home, b) == ["asked in b"]
    assert _inputs(home, tmp_path) == ["asked in b"]  # elsewhere: the most recent thread
    r = cli("context", "--json", home=home, cwd=a)
    assert r.returncode == 0 and "asked in a" in r.stdout.decode()
    r = cli("checkpoint", home=home, cwd=a)
    assert r.returncode == 0, r.stderr
    with Engine(home) as e:
        from continuation.boundary.checkpoints import list_checkpoints

        assert len(list_checkpoints(e.get_thread("old-session"))) == 2
        assert len(list_checkpoints(e.get_thread("new-session"))) == 1
    r = cli("status", "--json", home=home, cwd=a)
    keys = [t["thread"]["session_id"] for t in json.loads(r.stdout)["threads"]]
    assert keys == ["old-session", "new-session"]  # the workspace's thread first


def test_rewind_and_fork_take_thread(two_workspaces, home):
    a, b = two_workspaces
    with Engine(home) as e:
        from continuation.boundary.checkpoints import list_checkpoints

        old_cp = list_checkpoints(e.get_thread("old-session"))[0].checkpoint_id
    r = cli("rewind", old_cp[:6], "--thread", "old-session", "--conversation", "--dry-run",
            home=home, cwd=b)
    assert r.returncode == 0, r.stderr
    assert "old-session" in r.stdout.decode() or "asked in a" in r.stdout.decode()
    r = cli("rewind", old_cp, "--thread", "new-session", "--conversation", "--dry-run",
            home=home, cwd=b)
    assert r.returncode == 1
    err = r.stderr.decode().strip()
    assert "has no checkpoint" in err and err.count("\n") == 0
    r = cli("fork", old_cp, "--thread", "old-session", "--name", "alt", "--json", home=home,
            cwd=b)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["thread"]["forked_from"].startswith("claude-old-session")


def test_claude_install_honours_claude_config_dir_and_the_readme_says_so(tmp_path):
    config = tmp_path / "claude-config"
    r = subprocess.run([sys.executable, "-m", "continuation", "install", "--runtime", "claude"],
                       capture_output=True, timeout=120,
                       env={**os.environ, "CLAUDE_CONFIG_DIR": str(config),
                            "HOME": str(tmp_path / "home"),
                            "CONTINUATION_HOME": str(tmp_path / "state")})
    assert r.returncode == 0, r.stderr
    assert (config / "settings.json").is_file()
    assert not (tmp_path / "home" / ".claude" / "settings.json").exists()
    assert "$CLAUDE_CONFIG_DIR" in README.read_text()


@pytest.mark.skipif(os.name == "nt", reason="runs the installed command line through sh")
def test_the_installed_hook_command_runs_this_interpreter_and_ignores_the_project_folder(tmp_path):
    """`continuation install` writes `<this python> -P <package>/__main__.py hook --runtime X`:
    the runtime runs it through a shell from the user's project, whose own `continuation/`
    folder (our repository checked out, a namesake package) must not stand in for the
    installed one."""
    config, state = tmp_path / "claude-config", tmp_path / "state"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path / "home"),
           "CONTINUATION_HOME": str(state)}
    r = subprocess.run([sys.executable, "-P", "-m", "continuation", "install", "--runtime", "claude"],
                       capture_output=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    # the script named is the __main__.py of the package installed for this interpreter
    main = subprocess.run([sys.executable, "-E", "-P", "-c", "import continuation; print(continuation.__file__)"],
                          capture_output=True, text=True, timeout=60, env=env, check=True).stdout.strip()
    main = str(Path(main).parent / "__main__.py")
    settings = json.loads((config / "settings.json").read_text())
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert commands == {f"{shlex.join([sys.executable, '-P', main])} hook --runtime claude"}
    project = tmp_path / "project"
    (project / "continuation").mkdir(parents=True)
    (project / "continuation" / "__init__.py").write_text("raise SystemExit('decoy imported')\n")
    (project / "continuation" / "__main__.py").write_text("raise SystemExit('decoy run')\n")
    payload = {"session_id": "s1", "prompt_id": "p1", "cwd": str(project),
               "hook_event_name": "UserPromptSubmit", "prompt": "add a test"}
    r = subprocess.run(["sh", "-c", commands.pop()], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=60, cwd=project, env=env)
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    with Engine(state) as e:
        assert [i.text for i in e.find_thread("claude", "s1").inputs()] == ["add a test"]


INLINE = (
    '{\n'
    '  "hooks": {\n'
    '    "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": '
    '"mine.sh" } ] } ],\n'
    '    "Stop": [ { "hooks": [ { "type": "command", "command": "stop.sh", "timeout": 5 } ] } ]\n'
    '  },\n'
    '  "other": [1, 2,   3]\n'
    '}\n'
)


def test_install_keeps_an_inline_hooks_layout(tmp_path):
    from continuation.install import install, uninstall

    codex = tmp_path / "codex"
    codex.mkdir()
    path = codex / "hooks.json"
    path.write_text(INLINE, encoding="utf-8")
    env = {"CODEX_HOME": str(codex)}
    install("codex", "user", project_dir=tmp_path, home=tmp_path, state_home=tmp_path / "s",
            env=env)
    text = path.read_text(encoding="utf-8")
    for line in INLINE.splitlines()[2:4]:  # the user's inline arrays, still on their lines
        assert line.rstrip(",").rstrip(" ]").rstrip(",") in text
    assert '"other": [1, 2,   3]' in text
    lines = text.splitlines()
    pre = next(ln for ln in lines if ln.lstrip().startswith('"PreToolUse"'))
    assert "mine.sh" in pre and "continuation" in pre and pre.rstrip().endswith("],")
    # the user edits the file (so uninstall cannot restore bytes): only our entries go
    path.write_text(text.replace('"stop.sh"', '"stop2.sh"'), encoding="utf-8")
    uninstall("codex", "user", project_dir=tmp_path, home=tmp_path, state_home=tmp_path / "s",
              env=env)
    assert path.read_text(encoding="utf-8") == INLINE.replace('"stop.sh"', '"stop2.sh"')
