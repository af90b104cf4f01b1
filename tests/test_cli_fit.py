"""Every command, and every --help, at an 80-column terminal, on realistic data: 36-character
UUIDs, long prompts and shell commands, 300 changed files, a fork, a killed session
(scripts/cli_session.py builds it). No line is longer than 80 columns. The outputs printed
verbatim (a capsule, a context, a pointer's text, a completion script, JSON) are checked for
being whole instead; docs/commands.md says which they are."""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 80


def _session_module():
    spec = importlib.util.spec_from_file_location("cli_session", ROOT / "scripts" / "cli_session.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cli_session = _session_module()
CLAUDE = f"claude-{cli_session.CLAUDE_SESSION}"
CODEX = f"codex-{cli_session.CODEX_SESSION}"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return cli_session.build_world(tmp_path_factory.mktemp("world-with-a-long-folder-name"))


def run(world, *args, stdin: bytes | None = None):
    return subprocess.run([sys.executable, "-m", "continuation", *args], cwd=world["cwd"],
                          env=world["env"], input=stdin, capture_output=True, timeout=600)


def visible(line: str) -> int:
    from continuation.host.textfit import visible_len

    return visible_len(line)


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if visible(line) > WIDTH]


def _transcript(tmp: Path) -> Path:
    """A Claude Code transcript with long prompts and a long command (for `import`)."""
    sid = "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d"
    rows = []
    for n in range(3):
        rows.append({"type": "user", "sessionId": sid, "uuid": f"u{n}", "parentUuid": None,
                     "promptId": f"1b2c3d4e-5f60-4718-92a3-b4c5d6e7f8{n:02d}",
                     "cwd": str(tmp), "message": {"role": "user",
                                                  "content": cli_session.PROMPTS[n] * 2}})
        rows.append({"type": "assistant", "sessionId": sid, "uuid": f"a{n}",
                     "parentUuid": f"u{n}", "message": {
                         "role": "assistant", "stop_reason": "end_turn",
                         "content": [{"type": "text", "text": "Done. " * 40}]}})
    path = tmp / f"{sid}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


# -- read-only checks on the world (before the commands that change it) --------------------
def _json(world, *args):
    r = run(world, *args)
    assert r.returncode == 0, (args, r.stderr)
    return json.loads(r.stdout)


def test_status_lists_the_newest_threads_first_with_a_limit_and_all_with_all(world):
    """8 threads: `status` shows the 5 most recently active, newest first, the default thread
    marked; `--all` every one; `--json` every one (scripts read it)."""
    text = run(world, "status").stdout.decode()
    shown = [line.split()[1] for line in text.splitlines() if line.startswith("thread ")]
    assert text.splitlines()[0] == "8 threads: the 5 most recently active (`--all` lists every one)"
    assert len(shown) == 5 and shown[0] == CLAUDE
    assert f"thread {CLAUDE}  [default]" in text
    updated = {t["thread"]["thread_key"]: t["thread"]["updated_at"]
               for t in _json(world, "status", "--json")["threads"]}
    assert len(updated) == 8
    assert shown == sorted(updated, key=lambda k: -updated[k])[:5]
    everything = run(world, "status", "--all").stdout.decode()
    assert sum(line.startswith("thread ") for line in everything.splitlines()) == 8
    assert "most recently active" not in everything


def test_inputs_names_its_thread_and_refuses_an_unknown_state(world):
    first = run(world, "inputs").stdout.decode().splitlines()[0]
    assert first == f"thread {CLAUDE}"
    r = run(world, "inputs", "--state", "bogus")
    assert r.returncode == 2 and b"invalid choice: 'bogus'" in r.stderr and r.stdout == b""
    r = run(world, "inputs", "--state", "pendng")
    assert b"did you mean `pending`?" in r.stderr
    pending = run(world, "inputs", "--state", "pending").stdout.decode()
    assert "handled" not in pending and pending.count("pending") == 3


def test_a_fork_name_is_shown_and_selects_the_thread(world):
    fork = _json(world, "status", "--thread", cli_session.FORK_NAME, "--json")["threads"][0]
    assert fork["thread"]["name"] == cli_session.FORK_NAME
    text = run(world, "status", "--thread", cli_session.FORK_NAME).stdout.decode()
    assert f'"{cli_session.FORK_NAME}"' in text.splitlines()[0]
    assert f"fork of {CLAUDE} at event" in text
    assert _json(world, "inputs", "--thread", cli_session.FORK_NAME, "--json")["thread"] == \
        fork["thread"]["thread_key"]
    r = run(world, "fork", "cp-1", "--thread", CLAUDE, "--name", cli_session.FORK_NAME)
    assert r.returncode == 1 and b"already names thread" in r.stderr


def test_a_checkpoint_prefix_of_two_threads_prefers_the_workspace_thread_or_lists_them(world,
                                                                                        tmp_path):
    """Every thread has a cp-1: in the repository, `rewind cp-1` takes the workspace's most
    recently active thread's (stderr names the other); outside any thread's workspace it is
    refused, naming every match."""
    r = run(world, "rewind", "cp-1", "--conversation", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert f"rewind conversation of thread {CLAUDE}" in " ".join(r.stdout.decode().split())
    note = " ".join(r.stderr.decode().split())
    assert "'cp-1' is cp-1-" in note and f"of thread {CLAUDE}, the workspace you are in" in note
    assert "also cp-1-" in note and f"of {CODEX}" in note
    elsewhere = subprocess.run([sys.executable, "-m", "continuation", "rewind", "cp-1",
                                "--conversation", "--dry-run"], cwd=tmp_path, env=world["env"],
                               capture_output=True, timeout=600)
    err = elsewhere.stderr.decode()
    assert elsewhere.returncode == 1 and "'cp-1' matches 2 checkpoints:" in err
    assert f"(thread {CLAUDE})" in err and f"(thread {CODEX})" in err and "--thread" in err


def test_counts_are_totals_of_every_change_and_the_full_list_is_reachable(world):
    """The first checkpoint changed 300 files (200 modified, 100 new): the snapshot's summary
    names only its first 20, the count is the total; --verbose lists all 300."""
    rows = _json(world, "checkpoint", "list", "--json")["checkpoints"]
    assert [r["files_changed"] for r in rows] == [300, 300]
    assert len(rows[0]["files"]) == 20 and rows[0]["files_complete"] is False
    full = _json(world, "checkpoint", "list", "--verbose", "--json")["checkpoints"]
    assert len(full[0]["files"]) == 300 and full[0]["files_complete"] is True
    assert len(full[1]["files"]) == 300
    text = run(world, "checkpoint", "list", "--verbose").stdout.decode()
    assert sum(line.startswith("  src/") for line in text.splitlines()) == 300 + 300
    assert run(world, "checkpoints").stdout == run(world, "checkpoint", "list").stdout


def test_the_rewind_preview_gives_totals_first_and_the_list_behind_verbose(world):
    args = ["rewind", "cp-1", "--files", "--dry-run", "--thread", CLAUDE]
    short = run(world, *args).stdout.decode().splitlines()
    total = next(line for line in short if "file(s) change:" in line)
    assert short.index(total) < next(i for i, line in enumerate(short) if "modify " in line)
    listed = [line for line in short if line.lstrip().startswith(("modify ", "keep ", "unsure "))]
    assert len(listed) == 10 and any("more (--verbose lists every file)" in line for line in short)
    assert len(short) < 60
    full = run(world, *args, "--verbose").stdout.decode().splitlines()
    kinds = ("modify ", "recreate ", "delete ", "mode ", "keep ", "unsure ", "skip ")
    entries = [line for line in full if line.lstrip().startswith(kinds)]
    plan = _json(world, *args, "--json")["plan"]["files"]
    assert len(entries) == sum(len(plan[k]) for k in (
        "modified", "recreated", "deleted", "mode_changes", "kept", "kept_edits", "unsure",
        "skipped")) > 300


def test_one_time_format_one_size_style_one_position(world):
    import re

    texts = {args[0]: run(world, *args).stdout.decode()
             for args in (["checkpoint", "list"], ["recover"], ["events"], ["status"],
                          ["gc", "--dry-run"], ["doctor"])}
    stamps = re.findall(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?\S*", "".join(texts.values()))
    assert stamps and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", s) for s in stamps)
    assert "+00:00" not in "".join(texts.values())
    gc = " ".join(texts["gc"].split())
    assert re.search(r"\(cap \d+\.\d (KiB|MiB|GiB)", gc), gc
    assert re.search(r"uses \d+(\.\d)? (B|KiB|MiB|GiB)", " ".join(texts["doctor"].split()))
    # a checkpoint's place is the event a rewind to it returns to, in every command
    row = _json(world, "checkpoint", "list", "--json", "--thread", CLAUDE)["checkpoints"][0]
    listed = next(line for line in texts["checkpoint"].splitlines() if line.startswith("cp-1-"))
    assert listed.split()[3] == str(row["position"])
    preview = " ".join(run(world, "rewind", "cp-1", "--conversation", "--dry-run", "--thread",
                           CLAUDE).stdout.decode().split())
    assert f"back to event {row['position']}," in preview


def test_recover_lists_without_recording(world):
    before = _json(world, "events", "--thread", CODEX, "--json")["events"]
    listed = _json(world, "recover", "--json")
    assert listed["crash_not_recorded"] == [CODEX] and listed["crash_recorded"] == []
    assert _json(world, "events", "--thread", CODEX, "--json")["events"] == before
    assert [i["state"] for i in _json(world, "inputs", "--thread", CODEX, "--json")["inputs"]] \
        == ["pending"]


#: command lines whose human output must fit (run in this order: the last ones change the home)
FITTED = [
    ["status"], ["status", "--all"], ["status", "--thread", cli_session.FORK_NAME],
    ["inputs"], ["inputs", "--state", "pending"], ["inputs", "--thread", CODEX],
    ["events"], ["events", "--thread", CODEX],
    ["checkpoint", "list"], ["checkpoint", "list", "--verbose"], ["checkpoints"],
    ["rewind", "cp-2", "--files", "--dry-run", "--thread", CLAUDE],
    ["rewind", "cp-1", "--both", "--dry-run", "--thread", CLAUDE],
    ["rewind", "cp-1", "--both", "--dry-run", "--thread", CLAUDE, "--verbose"],
    ["rewind", "cp-1", "--conversation", "--dry-run", "--thread", CLAUDE],
    ["restore", "cp-1", "--dry-run", "--thread", CLAUDE],
    ["drift"], ["drift", "--verbose"],
    ["recover"], ["doctor"], ["gc", "--dry-run"],
    ["install", "--runtime", "claude"], ["uninstall", "--runtime", "claude"],
    ["--version"],
    ["import", "claude", "{transcript}"],
    ["show", "--html", "-o", "{transcript}.html"],
    ["checkpoint", "create"], ["checkpoint", "create", "--thread", CODEX, "--no-snapshot"],
    ["fork", "cp-2", "--thread", CLAUDE, "--name", "second-attempt"],
    ["rewind", "cp-2", "--files", "--yes", "--thread", CLAUDE],
    ["restore", "--undo", "--dry-run", "--thread", CLAUDE],
    ["recover", "--record"], ["reconcile"], ["reconcile", "--thread", CODEX],
    ["recover", "--dismiss", CODEX],
    ["reconcile", "call_4n5m6b7v8c9x0z1a2s3d4f5g", "--not-applied", "--note", "x" * 120],
    ["thread", "delete", "second-attempt", "--yes"],
]
#: printed as they are (the model's text, the user's text, a script, the Mermaid source of the
#: lifecycle diagram): whole, not fitted
VERBATIM = [["capsule", "show"], ["context"], ["source", f"event:{CLAUDE}:1"],
            ["recover", "--resume", CLAUDE], ["completion", "bash"], ["lifecycle"]]


def test_every_command_fits_80_columns(world, tmp_path):
    transcript = _transcript(tmp_path)
    widest = {}
    for args in FITTED:
        args = [a.replace("{transcript}", str(transcript)) for a in args]
        r = run(world, *args)
        out = r.stdout.decode() + r.stderr.decode()
        assert r.returncode in (0, 1) and "Traceback" not in out, (args, out[-2000:])
        assert r.stdout.strip(), args
        assert _too_wide(out) == [], (args, _too_wide(out))
        widest[" ".join(args)] = max(visible(line) for line in out.splitlines())
    # the data is as wide as it claims: unfitted, these lines would not fit
    assert max(widest.values()) >= WIDTH - 2
    wide = run(world, "inputs", "--wide", "--thread", CLAUDE)
    assert max(len(line) for line in wide.stdout.decode().splitlines()) > WIDTH
    assert cli_session.PROMPTS[0] in wide.stdout.decode()  # --wide: whole texts


def test_json_and_verbatim_outputs_are_whole(world):
    for args in (["status", "--json"], ["inputs", "--json"], ["checkpoint", "list", "--json"],
                 ["lifecycle", "--json"], ["source", f"event:{CLAUDE}:1", "--json"],
                 ["events", "--json", "--limit", "3"], ["recover", "--json"]):
        r = run(world, *args)
        assert r.returncode == 0, (args, r.stderr)
        json.loads(r.stdout)
    for args in VERBATIM:
        if args[0] == "completion" and importlib.util.find_spec("shtab") is None:
            continue  # a development environment from before the dependency (test_cli_everyday)
        r = run(world, *args)
        assert r.returncode == 0 and r.stdout.strip(), (args, r.stderr)
    text = run(world, "source", f"event:{CLAUDE}:1").stdout.decode()
    assert text.rstrip("\n") == cli_session.PROMPTS[0] + " (step 1)"  # not wrapped or cut


def _parsers():
    from continuation.commands import build_parser

    todo = [build_parser()]
    while todo:
        parser = todo.pop()
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += list(action.choices.values())


def test_every_help_fits_80_columns_and_every_option_says_what_it_does(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    from continuation.hooks import HELP

    seen = 0
    for parser in _parsers():
        text = parser.format_help()
        assert _too_wide(text) == [], (parser.prog, _too_wide(text))
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction,
                                   argparse._VersionAction)):
                continue
            assert action.help and action.help.strip(), (parser.prog, action.option_strings
                                                          or action.dest)
        seen += 1
    assert seen >= 28  # every command and subcommand
    assert _too_wide(HELP) == []
