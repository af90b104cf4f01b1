"""Classifying interrupted tool calls: read-only, file edit, external effect."""
from __future__ import annotations

import json

import pytest

from continuation.toolcalls.classify import EXTERNAL, FILE_EDIT, READ_ONLY, classify, shell_command
from continuation.toolcalls.shellcheck import is_read_only, tokens

READ_ONLY_COMMANDS = [
    "ls -la", "cat README.md", "grep -rn TODO src", "rg foo", "git status", "git log --oneline -5",
    "git diff HEAD~1", "find . -name '*.py'", "cat a | grep x | wc -l", "ls 2>/dev/null",
    "git status 2>&1 | head", "cd src && grep -rn foo .", "FOO=1 ls", "wc -l < notes.txt",
    "git branch", "git branch -a", "git stash list", "sed -n 1,20p f.py", "head -n 5 a; tail b",
    "git -C sub log", "sort -u names.txt", "git config --get user.name",
]
EFFECT_COMMANDS = {
    "sleep 30": "sleep",
    "npm publish": "npm",
    "git push": "git push",
    "echo line >> notes.txt": "notes.txt",
    "echo hi > f": "'f'",
    "ls && rm -rf build": "rm",
    "cat x | tee y": "tee",
    "find . -name '*.tmp' -delete": "-delete",
    "find . -exec rm {} +": "-exec",
    "git branch topic": "git branch",
    "git commit -m x": "git commit",
    "sed -i s/a/b/ f": "sed -i",
    "echo $(touch x)": "subshell",
    "echo `touch x`": "substitution",
    "ls &": "background",
    "cat <<EOF > f\nx\nEOF": "here-document",
    "sort -o out in": "sort -o",
    "uniq in out": "uniq",
    "python build.py": "python",
    "ls; curl -X POST http://x": "curl",
    "git -c core.x=y status": "configuration",
    "awk '{print > \"f\"}' a": "awk",
    "echo 'unterminated": "parsed",
    "": "empty",
}


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_read_only_commands(command):
    assert is_read_only(command) == (True, "only reads")
    assert classify("Bash", {"command": command}).kind == READ_ONLY


@pytest.mark.parametrize("command,why", EFFECT_COMMANDS.items())
def test_commands_with_possible_effects(command, why):
    ok, reason = is_read_only(command)
    assert not ok
    assert why in reason
    c = classify("Bash", {"command": command})
    assert c.kind == EXTERNAL and why in c.reason


def test_quoted_operators_are_data_not_operators():
    assert is_read_only("grep '>' file")[0]
    assert is_read_only('grep "a && b" file')[0]
    assert tokens("grep '>' f") == ["grep", ">", "f"]


@pytest.mark.parametrize("tool,args,kind", [
    ("Read", {"file_path": "/x"}, READ_ONLY),
    ("Grep", {"pattern": "x"}, READ_ONLY),
    ("Glob", {"pattern": "*.py"}, READ_ONLY),
    ("LS", {"path": "."}, READ_ONLY),
    ("WebFetch", {"url": "https://example.com"}, READ_ONLY),
    ("TodoWrite", {"todos": []}, READ_ONLY),
    ("Write", {"file_path": "a", "content": "x"}, FILE_EDIT),
    ("Edit", {"file_path": "a", "old_string": "x", "new_string": "y"}, FILE_EDIT),
    ("MultiEdit", {"file_path": "a", "edits": []}, FILE_EDIT),
    ("apply_patch", {"input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}, FILE_EDIT),
    ("Bash", {"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF"},
     FILE_EDIT),
    ("Task", {"prompt": "do it"}, EXTERNAL),
    ("mcp__github__create_issue", {"title": "x"}, EXTERNAL),
    ("", {}, EXTERNAL),
    ("Bash", {}, EXTERNAL),
    ("exec_command", {"cmd": "ls"}, READ_ONLY),
    ("shell", {"command": ["bash", "-lc", "git status"]}, READ_ONLY),
    ("shell", {"command": ["bash", "-lc", "make install"]}, EXTERNAL),
    ("shell", {"command": ["rm", "-rf", "x"]}, EXTERNAL),
])
def test_tools(tool, args, kind):
    assert classify(tool, args).kind == kind


def test_shell_command_forms():
    assert shell_command({"command": "ls"}) == "ls"
    assert shell_command({"command": ["bash", "-lc", "ls -la"]}) == "ls -la"
    assert shell_command({"command": ["git", "log", "a b"]}) == "git log 'a b'"
    assert shell_command({"command": 3}) is None
    assert classify("Bash", None).kind == EXTERNAL  # not even a dict: never read-only


def test_codex_fixture_sleep_call_is_an_external_effect(shared_fixtures):
    """The real Codex CLI 0.171.0 payload of the killed `sleep 30` call."""
    lines = (shared_fixtures / "codex" / "hook-payloads.jsonl").read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    assert last["hook_event_name"] == "PreToolUse" and last["tool_input"] == {"command": "sleep 30"}
    c = classify(last["tool_name"], last["tool_input"])
    assert c.kind == EXTERNAL
    assert c.command == "sleep 30"
    # the calls the same fixture completed: `echo line >> notes.txt` writes a file
    echo = next(json.loads(x) for x in lines if '"echo line >> notes.txt"' in x)
    assert classify(echo["tool_name"], echo["tool_input"]).kind == EXTERNAL
