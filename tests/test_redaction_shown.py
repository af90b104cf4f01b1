"""What is shown never holds a token-like string unless asked (`--show-secrets`); what is stored
and handed to the model keeps the user's text (continuation/commands/redacting.py,
continuation/host/secret_text.py).

A session with an API key in a prompt, a Bash command, a tool output and the Stop message."""
from __future__ import annotations

import json

import pytest
from test_rewind_support import HookSession, cli
from test_secret_text import TOKENS
from workspace_repos import git_home, make_repo  # noqa: F401

from continuation import hooks
from continuation.host.secret_text import marker
from continuation.session.engine import Engine

IN_PROMPT = TOKENS["OpenAI key"]
IN_COMMAND = TOKENS["GitHub token"]
IN_OUTPUT = TOKENS["AWS access key id"]
IN_STOP = TOKENS["Stripe key"]
SECRETS = (IN_PROMPT, IN_COMMAND, IN_OUTPUT, IN_STOP)


@pytest.fixture
def session(home, tmp_path, git_home):
    repo = make_repo(tmp_path / "repo", {"README.md": "r\n"})
    s = HookSession(home, repo)
    s.start()
    pid = s.prompt(f"deploy with OPENAI_API_KEY={IN_PROMPT} please")
    call = "toolu_secret1"
    command = {"command": f"curl -H 'X-Token: {IN_COMMAND}' https://api.example.com"}
    s.send("PreToolUse", prompt_id=pid, tool_name="Bash", tool_input=command, tool_use_id=call)
    s.send("PostToolUse", prompt_id=pid, tool_name="Bash", tool_input=command, tool_use_id=call,
           tool_response={"stdout": f"key id {IN_OUTPUT}\n", "stderr": "", "exit_code": 0,
                          "interrupted": False, "isImage": False})
    s.stop(pid, f"Deployed; the Stripe key {IN_STOP} works.")
    return s


def _shows_none(out: bytes) -> None:
    text = out.decode()
    for secret in SECRETS:
        assert secret not in text, secret


@pytest.mark.parametrize("command", [["status"], ["inputs"], ["events"], ["status", "--json"],
                                     ["inputs", "--json"], ["events", "--json"]])
def test_what_commands_show_is_redacted_unless_asked(session, home, command):
    r = cli(*command, home=home)
    assert r.returncode == 0, r.stderr.decode()
    _shows_none(r.stdout)
    if command != ["events"]:  # (whose table cuts each event's data short)
        assert marker("OpenAI key").encode() in r.stdout
    if command == ["events", "--json"]:
        data = json.loads(r.stdout)  # still JSON, every secret in it redacted
        text = json.dumps(data)
        for kind in ("OpenAI key", "GitHub token", "AWS access key id", "Stripe key"):
            assert marker(kind) in text, kind
    shown = cli(*command, "--show-secrets", home=home)
    assert shown.returncode == 0, shown.stderr.decode()
    assert b"[redacted" not in shown.stdout
    if command != ["events"]:
        assert IN_PROMPT[:16].encode() in shown.stdout


def test_the_store_and_the_model_keep_the_users_text(session, home):
    with Engine(home) as engine:
        thread = session.thread(engine)
        stored = json.dumps(thread.events())
        prompt_seq = next(e["seq"] for e in thread.events() if e["type"] == "input_admitted")
    assert all(secret in stored for secret in SECRETS)
    answer = session.compact()
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert IN_PROMPT in context and IN_COMMAND in context  # the model had them already
    r = cli("context", home=home)
    assert r.returncode == 0 and IN_PROMPT.encode() in r.stdout
    r = cli("source", f"event:{session.thread(Engine(home)).key}:{prompt_seq}", home=home)
    assert r.returncode == 0 and IN_PROMPT.encode() in r.stdout
    r = cli("capsule", "show", home=home)
    assert r.returncode == 0 and IN_COMMAND.encode() in r.stdout


def test_errors_on_stderr_are_redacted(session, home):
    r = cli("inputs", "--thread", IN_PROMPT, home=home)
    assert r.returncode == 1
    assert IN_PROMPT.encode() not in r.stderr and b"[redacted: OpenAI key]" in r.stderr


def test_a_hook_error_is_logged_without_the_secret(home, monkeypatch):
    def failing(runtime, payload, ending):
        raise ValueError(f"cannot use {IN_COMMAND} here")

    monkeypatch.setattr(hooks, "_handle", failing)
    payload = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    out, code = hooks.run("claude", json.dumps(payload).encode())
    assert code == 0  # fail open
    log = (home / "logs" / "hooks.log").read_text()
    assert "ValueError" in log and IN_COMMAND not in log and marker("GitHub token") in log


def test_the_flag_is_on_every_command_that_shows_stored_text():
    from continuation.commands import build_parser, redacting

    parser = build_parser()
    import argparse

    def leaves(p, path=()):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield path, p
        for a in subs:
            for name, child in a.choices.items():
                yield from leaves(child, (*path, name))

    for path, p in leaves(parser):
        has = any("--show-secrets" in a.option_strings for a in p._actions)
        assert has == (path[0] not in redacting.VERBATIM | {"hook"}), path
