"""The commands' output conventions (continuation.commands.output, continuation.host.units):
one time format, one size style, ids shortened to a selectable prefix, tables fitted to the
width, color only for the states that ask for action, only on a terminal, never with NO_COLOR."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from continuation.commands import output
from continuation.host.units import size_text, utc_time


def test_one_time_format_utc_with_z():
    assert utc_time(0) == "1970-01-01 00:00:00Z"
    assert utc_time(1767323045.9) == "2026-01-02 03:04:05Z"
    assert utc_time(None) == "-" and utc_time("garbage") == "-"


@pytest.mark.parametrize("n,text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                                    (1536, "1.5 KiB"), (268435456, "256.0 MiB"),
                                    (1024 ** 2 - 1, "1.0 MiB"), (3 * 1024 ** 3, "3.0 GiB"),
                                    (5 * 1024 ** 4, "5.0 TiB"), (None, "-")])
def test_one_size_style(n, text):
    assert size_text(n) == text


def test_ids_shorten_to_a_prefix_and_paths_keep_their_end():
    key = "claude-0f8a3e6e-9a1b-4c2d-8e3f-1234567890ab"
    assert output.short_id(key) == "claude-0f8a3e6e…" and len(output.short_id(key)) == 16
    assert output.short_id("cp-1-abc") == "cp-1-abc"
    path = "/home/me/projects/app/src/module.py"
    assert output.short_path(path, 20) == "…" + path[-19:] == "…s/app/src/module.py"
    assert output.short_path(path, 80) == path


def _render(rows, columns, monkeypatch, capsys, columns_env="80"):
    monkeypatch.setenv("COLUMNS", columns_env)
    output.table(rows, columns)
    return capsys.readouterr().out.splitlines()


def test_a_table_fits_the_width_by_shrinking_text_then_ids(monkeypatch, capsys):
    rows = [{"input_id": f"0f8a3e6e-9a1b-4c2d-8e3f-1234567890{n:02d}", "state": "pending",
             "text": "please refactor the module " * 20} for n in range(5)]
    columns = [output.Column("input_id", "input", "id"), output.Column("state", "state", "fixed"),
               output.Column("text", "text")]
    lines = _render(rows, columns, monkeypatch, capsys)
    assert max(len(line) for line in lines) == 80
    assert lines[1].startswith("0f8a3e6e-9a1b-4c2d-8e3f-123456789000  pending")  # text gave first
    lines = _render(rows, columns, monkeypatch, capsys, "50")
    assert max(len(line) for line in lines) <= 50
    assert lines[1].split()[0].endswith("…") and "pending" in lines[1]
    monkeypatch.setenv("COLUMNS", "50")
    output.configure(wide=True)
    try:
        output.table(rows, columns)
    finally:
        output.configure(wide=False)
    wide = capsys.readouterr().out.splitlines()
    assert rows[0]["input_id"] in wide[1] and rows[0]["text"].strip() in wide[1]


def test_a_table_never_exceeds_a_very_narrow_width(monkeypatch, capsys):
    rows = [{"a": "x" * 40, "b": "y" * 40, "c": "fixed-value-" * 3}]
    columns = [output.Column("a", "a", "id"), output.Column("b", "b"),
               output.Column("c", "c", "fixed")]
    lines = _render(rows, columns, monkeypatch, capsys, "30")
    assert max(len(line) for line in lines) <= 30


def test_long_lines_wrap_with_an_indent(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "40")
    output.echo("  notice: " + "word " * 30 + "/a/very/long/path/" * 5)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3 and max(len(line) for line in lines) <= 40
    assert all(line.startswith("    ") for line in lines[1:])


COLOR_PROBE = r"""
import sys
from continuation.commands import output
output.table([{"state": "pending", "t": "a"}, {"state": "handled", "t": "b"}],
             [output.Column("state", "state", "fixed"), output.Column("t", "t")])
"""


def _pty_run(env):
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", COLOR_PROBE], stdout=slave, stderr=slave,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


def test_action_states_are_colored_on_a_terminal_only_and_never_with_no_color():
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    on_tty = _pty_run({**env, "TERM": "xterm"})
    assert "\x1b[33mpending" in on_tty
    assert [line for line in on_tty.splitlines() if "handled" in line] == ["handled  b"]
    assert "\x1b[" not in _pty_run({**env, "TERM": "xterm", "NO_COLOR": "1"})
    piped = subprocess.run([sys.executable, "-c", COLOR_PROBE], capture_output=True,
                           env={**env, "TERM": "xterm"}, timeout=60)
    assert b"pending" in piped.stdout and b"\x1b[" not in piped.stdout


@pytest.mark.parametrize("argv,suggestion", [
    (["statsu"], "did you mean `status`?"),
    (["inputs", "--jsno"], "did you mean `--json`?"),
    (["checkpoint", "--reason", "manul"], "did you mean `manual`?"),
    (["rewind", "cp-1", "--both", "--dryrun"], "did you mean `--dry-run`?"),
])
def test_typos_get_did_you_mean(tmp_path, argv, suggestion):
    r = subprocess.run([sys.executable, "-m", "continuation", *argv], capture_output=True,
                       env={**os.environ, "CONTINUATION_HOME": str(tmp_path)}, timeout=120)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert suggestion in err and err.count("\n") == 1, err
