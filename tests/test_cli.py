"""The command line: JSON on an empty home, one-line errors, no tracebacks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LIFECYCLE_DOC = Path(__file__).resolve().parents[1] / "docs" / "lifecycle.md"


def run_cli(*args, home: Path, stdin: bytes | None = None, env: dict | None = None):
    e = {**os.environ, "CONTINUATION_HOME": str(home), **(env or {})}
    return subprocess.run([sys.executable, "-m", "continuation", *args], input=stdin,
                          capture_output=True, env=e, timeout=120)


def test_status_json_on_empty_home(tmp_path):
    r = run_cli("status", "--json", home=tmp_path / "h")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["threads"] == []


def test_version(tmp_path):
    r = run_cli("--version", home=tmp_path)
    assert r.returncode == 0 and r.stdout.decode().startswith("continuation ")


@pytest.mark.parametrize("args", [("inputs", "--thread", "nope"), ("events", "--thread", "nope"),
                                  ("status", "--thread", "nope")])
def test_unknown_thread_is_one_line_on_stderr(tmp_path, args):
    r = run_cli(*args, home=tmp_path / "h")
    assert r.returncode == 1
    err = r.stderr.decode().strip()
    assert err.count("\n") == 0 and "nope" in err and "Traceback" not in err


def test_bad_arguments_exit_2_without_traceback(tmp_path):
    r = run_cli("inputs", "--bogus", home=tmp_path)
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    r = run_cli("no-such-command", home=tmp_path)
    assert r.returncode == 2 and b"Traceback" not in r.stderr


def test_unreadable_store_is_a_clear_error(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "store.sqlite3").write_bytes(b"\x00garbage" * 4096)
    r = run_cli("status", home=home)
    assert r.returncode == 1
    assert b"is damaged (file is not a database)" in r.stderr and b"--salvage" in r.stderr
    assert b"Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_newer_store_is_a_clear_error(tmp_path):
    import sqlite3

    from continuation.store import SqliteStore

    home = tmp_path / "h"
    SqliteStore(home / "store.sqlite3").close()
    conn = sqlite3.connect(home / "store.sqlite3")
    conn.execute("PRAGMA user_version=999")
    conn.close()
    r = run_cli("status", "--json", home=home)
    assert r.returncode == 1 and b"upgrade continuation" in r.stderr


def test_inputs_and_events_after_hooks(tmp_path):
    home = tmp_path / "h"
    payload = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "turn_id": "t1",
               "cwd": str(tmp_path), "prompt": "fix the bug"}
    r = run_cli("hook", "--runtime", "codex", stdin=json.dumps(payload).encode(), home=home)
    assert r.returncode == 0, r.stderr
    r = run_cli("inputs", "--json", home=home)
    rows = json.loads(r.stdout)["inputs"]
    assert [(x["text"], x["state"]) for x in rows] == [("fix the bug", "pending")]
    r = run_cli("events", "--json", "--thread", "s-1", home=home)
    events = json.loads(r.stdout)["events"]
    assert [e["type"] for e in events] == ["input_admitted"]
    r = run_cli("status", home=home)
    assert b"pending 1" in r.stdout


def test_lifecycle_diagram_matches_readme(tmp_path):
    r = run_cli("lifecycle", home=tmp_path)
    assert r.returncode == 0
    diagram = r.stdout.decode().strip()
    assert "stateDiagram-v2" in diagram
    assert diagram in LIFECYCLE_DOC.read_text(encoding="utf-8"), \
        "docs/lifecycle.md's diagram is stale: paste `continuation lifecycle` into it"


def test_status_prints_counts_of_all_and_decodes_only_the_newest_inputs(home, monkeypatch, capsys):
    """`status` counts every input per state but decodes and lists only the newest 20: its cost
    does not grow with the thread's history (found measuring 20,000 inputs)."""
    from continuation import cli
    from continuation.session.engine import Engine
    from statemachine.records import InputRecord

    with Engine(home) as engine:
        thread = engine.thread("codex", "long-session")
        for n in range(30):
            thread.admit(f"request number {n:02d}", turn_id=f"t{n}")
            if n < 25:
                thread.turn_completed(f"t{n}")
    decoded = []
    original = InputRecord.from_row.__func__

    def counting(cls, data):
        decoded.append(data.get("input_id"))
        return original(cls, data)

    monkeypatch.setattr(InputRecord, "from_row", classmethod(counting))
    assert cli.main(["status", "--thread", "long-session"]) == 0
    out = capsys.readouterr().out
    assert "handled 25" in out and "pending 5" in out
    assert "the newest 20 of 30 below" in out
    assert "request number 29" in out and "request number 10" in out
    assert "request number 09" not in out
    assert len(decoded) == 20


@pytest.mark.parametrize("args,code", [(["status", "--json"], 0), (["--version"], 0),
                                       (["status", "--thread", "nope"], 1), (["no-such-command"], 2)])
def test_the_command_ends_without_interpreter_teardown(tmp_path, args, code):
    """The installed command (``cli.entry``) ends the process with ``os._exit`` once
    ``main`` is done (no teardown: an atexit handler never runs), its output flushed and its
    exit code kept, usage errors included."""
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: sys.stderr.write('TEARDOWN'))\n"
             f"sys.argv = ['continuation', *{args!r}]\n"
             "from continuation.cli import entry\n"
             "entry()\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=120,
                       env={**os.environ, "CONTINUATION_HOME": str(tmp_path / "h")})
    assert r.returncode == code, r.stderr
    assert b"TEARDOWN" not in r.stderr
    plain = run_cli(*args, home=tmp_path / "h")  # python -m continuation: the same entry
    assert (plain.returncode, plain.stdout, plain.stderr) == (r.returncode, r.stdout, r.stderr)
    if code == 0:
        assert r.stdout.strip()
    else:
        assert r.stderr.strip() and b"Traceback" not in r.stderr


def test_command_table_names_the_module_that_registers_each_command():
    """``commands.COMMANDS`` (which module to import for a command line) agrees with what each
    module registers: every command is listed, with its own module, and nothing else is."""
    import argparse
    import importlib

    from continuation import commands

    registered = {}
    for name in commands.MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"continuation.commands.{name}").register(sub)
        registered.update({command: name for command in sub.choices})
    assert commands.COMMANDS == registered


def test_a_command_line_imports_only_its_own_command_module(tmp_path):
    """`status` registers (imports) the status module only, and `--help` still lists every
    command; an unknown command is still refused with the full list."""
    script = r"""
import json, sys
from continuation.commands import run
code = run(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("continuation.commands."))))
"""
    env = {**os.environ, "CONTINUATION_HOME": str(tmp_path / "h")}
    r = subprocess.run([sys.executable, "-c", script, "status"], capture_output=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.decode().splitlines()[-1]) == ["continuation.commands.output",
                                                              "continuation.commands.redacting",
                                                              "continuation.commands.status"]
    r = run_cli("--help", home=tmp_path / "h")
    assert r.returncode == 0
    for command in ("status", "rewind", "doctor", "install", "import", "capsule"):
        assert command in r.stdout.decode()
    r = run_cli("statsu", home=tmp_path / "h")
    assert r.returncode == 2 and b"invalid choice" in r.stderr and b"rewind" in r.stderr


def test_a_short_command_does_not_import_shutil_and_help_still_fits_the_terminal(tmp_path,
                                                                                 monkeypatch):
    """argparse asks shutil (which imports zlib, bz2 and lzma) for the terminal width each time
    it builds a formatter; the parser answers it from $COLUMNS or the terminal itself, so
    `status` never imports shutil, and help is wrapped exactly as argparse's own width would."""
    script = r"""
import sys
from continuation.commands import run
run(sys.argv[1:])
print("shutil" in sys.modules)
"""
    env = {**os.environ, "CONTINUATION_HOME": str(tmp_path / "h")}
    r = subprocess.run([sys.executable, "-c", script, "status"], capture_output=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines()[-1] == "False"
    from continuation.commands import build_parser

    for columns in ("50", "120"):
        monkeypatch.setenv("COLUMNS", columns)
        parser = build_parser("rewind")
        rewind = parser._subparsers._group_actions[0].choices["rewind"]
        ours = rewind.format_help()
        rewind._get_formatter = lambda p=rewind: p.formatter_class(prog=p.prog)  # argparse's
        assert rewind.format_help() == ours
