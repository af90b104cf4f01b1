"""The hook command: runtime payloads in, state recorded, fail-open on anything bad."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuation import hooks
from continuation.session.engine import Engine


def feed(runtime: str, payloads) -> list[tuple[str, int]]:
    return [hooks.run(runtime, json.dumps(p).encode()) for p in payloads]


def states_by_text(home, runtime, session):
    with Engine(home) as e:
        t = e.find_thread(runtime, session)
        return {r.text: r.state for r in t.inputs()}


def errors_logged(home: Path) -> str:
    log = home / "logs" / "hooks.log"
    return log.read_text() if log.exists() else ""


@pytest.mark.parametrize("raw", [b"", b"   \n", b"{not json", b"[1,2]", b"\"str\"", b"\xff\xfe",
                                 b'{"hook_event_name": "UserPromptSubmit"}'])
def test_bad_stdin_fails_open(home, raw):
    out, code = hooks.run("codex", raw)
    assert code == 0 and json.loads(out) == {}
    assert "error=" in errors_logged(home)


def test_strict_mode_turns_errors_into_exit_2(home, monkeypatch):
    monkeypatch.setenv("CONTINUATION_STRICT", "1")
    out, code = hooks.run("claude", b"{broken")
    assert code == 2 and json.loads(out) == {}


def test_unknown_events_and_fields_are_ignored(home):
    out, code = hooks.run("claude", json.dumps({
        "hook_event_name": "SomeFutureEvent", "session_id": "s", "new_field": {"x": 1}}).encode())
    assert (out, code) == ("{}", 0)
    out, code = hooks.run("claude", json.dumps({
        "hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt_id": "p1",
        "prompt": "hello", "brand_new_field": [1, 2, 3]}).encode())
    assert code == 0 and errors_logged(home) == ""
    assert states_by_text(home, "claude", "s") == {"hello": "pending"}


def test_ten_megabyte_prompt_is_recorded_whole(home):
    big = "x" * (10 * 1024 * 1024)
    out, code = hooks.run("codex", json.dumps({
        "hook_event_name": "UserPromptSubmit", "session_id": "big", "turn_id": "t",
        "prompt": big}).encode())
    assert code == 0 and errors_logged(home) == ""
    with Engine(home) as e:
        [rec] = e.find_thread("codex", "big").inputs()
        assert rec.text == big


def test_same_payload_twice_admits_once(home):
    p = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt_id": "p1",
         "prompt": "do it"}
    feed("claude", [p, p])
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        assert len(t.inputs()) == 1
        assert [ev["type"] for ev in t.events()] == ["input_admitted"]


def test_codex_steered_inputs_in_one_turn_get_separate_ids(home):
    base = {"session_id": "s", "turn_id": "t1", "cwd": "/tmp"}
    feed("codex", [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "first"},
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "and also this"},
        {**base, "hook_event_name": "Stop", "last_assistant_message": "done both"},
    ])
    with Engine(home) as e:
        rows = e.find_thread("codex", "s").inputs()
        assert len({r.input_id for r in rows}) == 2
        assert {r.state for r in rows} == {"handled"}


def test_stop_message_is_a_claim_not_a_fact(home):
    feed("claude", [
        {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt_id": "p1", "prompt": "a"},
        {"hook_event_name": "PreToolUse", "session_id": "s", "prompt_id": "p1",
         "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_use_id": "tu1"},
        {"hook_event_name": "Stop", "session_id": "s", "prompt_id": "p1",
         "last_assistant_message": "All done, the build passed!"},
    ])
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        assert [c["text"] for c in t.claims()] == ["All done, the build passed!"]
        # the tool call has no outcome: the claim does not make the input handled
        assert [r.state for r in t.inputs()] == ["reconciling"]


def test_codex_fixture_payloads(home, shared_fixtures):
    lines = (shared_fixtures / "codex" / "hook-payloads.jsonl").read_bytes().splitlines()
    for line in lines:
        out, code = hooks.run("codex", line)
        assert code == 0
        json.loads(out)
    assert errors_logged(home) == ""
    with Engine(home) as e:
        [thread] = e.threads()
        states = {r.text: r.state for r in thread.inputs()}
        assert states["append a line to notes.txt"] == "handled"
        # the turn of the second request never completed (the run was killed): the next
        # prompt's new turn cut it, so it is interrupted, not pending on a dead turn
        assert states["append a second line"] == "interrupted"
        assert states["slow task: wait for the build"] == "pending"
        open_calls = [c for c in thread.tool_calls() if c.status == "in_flight"]
        assert [c.args.get("command") for c in open_calls] == ["sleep 30"]
        # 46 executions of the same command were recorded as facts, one per call id
        echo_calls = [c for c in thread.tool_calls()
                      if c.args.get("command") == "echo line >> notes.txt"]
        assert len(echo_calls) == 47  # 1 in the first run + 46 in the second
        thread.crash_detected("owner gone")
        states = {r.text: r.state for r in thread.inputs()}
        assert states == {"append a line to notes.txt": "handled",
                          "append a second line": "interrupted",
                          "slow task: wait for the build": "reconciling"}


def test_claude_fixture_payloads(home, shared_fixtures):
    lines = (shared_fixtures / "claude-real" / "hook-payloads.jsonl").read_bytes().splitlines()
    answers = [hooks.run("claude", line) for line in lines]
    assert all(code == 0 for _, code in answers)
    assert errors_logged(home) == ""
    with Engine(home) as e:
        [thread] = e.threads()
        assert [(r.text, r.state) for r in thread.inputs()] == [
            ("append a line to notes.txt", "handled"),
            ("append a second line", "handled"),
            ("append a third line", "handled"),
        ]
        types = [ev["type"] for ev in thread.events()]
        assert "checkpoint_committed" in types and "context_delivered" in types
    # the compact SessionStart answered with the assembled context
    events = [json.loads(line) for line in lines]
    idx = next(i for i, p in enumerate(events)
               if p["hook_event_name"] == "SessionStart" and p.get("source") == "compact")
    answer = json.loads(answers[idx][0])
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "append a third line" not in answer["hookSpecificOutput"]["additionalContext"]
    assert "append a second line" in answer["hookSpecificOutput"]["additionalContext"]


def test_hook_command_end_to_end_via_subprocess(tmp_path):
    home = tmp_path / "h"
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    p = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt_id": "p1", "prompt": "x"}
    r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "claude"],
                       input=json.dumps(p).encode(), capture_output=True, env=env, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout) == {}
    r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "bogus"],
                       input=b"{}", capture_output=True, env=env, timeout=60)
    assert r.returncode == 2 and b"--runtime" in r.stderr


#: what the hot path never imports: the heavy libraries; what costs start-up time and it does
#: not need (the CLI's argparse, dataclasses (inspect), typing, pathlib, tempfile, and json's
#: Python layer with the re and enum it imports: see continuation.host.jsontext); a PostgreSQL
#: driver on the SQLite store; the commands' output and completion libraries
HOT_PATH_NEVER = ("pydantic", "tiktoken", "git", "transitions", "capsule", "psycopg", "argparse",
                  "rich", "shtab", "argcomplete", "textwrap", "difflib",
                  "cryptography", "keyring", "binascii",  # encryption, when it is off
                  "dataclasses", "typing", "pathlib", "tempfile", "json", "re", "enum",
                  "runpy", "importlib.util")  # the last two: `-m`'s (see default_command)


@pytest.mark.parametrize("runtime", ["codex", "claude"])
def test_hot_path_imports_stay_light(tmp_path, runtime):
    """UserPromptSubmit / PreToolUse / PostToolUse, run by the very command `continuation
    install` writes into the runtime's settings, import none of HOT_PATH_NEVER."""
    from continuation.install import default_command

    home = tmp_path / "h"
    env = {k: v for k, v in os.environ.items() if k != "CONTINUATION_STORE"}
    # -S: no site (the development venv's editable-install hook imports pathlib and re in
    # every interpreter); the source tree on PYTHONPATH, as an installed package would be
    root = str(Path(hooks.__file__).resolve().parents[2])
    command = default_command()
    assert command[:2] == [sys.executable, "-P"]
    command = [command[0], "-S", "-X", "importtime", *command[1:], "hook", "--runtime", runtime]
    base = {"session_id": "s", "turn_id": "t", "prompt_id": "p", "cwd": str(tmp_path)}
    for p in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "rename the module"},
              {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_use_id": "c1"},
              {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_use_id": "c1", "tool_response": "ok"}):
        r = subprocess.run(command, input=json.dumps(p).encode(), capture_output=True, timeout=60,
                           env={**env, "CONTINUATION_HOME": str(home), "PYTHONPATH": root})
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in r.stderr.decode().splitlines()
                    if line.startswith("import time:")}
        assert "continuation.store.sqlite" in imported  # the listing is real
        heavy = sorted(m for m in imported if m in HOT_PATH_NEVER or m.split(".")[0] in HOT_PATH_NEVER)
        assert heavy == [], (p["hook_event_name"], heavy)
        # a workspace without a guard file loads nothing of the recovery loop
        loop = sorted(m for m in imported if m.startswith(("continuation.guard", "continuation.hooks.guarded")))
        assert loop == [], (p["hook_event_name"], loop)
    with Engine(home) as e:
        assert [c.status for c in e.find_thread(runtime, "s").tool_calls()] == ["ok"]
    assert not (home / "logs" / "hooks.log").exists()


def test_a_hook_process_runs_without_cyclic_garbage_collection(monkeypatch):
    """`continuation hook` lives for one payload and ends with os._exit: collections would only
    cost it time (~4 ms of a PreCompact hook), so its handling runs with the collector off."""
    import gc
    import io
    from types import SimpleNamespace

    seen = []

    def run(runtime, raw, ending=False):
        seen.append(gc.isenabled())
        return "{}", 0

    monkeypatch.setattr(hooks, "run", run)
    monkeypatch.setattr(hooks, "end_process", lambda code: None)
    payload = json.dumps({"session_id": "s", "hook_event_name": "PreToolUse"}).encode()
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(payload)))
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert gc.isenabled()
    try:
        assert hooks.main(["--runtime", "claude"]) == 0
        assert seen == [False]
    finally:
        gc.enable()


def test_claude_prompt_typed_mid_turn_shares_prompt_id_but_is_its_own_input(home):
    base = {"session_id": "s", "prompt_id": "p1", "cwd": "/tmp"}
    first = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "run the build"}
    steer = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "and then the tests"}
    feed("claude", [first, steer, steer, first,
                    {**base, "hook_event_name": "Stop", "last_assistant_message": "ok"}])
    with Engine(home) as e:
        rows = e.find_thread("claude", "s").inputs()
        assert [(r.text, r.state) for r in rows] == [("run the build", "handled"),
                                                     ("and then the tests", "handled")]
        assert rows[0].input_id == "p1" and rows[1].input_id != "p1"


def _claude(event, **extra):
    return {"session_id": "s", "cwd": "/tmp", "hook_event_name": event, **extra}


def test_esc_then_a_new_prompt_cuts_the_old_turn_and_the_next_clean_turn_decides_it(home):
    """Claude Code sends no Stop on Esc: the next prompt's turn cuts the old one; an input left
    interrupted was in the context of the next turn that completes cleanly (found in review:
    it stayed actionable forever and became the objective of every later context)."""
    feed("claude", [
        _claude("UserPromptSubmit", prompt_id="p1", prompt="rebuild everything"),
        _claude("PreToolUse", prompt_id="p1", tool_name="Bash", tool_input={"command": "make"},
                tool_use_id="tu1"),
        # Esc: no PostToolUse, no Stop
        _claude("UserPromptSubmit", prompt_id="p2", prompt="never mind, fix the typo"),
    ])
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        assert {r.text: r.state for r in t.inputs()} == {
            "rebuild everything": "reconciling", "never mind, fix the typo": "pending"}
        assert [c.status for c in t.tool_calls()] == ["unknown"]
    feed("claude", [_claude("Stop", prompt_id="p2", last_assistant_message="fixed")])
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        # the reconciling one waits for its decision; it is not swept into p2's completion
        assert {r.text: r.state for r in t.inputs()} == {
            "rebuild everything": "reconciling", "never mind, fix the typo": "handled"}
        t.reconcile("tu1", "not_applied")
        assert {r.text: r.state for r in t.inputs()}["rebuild everything"] == "pending"
    feed("claude", [_claude("UserPromptSubmit", prompt_id="p3", prompt="now rebuild"),
                    _claude("Stop", prompt_id="p3", last_assistant_message="rebuilt")])
    with Engine(home) as e:
        states = {r.text: r.state for r in e.find_thread("claude", "s").inputs()}
        assert states == {"rebuild everything": "handled", "never mind, fix the typo": "handled",
                          "now rebuild": "handled"}


def test_interrupted_input_is_decided_by_the_next_clean_turn_not_a_dirty_one(home):
    feed("codex", [
        {"session_id": "c", "turn_id": "t1", "hook_event_name": "UserPromptSubmit",
         "prompt": "task A"},
        {"session_id": "c", "turn_id": "t1", "hook_event_name": "Interrupt"},
        {"session_id": "c", "turn_id": "t2", "hook_event_name": "UserPromptSubmit",
         "prompt": "continue"},
        {"session_id": "c", "turn_id": "t2", "hook_event_name": "PreToolUse",
         "tool_name": "Bash", "tool_input": {"command": "deploy"}, "tool_use_id": "c2"},
        {"session_id": "c", "turn_id": "t2", "hook_event_name": "Stop"},
    ])
    with Engine(home) as e:
        states = {r.text: r.state for r in e.find_thread("codex", "c").inputs()}
    # t2 ended with `deploy` unknown: "continue" reconciles, "task A" keeps its own state
    assert states == {"task A": "interrupted", "continue": "reconciling"}


def test_mid_turn_prompt_with_a_lone_surrogate_is_admitted(home):
    feed("claude", [
        _claude("UserPromptSubmit", prompt_id="p1", prompt="fix the build"),
        _claude("UserPromptSubmit", prompt_id="p1", prompt="also this emoji \ud83d broken"),
    ])
    assert errors_logged(home) == ""
    with Engine(home) as e:
        texts = [r.text for r in e.find_thread("claude", "s").inputs()]
    assert texts == ["fix the build", "also this emoji \ud83d broken"]


def test_stop_settles_an_open_call_from_the_transcript(home, tmp_path):
    """A call refused by a permission rule gets no PostToolUse (real Claude Code 2.1.332): the
    transcript's tool_result settles it at Stop instead of leaving the input reconciling."""
    transcript = tmp_path / "session.jsonl"
    refused = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu1", "is_error": True,
         "content": "Permission to use Bash has been denied."}]}}
    transcript.write_text(json.dumps({"type": "user", "message": {"content": "fetch"}}) + "\n"
                          + json.dumps(refused) + "\n" + '{"type": "assist', encoding="utf-8")
    base = {"session_id": "s", "prompt_id": "p1", "transcript_path": str(transcript)}
    feed("claude", [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "fetch the page"},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "curl x"}, "tool_use_id": "tu1"},
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "sleep 9"}, "tool_use_id": "tu2"},
        {**base, "hook_event_name": "Stop", "last_assistant_message": "could not fetch"},
    ])
    with Engine(home) as e:
        t = e.find_thread("claude", "s")
        calls = {c.call_id: c.status for c in t.tool_calls()}
        # tu1's refusal is in the transcript; tu2 has no result anywhere: still unknown
        assert calls == {"tu1": "error", "tu2": "unknown"}
        assert [r.state for r in t.inputs()] == ["reconciling"]


def test_codex_function_call_output_gives_the_exit_code(tmp_path):
    from continuation.hooks.outcomes import find_outcomes

    rollout = tmp_path / "rollout.jsonl"
    rows = [{"type": "response_item", "payload": {"type": "function_call_output", "call_id": c,
             "output": f"Chunk ID: x\nProcess exited with code {code}\nOutput:\n"}}
            for c, code in (("call_1", 0), ("call_2", 3))]
    rollout.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    found = find_outcomes(str(rollout), ["call_1", "call_2", "call_9"])
    assert {k: (v["status"], v["exit_code"]) for k, v in found.items()} == {
        "call_1": ("ok", 0), "call_2": ("error", 3)}
    assert find_outcomes(str(tmp_path / "missing.jsonl"), ["call_1"]) == {}
    assert find_outcomes(None, ["call_1"]) == {}


def test_codex_stop_learns_exit_codes_from_the_rollout(home, tmp_path):
    """Codex's PostToolUse carries only output text; the rollout says "Process exited with
    code N": at Stop the failed command becomes an error (the input is handled either way)."""
    rollout = tmp_path / "rollout.jsonl"
    rows = [{"type": "response_item", "payload": {"type": "function_call_output", "call_id": c,
             "output": f"Process exited with code {code}\nOutput:\n"}}
            for c, code in (("c1", 0), ("c2", 3))]
    rollout.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    base = {"session_id": "x", "turn_id": "t1", "transcript_path": str(rollout)}
    feed("codex", [{**base, "hook_event_name": "UserPromptSubmit", "prompt": "run checks"}]
         + [p for c in ("c1", "c2") for p in (
             {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
              "tool_input": {"command": c}, "tool_use_id": c},
             {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
              "tool_input": {"command": c}, "tool_use_id": c, "tool_response": "out"})]
         + [{**base, "hook_event_name": "Stop", "last_assistant_message": "checked"}])
    with Engine(home) as e:
        t = e.find_thread("codex", "x")
        calls = {c.call_id: (c.status, c.outcome.get("exit_code")) for c in t.tool_calls()}
        assert calls == {"c1": ("ok", 0), "c2": ("error", 3)}
        assert [r.state for r in t.inputs()] == ["handled"]
        assert e.store.derived_state(t.key).snapshot() == e.store.replay(t.key).snapshot()


def test_session_start_compact_answers_from_the_stored_rendering(tmp_path):
    """SessionStart(compact) delivers the block stored with the checkpoint: it builds no capsule
    model (no pydantic, tokenizer or GitPython import) and its answer carries the capsule's
    rendering and the pending input verbatim."""
    home = tmp_path / "h"
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    base = {"session_id": "s", "turn_id": "t1", "cwd": str(tmp_path)}
    for p in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "rename the module"},
              {**base, "hook_event_name": "PreCompact", "trigger": "auto"}):
        r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                           input=json.dumps(p).encode(), capture_output=True, env=env, timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    script = r"""
import json, sys
from continuation import hooks
p = {"session_id": "s", "cwd": ".", "hook_event_name": "SessionStart", "source": "compact"}
out, code = hooks.run("codex", json.dumps(p).encode())
heavy = [m for m in ("pydantic", "tiktoken", "git", "capsule.model", "capsule.budget",
                     "dataclasses", "typing", "tempfile") if m in sys.modules]
print(json.dumps({"answer": json.loads(out), "heavy": heavy, "code": code}))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["heavy"] == [] and got["code"] == 0
    text = got["answer"]["hookSpecificOutput"]["additionalContext"]
    with Engine(home) as e:
        from continuation.boundary import checkpoints

        cp = checkpoints.newest_checkpoint(e.find_thread("codex", "s"))
    assert cp.rendered.rstrip("\n") in text
    assert "rename the module" in text.split(cp.rendered.rstrip("\n"))[1]
    assert not (home / "logs" / "hooks.log").exists()


def test_hook_process_ends_without_checkpointing_and_its_fact_is_committed(tmp_path):
    """A hook process ends with os._exit after its answer: the WAL is left for the next
    boundary (closing the last connection would checkpoint it: 5 fdatasync calls per PreToolUse),
    and the fact it recorded is committed - another process reads it."""
    home = tmp_path / "h"
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    base = {"session_id": "s", "turn_id": "t1", "cwd": str(tmp_path)}
    for p in ({**base, "hook_event_name": "UserPromptSubmit", "prompt": "list the files"},
              {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_use_id": "c1"}):
        r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "codex"],
                           input=json.dumps(p).encode(), capture_output=True, env=env, timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    wal = home / "store.sqlite3-wal"
    assert wal.exists() and wal.stat().st_size > 0
    r = subprocess.run([sys.executable, "-c", "import sqlite3, sys\n"
                        "c = sqlite3.connect(sys.argv[1])\n"
                        "print(c.execute('SELECT status FROM tool_calls WHERE call_id=?',"
                        " ('c1',)).fetchone()[0])", str(home / "store.sqlite3")],
                       capture_output=True, timeout=60)
    assert r.stdout.decode().strip() == "in_flight", r.stderr


HOOK_PROCESS = """import json, os, sys
from continuation.store import sqlite
from continuation import hooks
sqlite.WAL_FOLD_BYTES = 64 * 1024  # fold small, so a few processes show the bound
if sys.argv[1] == "never-fold":  # the control: what the store did before leave_open
    sqlite.SqliteStore.leave_open = lambda self: None
out, code = hooks.run("codex", sys.stdin.buffer.read(), ending=True)
sys.stdout.write(out)
sys.stdout.flush()
os._exit(code)
"""


@pytest.mark.parametrize("mode", ["fold", "never-fold"])
def test_hook_processes_left_open_keep_the_wal_bounded(tmp_path, mode):
    """Hook processes end without closing the store, and a process opening it alone rebuilds
    the WAL index (losing what was checkpointed), so SQLite's auto-checkpoint never restarts
    the log: without a fold it grows with every tool call (the control), with one it stays
    under the fold size plus one hook's commit, and every fact is still there."""
    home = tmp_path / "h"
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    base = {"session_id": "s", "turn_id": "t1", "cwd": str(tmp_path)}
    sizes = []
    for n in range(24):
        p = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": f"echo {n}"}, "tool_use_id": f"c{n}"}
        r = subprocess.run([sys.executable, "-c", HOOK_PROCESS, mode],
                           input=json.dumps(p).encode(), capture_output=True, env=env, timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
        sizes.append((home / "store.sqlite3-wal").stat().st_size)
    if mode == "fold":
        assert max(sizes) < 64 * 1024 + 128 * 1024, sizes
        assert min(sizes) == 0, sizes  # folded (checkpointed and truncated) along the way
    else:
        assert all(b > a for a, b in zip(sizes, sizes[1:])), sizes  # grows by every commit
        assert sizes[-1] > 8 * 64 * 1024, sizes
    with Engine(home) as engine:
        calls = engine.store.tool_calls(engine.store.thread("s")["thread_key"])
    assert sorted(c.call_id for c in calls) == sorted(f"c{n}" for n in range(24))


def test_a_long_codex_turn_is_settled_in_one_transaction(home, tmp_path, monkeypatch):
    """A compaction mid-turn reads back the exit codes of every call of the running turn (Codex's
    hooks carry none): dozens at once, committed together, not one durable commit per call; the
    live session's marker is refreshed with them."""
    from continuation.store.sqlite import SqliteStore

    rollout = tmp_path / "rollout.jsonl"
    calls = [f"call_{i}" for i in range(30)]
    rollout.write_text("".join(json.dumps({"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": c,
        "output": f"Exit code: {i % 3}\nOutput:\n"}}) + "\n" for i, c in enumerate(calls)))
    base = {"session_id": "long", "turn_id": "t1", "transcript_path": str(rollout),
            "cwd": str(tmp_path)}
    feed("codex", [{**base, "hook_event_name": "UserPromptSubmit", "prompt": "migrate it all"}]
         + [p for c in calls for p in (
             {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
              "tool_input": {"command": c}, "tool_use_id": c},
             {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
              "tool_input": {"command": c}, "tool_use_id": c, "tool_response": "out"})])
    batches = []
    real_many = SqliteStore.append_many

    def counted(self, key, items, **kw):
        items = list(items)
        batches.append([t for t, _ in items])
        return real_many(self, key, items, **kw)

    monkeypatch.setattr(SqliteStore, "append_many", counted)
    feed("codex", [{**base, "hook_event_name": "PreCompact", "trigger": "auto"}])
    assert [b for b in batches if "tool_exit_code" in b] == [["tool_exit_code"] * 30]
    with Engine(home) as e:
        t = e.find_thread("codex", "long")
        codes = {c.call_id: c.outcome.get("exit_code") for c in t.tool_calls()}
        assert codes == {c: i % 3 for i, c in enumerate(calls)}
        # every exit code came in that one batch (none by a commit of its own)
        assert len(e.store.events_of_types(t.key, ["tool_exit_code"])) == 30
        assert e.store.sessions(t.key)  # the live session's marker


ODD_VALUES = [5, 1.5, True, ["x"], {"p": 1}, "a\x00b", ""]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_odd_field_values_never_cost_an_input_or_a_context(home, tmp_path, runtime, value):
    """A runtime's payload may hold a number, a list or an object where a name or an id is
    expected. The prompt is still admitted (an odd ``prompt_id``: an id derived as for an older
    Claude Code), and a compaction still gets its context (an odd ``model`` or
    ``permission_mode`` recorded earlier had failed every later capsule)."""
    base = {"session_id": "odd", "turn_id": "t1", "cwd": str(tmp_path), "transcript_path": ""}
    answers = feed(runtime, [
        {**base, "hook_event_name": "SessionStart", "source": "startup", "model": value,
         "permission_mode": value},
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "tidy the module",
         "prompt_id": value},
        {**base, "hook_event_name": "PreCompact", "trigger": "auto", "transcript_path": value},
        {**base, "hook_event_name": "SessionStart", "source": "compact", "model": value}])
    assert all(code == 0 for _, code in answers)
    context = json.loads(answers[-1][0])["hookSpecificOutput"]["additionalContext"]
    assert "tidy the module" in context
    assert not (home / "logs" / "hooks.log").exists()
    with Engine(home) as e:
        assert [r.text for r in e.find_thread(runtime, "odd").inputs()] == ["tidy the module"]


_EVENTS = [("UserPromptSubmit", {"prompt": "hello"}), ("PreCompact", {"trigger": "auto"}),
           ("PostCompact", {"compact_summary": "s"}), ("SessionStart", {"source": "compact"}),
           ("SessionStart", {"source": "resume"}), ("Stop", {}), ("SessionEnd", {"reason": "exit"}),
           ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c"}),
           ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"},
                            "tool_use_id": "c", "tool_response": "x"})]
_FIELDS = ["transcript_path", "trigger", "source", "cwd", "turn_id", "prompt_id", "reason",
           "last_assistant_message", "model", "permission_mode", "compact_summary", "prompt",
           "tool_use_id", "call_id", "tool_name", "tool_input", "tool_response", "error",
           "effort", "attachments"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runtime=st.sampled_from(["claude", "codex"]), event=st.sampled_from(_EVENTS),
       field=st.sampled_from(_FIELDS), value=st.sampled_from(ODD_VALUES + [None, -1, 2**70]))
def test_no_hook_fails_on_an_odd_field_value(tmp_path_factory, monkeypatch, runtime, event,
                                             field, value):
    """Whatever type a field arrives with, the hook records what it can and answers: no error
    in the log (where a failing hook's facts would be)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("CONTINUATION_HOME", str(home))
    monkeypatch.setenv("CONTINUATION_CAPSULE_WORKER", "0")
    name, extra = event
    base = {"session_id": "s", "cwd": str(home), "turn_id": "t1", "transcript_path": ""}
    feed(runtime, [{**base, "hook_event_name": "UserPromptSubmit", "prompt": "start"}])
    [(_, code)] = feed(runtime, [{**base, "hook_event_name": name, **extra, field: value}])
    log = home / "logs" / "hooks.log"
    assert code == 0 and not log.exists(), log.read_text()[-600:] if log.exists() else ""
