"""``continuation hook --runtime gemini`` with payloads shaped like Gemini CLI 0.61.0's (the shapes
the e2e test records from the real binary: base fields session_id, transcript_path, cwd,
hook_event_name, timestamp; no prompt, turn or tool-call id)."""
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

SESSION = "8adda938-d7f8-43ee-ab77-7901fc869ba4"


@pytest.fixture
def transcript(tmp_path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(json.dumps({"sessionId": SESSION, "kind": "main"}) + "\n", encoding="utf-8")
    return path


def payload(event: str, transcript: Path, cwd: Path | str = "/tmp", **extra) -> dict:
    return {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(cwd),
            "hook_event_name": event, "timestamp": "2026-12-01T03:13:57.690Z", **extra}


def run(p: dict) -> dict:
    out, code = hooks.run("gemini", json.dumps(p).encode())
    assert code == 0
    return json.loads(out)


def shell(command: str) -> dict:
    return {"tool_name": "run_shell_command", "tool_input": {"command": command, "description": "d"}}


def result(text: str = "Output: (empty)", **extra) -> dict:
    return {"tool_response": {"llmContent": text, "returnDisplay": "", **extra}}


def record_usage(transcript: Path, prompt_tokens: int, model: str = "gemini-2.5-flash") -> None:
    with transcript.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "m", "type": "gemini", "content": "", "model": model,
                             "tokens": {"input": prompt_tokens, "output": 5, "total": prompt_tokens + 5}}) + "\n")


def thread(home):
    engine = Engine(home)
    return engine, engine.find_thread("gemini", SESSION)


def events(home) -> list[dict]:
    engine, t = thread(home)
    with engine:
        return t.events()


def test_prompt_admitted_once_per_turn_without_the_hook_context_before_it(home, transcript):
    run(payload("SessionStart", transcript, source="startup"))
    run(payload("BeforeAgent", transcript, prompt="<hook_context>CTX</hook_context>\n\nappend a line"))
    run(payload("AfterAgent", transcript, prompt="append a line", prompt_response="done", stop_hook_active=False))
    run(payload("BeforeAgent", transcript, prompt="append a line"))  # the same text again: a new prompt
    engine, t = thread(home)
    with engine:
        inputs = t.inputs()
    assert [(r.text, r.turn_id, r.state) for r in inputs] == [
        ("append a line", "prompt-1", "handled"), ("append a line", "prompt-2", "pending")]
    assert inputs[0].input_id != inputs[1].input_id


def test_tool_calls_pair_by_name_and_input_in_any_order(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="two things"))
    run(payload("BeforeTool", transcript, **shell("ls")))
    run(payload("BeforeTool", transcript, **shell("pwd")))
    run(payload("AfterTool", transcript, **shell("pwd"), **result("Output: /tmp")))
    run(payload("AfterTool", transcript, **shell("ls"), **result("Output: a\nExit Code: 2")))
    run(payload("AfterTool", transcript, **shell("whoami"), **result()))  # no BeforeTool seen: ignored
    finished = {e["data"]["call_id"]: (e["data"]["status"], e["data"].get("exit_code"))
                for e in events(home) if e["type"] == "tool_finished"}
    assert finished == {"prompt-1:call-1": ("error", 2), "prompt-1:call-2": ("ok", None)}


def test_tool_error_is_an_error_outcome(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="read it"))
    read = {"tool_name": "read_file", "tool_input": {"file_path": "/nope"}}
    run(payload("BeforeTool", transcript, **read))
    run(payload("AfterTool", transcript, **read,
                **result("File not found", error={"message": "ENOENT", "type": "file_not_found"})))
    run(payload("AfterAgent", transcript, prompt="read it", prompt_response="not there", stop_hook_active=False))
    engine, t = thread(home)
    with engine:
        assert [c.status for c in t.tool_calls()] == ["error"]
        assert [r.state for r in t.inputs()] == ["handled"]


def test_precompress_auto_is_a_boundary_only_when_the_cli_will_compress(home, transcript, tmp_path):
    run(payload("BeforeAgent", transcript, prompt="go"))
    record_usage(transcript, 500_000)  # under half of 1,048,576: Gemini does not compress
    assert run(payload("PreCompress", transcript, trigger="auto")) == {}
    assert not [e for e in events(home) if e["type"] == "boundary"]
    record_usage(transcript, 600_000)
    run(payload("PreCompress", transcript, trigger="auto"))
    assert [e["data"]["trigger"] for e in events(home) if e["type"] == "boundary"] == ["auto"]


def test_precompress_reads_the_threshold_from_the_project_settings(home, transcript, tmp_path):
    project = tmp_path / "project"
    (project / ".gemini").mkdir(parents=True)
    (project / ".gemini" / "settings.json").write_text('{"model": {"compressionThreshold": 0.2}}')
    run(payload("BeforeAgent", transcript, project, prompt="go"))
    record_usage(transcript, 250_000)  # over 0.2 of the window
    run(payload("PreCompress", transcript, project, trigger="auto"))
    assert [e["type"] for e in events(home)].count("boundary") == 1


def test_gemma_has_a_smaller_window(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="go"))
    record_usage(transcript, 130_000, model="gemma-4-31b-it")
    run(payload("PreCompress", transcript, trigger="auto"))
    assert [e["type"] for e in events(home)].count("boundary") == 1


def test_manual_precompress_is_always_a_boundary(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="go"))
    run(payload("AfterAgent", transcript, prompt="go", prompt_response="ok", stop_hook_active=False))
    run(payload("PreCompress", transcript, trigger="manual"))
    assert [e["data"]["trigger"] for e in events(home) if e["type"] == "boundary"] == ["manual"]


def test_after_tool_delivers_the_context_once_after_a_compression(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="do two steps"))
    run(payload("BeforeTool", transcript, **shell("echo one")))
    run(payload("AfterTool", transcript, **shell("echo one"), **result()))
    record_usage(transcript, 900_000)
    run(payload("PreCompress", transcript, trigger="auto"))
    record_usage(transcript, 1_000)
    run(payload("BeforeTool", transcript, **shell("echo two")))
    answer = run(payload("AfterTool", transcript, **shell("echo two"), **result()))
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == "AfterTool"
    assert "CONTINUATION-CHECKPOINT" in out["additionalContext"]
    assert "do two steps" in out["additionalContext"]
    # Delivered: the next tool result and the next prompt carry nothing more.
    run(payload("BeforeTool", transcript, **shell("echo three")))
    assert run(payload("AfterTool", transcript, **shell("echo three"), **result())) == {}
    run(payload("AfterAgent", transcript, prompt="do two steps", prompt_response="done", stop_hook_active=False))
    assert run(payload("BeforeAgent", transcript, prompt="next")) == {}
    assert [e["data"]["via"] for e in events(home) if e["type"] == "context_delivered"] == ["after_tool"]


def test_without_a_tool_after_the_compression_the_next_prompt_carries_it(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="first"))
    record_usage(transcript, 900_000)
    run(payload("PreCompress", transcript, trigger="auto"))
    run(payload("AfterAgent", transcript, prompt="first", prompt_response="ok", stop_hook_active=False))
    answer = run(payload("BeforeAgent", transcript, prompt="second"))
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "CONTINUATION-CHECKPOINT" in answer["hookSpecificOutput"]["additionalContext"]


def test_session_end_mid_turn_interrupts_the_input(home, transcript):
    run(payload("BeforeAgent", transcript, prompt="long job"))
    run(payload("SessionEnd", transcript, reason="exit"))
    engine, t = thread(home)
    with engine:
        assert [r.state for r in t.inputs()] == ["interrupted"]


@pytest.mark.parametrize("event", ["BeforeModel", "AfterModel", "BeforeToolSelection", "Notification"])
def test_events_we_do_not_record_answer_nothing(home, transcript, event):
    assert run(payload(event, transcript, llm_request={"messages": []})) == {}
    assert not (home / "logs" / "hooks.log").exists()


def test_hot_path_and_idle_precompress_imports_stay_light(tmp_path, transcript):
    """BeforeAgent / BeforeTool / AfterTool and a PreCompress that is no boundary (it fires
    before every model request) load no pydantic, tokenizer or GitPython."""
    home = tmp_path / "h"
    script = r"""
import json, sys
from continuation import hooks
base = {"session_id": "s", "cwd": ".", "transcript_path": sys.argv[1], "timestamp": "t"}
tool = {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}
for p in ({**base, "hook_event_name": "BeforeAgent", "prompt": "x"},
          {**base, "hook_event_name": "PreCompress", "trigger": "auto"},
          {**base, "hook_event_name": "BeforeTool", **tool},
          {**base, "hook_event_name": "AfterTool", **tool, "tool_response": {"llmContent": "ok"}}):
    out, code = hooks.run("gemini", json.dumps(p).encode())
    assert code == 0 and out == "{}", out
heavy = [m for m in ("pydantic", "tiktoken", "git", "transitions", "capsule") if m in sys.modules]
print(json.dumps(heavy))
"""
    r = subprocess.run([sys.executable, "-c", script, str(transcript)], capture_output=True, timeout=60,
                       env={**os.environ, "CONTINUATION_HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []
    assert not (home / "logs" / "hooks.log").exists()


def test_hook_command_accepts_gemini(tmp_path, transcript):
    env = {**os.environ, "CONTINUATION_HOME": str(tmp_path / "h")}
    r = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime", "gemini"],
                       input=json.dumps(payload("BeforeAgent", transcript, prompt="hi")).encode(),
                       capture_output=True, env=env, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr


def test_parallel_tool_calls_get_distinct_ids_and_all_close(home, transcript, tmp_path):
    """Gemini runs parallelizable calls at once: their BeforeTool and AfterTool hooks race."""
    run(payload("BeforeAgent", transcript, prompt="read four files"))
    reads = [{"tool_name": "read_file", "tool_input": {"file_path": f"f{i}.py"}} for i in range(4)]
    reads.append(dict(reads[0]))  # the same file read twice in one batch: two calls

    def spawn_all(event, extra):
        env = {**os.environ, "CONTINUATION_HOME": str(home)}
        procs = [subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime", "gemini"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
                 for _ in reads]
        for proc, call in zip(procs, reads):
            proc.stdin.write(json.dumps(payload(event, transcript, **call, **extra)).encode())
            proc.stdin.close()
        assert all(proc.wait(timeout=120) == 0 for proc in procs)

    spawn_all("BeforeTool", {})
    spawn_all("AfterTool", {"tool_response": {"llmContent": "contents"}})
    engine, t = thread(home)
    with engine:
        calls = {c.call_id: c.status for c in t.tool_calls()}
    assert calls == {f"prompt-1:call-{k}": "ok" for k in range(1, 6)}
    assert not (home / "logs" / "hooks.log").exists()


def test_only_a_compaction_that_is_a_boundary_starts_a_capsule_worker_early(monkeypatch):
    """Gemini CLI fires an ``auto`` PreCompress before every model request: a worker started
    for each would import the capsule stack per request. Its boundaries (past the threshold)
    start their own; a manual ``/compress`` and the other runtimes' PreCompact start one early."""
    from continuation import hooks

    started = []
    monkeypatch.setattr(hooks, "_start_capsule_worker", lambda: started.append(True))
    for event, trigger, starts in (("PreCompact", "auto", True), ("PreCompact", "manual", True),
                                   ("PreCompress", "manual", True), ("PreCompress", "auto", False),
                                   ("PreToolUse", None, False), ("BeforeAgent", None, False)):
        started.clear()
        hooks._start_worker_for_payload({"hook_event_name": event, "trigger": trigger})
        assert started == ([True] if starts else []), (event, trigger)


@pytest.mark.parametrize("value", [5, ["x"], "a\x00b", None, True], ids=repr)
def test_an_odd_transcript_path_is_no_transcript_for_precompress(tmp_path, monkeypatch, value):
    """The compression check reads the session file the payload names: a name that cannot be a
    path (a NUL in it raised ValueError) is a session with nothing recorded, not a failure."""
    from continuation import hooks

    monkeypatch.setenv("CONTINUATION_HOME", str(tmp_path / "state"))
    base = {"session_id": "g", "cwd": str(tmp_path), "transcript_path": value, "timestamp": "t"}
    for p in ({**base, "hook_event_name": "BeforeAgent", "prompt": "hi"},
              {**base, "hook_event_name": "PreCompress", "trigger": "auto"}):
        out, code = hooks.run("gemini", json.dumps(p).encode())
        assert code == 0
    assert not (tmp_path / "state" / "logs" / "hooks.log").exists()


_GEMINI_EVENTS = [
    ("BeforeAgent", {"prompt": "hello"}), ("PreCompress", {"trigger": "auto"}),
    ("PreCompress", {"trigger": "manual"}), ("SessionStart", {"source": "startup"}),
    ("SessionStart", {"source": "resume"}), ("AfterAgent", {"prompt_response": "ok"}),
    ("SessionEnd", {"reason": "exit"}),
    ("BeforeTool", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    ("AfterTool", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                   "tool_response": {"llmContent": "x"}})]
_GEMINI_FIELDS = ["transcript_path", "trigger", "source", "cwd", "prompt", "reason", "timestamp",
                  "tool_name", "tool_input", "tool_response", "prompt_response", "stop_hook_active"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.sampled_from(_GEMINI_EVENTS), field=st.sampled_from(_GEMINI_FIELDS),
       value=st.sampled_from([5, 1.5, True, None, ["x"], {"p": 1}, "a\x00b", "", 2**70]))
def test_no_gemini_hook_fails_on_an_odd_field_value(tmp_path_factory, monkeypatch, event, field,
                                                    value):
    """As for the other runtimes (tests/test_hooks.py): whatever type a field arrives with, the
    hook records what it can and answers, with no error in the log."""
    from continuation import hooks

    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("CONTINUATION_HOME", str(home))
    monkeypatch.setenv("CONTINUATION_CAPSULE_WORKER", "0")
    name, extra = event
    base = {"session_id": "g", "cwd": str(home), "transcript_path": "", "timestamp": "t"}
    hooks.run("gemini", json.dumps({**base, "hook_event_name": "BeforeAgent", "prompt": "start"}).encode())
    _, code = hooks.run("gemini", json.dumps({**base, "hook_event_name": name, **extra,
                                               field: value}).encode())
    log = home / "logs" / "hooks.log"
    assert code == 0 and not log.exists(), log.read_text()[-600:] if log.exists() else ""
