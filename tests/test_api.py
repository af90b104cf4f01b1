"""continuation.api: the Python API for agent harnesses (the hooks' engine, in process)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from continuation import hooks
from continuation.api import Continuation, open_thread
from continuation.session.engine import Engine

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Use it from Python (agent harnesses)"


def readme_blocks(section: str) -> list[tuple[str, str]]:
    """(language, code) of each fenced block in a README section."""
    text = README.read_text(encoding="utf-8")
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    body = text[start:end if end != -1 else None]
    return re.findall(r"^```(\w*)\n(.*?)^```$", body, flags=re.S | re.M)


def test_readme_example_runs_and_prints_what_the_readme_says(tmp_path):
    blocks = readme_blocks(SECTION)
    code = next(c for lang, c in blocks if lang == "python")
    expected = next(c for lang, c in blocks if lang == "text")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUATION_")}
    env.update(TMPDIR=str(tmp_path), HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    # it really used the state home it made (under TMPDIR), not the user's
    assert list(tmp_path.glob("*/store.sqlite3"))
    assert not (tmp_path / ".local" / "state").exists()


def _events(home, runtime, session):
    with Engine(home) as e:
        t = e.find_thread(runtime, session)
        return [(x["type"], {k: v for k, v in x["data"].items()
                             if k not in ("started_at", "detected_at")})
                for x in t.events()], {r.input_id: r.state for r in t.inputs()}


def test_api_records_what_the_hook_command_records(tmp_path):
    """One code path: a session through the API and the same session through `continuation
    hook` payloads leave the same facts and the same states."""
    api_home, hook_home = tmp_path / "api", tmp_path / "hook"
    with open_thread("s", home=api_home, runtime="claude") as t:
        t.admit("build it", input_id="p1")
        t.tool_intent("tu1", "TodoWrite", {"todos": [{"content": "build", "status": "pending"}]})
        t.tool_outcome("tu1", output="ok")
        t.tool_intent("tu2", "Bash", {"command": "make"})
        t.tool_outcome("tu2", ok=False, exit_code=2)
        t.turn_completed(claim="Built (claim).")
        t.admit("deploy it", input_id="p2")
        t.tool_intent("tu3", "Bash", {"command": "deploy"})
        t.admit("stop, fix the typo", input_id="p3")  # cuts the running turn
        t.turn_aborted("user_interrupt")
    base = {"session_id": "s"}
    payloads = [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt_id": "turn:p1",
         "prompt": "build it"},
        {**base, "hook_event_name": "PreToolUse", "prompt_id": "turn:p1", "tool_use_id": "tu1",
         "tool_name": "TodoWrite",
         "tool_input": {"todos": [{"content": "build", "status": "pending"}]}},
        {**base, "hook_event_name": "PostToolUse", "prompt_id": "turn:p1", "tool_use_id": "tu1",
         "tool_response": {"is_error": False, "output": "ok"}},
        {**base, "hook_event_name": "PreToolUse", "prompt_id": "turn:p1", "tool_use_id": "tu2",
         "tool_name": "Bash", "tool_input": {"command": "make"}},
        {**base, "hook_event_name": "PostToolUse", "prompt_id": "turn:p1", "tool_use_id": "tu2",
         "tool_response": {"is_error": True, "exit_code": 2}},
        {**base, "hook_event_name": "Stop", "prompt_id": "turn:p1",
         "last_assistant_message": "Built (claim)."},
        {**base, "hook_event_name": "UserPromptSubmit", "prompt_id": "turn:p2",
         "prompt": "deploy it"},
        {**base, "hook_event_name": "PreToolUse", "prompt_id": "turn:p2", "tool_use_id": "tu3",
         "tool_name": "Bash", "tool_input": {"command": "deploy"}},
        {**base, "hook_event_name": "UserPromptSubmit", "prompt_id": "turn:p3",
         "prompt": "stop, fix the typo"},
        {**base, "hook_event_name": "StopFailure", "prompt_id": "turn:p3",
         "error": "user_interrupt"},
    ]
    env_home = os.environ.get("CONTINUATION_HOME")
    os.environ["CONTINUATION_HOME"] = str(hook_home)
    try:
        for p in payloads:
            assert hooks.run("claude", json.dumps(p).encode()) == ("{}", 0)
    finally:
        if env_home is None:
            del os.environ["CONTINUATION_HOME"]
        else:
            os.environ["CONTINUATION_HOME"] = env_home
    api_events, api_states = _events(api_home, "claude", "s")
    hook_events, hook_states = _events(hook_home, "claude", "s")
    # the hooks name inputs by prompt_id (= the turn here); the API by the harness's id
    hook_states = {k.removeprefix("turn:"): v for k, v in hook_states.items()}
    assert api_states == hook_states == {"p1": "handled", "p2": "reconciling",
                                         "p3": "interrupted"}
    strip = lambda evs: [(t, {k: v for k, v in d.items() if k != "input_id"}) for t, d in evs]
    assert strip(api_events) == strip(hook_events)
    assert [t for t, _ in api_events].count("plan_updated") == 1


def test_admission_is_exactly_once_by_id(tmp_path):
    with open_thread("s", home=tmp_path) as t:
        first = t.admit("add a line", input_id="m1")
        t.turn_completed()
        seq = t._thread.row["last_seq"]
        again = t.admit("add a line (edited text, same id)", input_id="m1")
        assert (first.duplicate, again.duplicate) == (False, True)
        assert again.state == "handled" and again.turn_id == first.turn_id
        assert t._thread.row["last_seq"] == seq  # nothing recorded, no turn cut
        assert [(i.input_id, i.text) for i in t.inputs()] == [("m1", "add a line")]
        # without ids: each admission is a new input in a new turn
        a, b = t.admit("same text"), t.admit("same text")
        assert a.input_id != b.input_id and a.turn_id != b.turn_id
    # a new process (here: a new engine) sees the same ids
    with open_thread("s", home=tmp_path) as t:
        assert t.admit("add a line", input_id="m1").duplicate


def test_steer_joins_the_running_turn_and_a_new_prompt_cuts_it(tmp_path):
    with open_thread("s", home=tmp_path) as t:
        first = t.admit("run the build", input_id="a")
        steer = t.admit("and the tests", input_id="b", steer=True)
        assert steer.turn_id == first.turn_id
        t.tool_intent("c1", "Bash", {"command": "make test"})
        t.admit("forget it, fix the typo", input_id="c")  # the build turn is cut mid-call
        assert {i.input_id: i.state for i in t.inputs()} == {
            "a": "reconciling", "b": "reconciling", "c": "pending"}
        t.turn_completed()
        assert t.input("c").state == "handled"
        assert [r.call_id for r in t.pending_reconciliations()] == ["c1"]
        t.reconcile("c1", "applied")
        assert t.pending_reconciliations() == []
        assert t.input("a").state != "reconciling"


def test_a_claim_never_marks_an_input_handled(tmp_path):
    with open_thread("s", home=tmp_path) as t:
        t.admit("deploy", input_id="d")
        t.claim("Deployed! All done.")
        t.turn_aborted("user_interrupt")
        assert t.input("d").state == "interrupted"
        assert [c["text"] for c in t._thread.claims()] == ["Deployed! All done."]


def test_checkpoint_then_context_offers_only_what_is_open(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with open_thread("s", home=tmp_path / "home", workspace=work) as t:
        t.admit("append a line to notes.txt", input_id="m1")
        t.tool_intent("c1", "Bash", {"command": "echo line >> notes.txt"})
        t.tool_outcome("c1", exit_code=0)
        t.turn_completed()
        t.admit("now write the docs\nwith <<<markers>>>", input_id="m2")
        cp = t.checkpoint()
        assert cp.generation == 1 and t._thread.row["needs_context"]
        ctx = t.context(instructions="INSTRUCTIONS FIRST")
        assert not t._thread.row["needs_context"]
        assert ctx.checkpoint_id == cp.checkpoint_id and ctx.problems == ()
        assert [(m.kind, m.input_id, m.state) for m in ctx] == [
            ("instructions", None, None), ("capsule", None, None),
            ("actionable_input", "m2", "pending")]
        assert ctx.messages[0].text == "INSTRUCTIONS FIRST"
        assert ctx.messages[2].text == "now write the docs\nwith <<<markers>>>"
        assert "append a line to notes.txt" not in "".join(
            m.text for m in ctx if m.kind == "actionable_input")
        assert ctx.text().startswith("INSTRUCTIONS FIRST\n\n<<<CONTINUATION-CHECKPOINT ")
        delivered = t._thread.store.events_of_types(t.key, ["context_delivered"])
        assert [e["data"]["via"] for e in delivered] == ["api"]


def test_admit_after_an_undelivered_checkpoint_carries_the_context(tmp_path):
    """As the prompt hook does when the compact SessionStart was lost."""
    with open_thread("s", home=tmp_path) as t:
        t.admit("first task", input_id="m1")
        t.checkpoint()
        got = t.admit("second task", input_id="m2")
        assert got.context is not None
        kinds = [(m.kind, m.input_id) for m in got.context]
        assert kinds == [("capsule", None), ("actionable_input", "m1")]  # m2 itself: not repeated
        assert not t._thread.row["needs_context"]
        assert t.admit("third task", input_id="m3").context is None


CRASHER = textwrap.dedent("""
    import os, signal, sys
    from continuation.api import open_thread
    t = open_thread("crashy", home=sys.argv[1], workspace=sys.argv[2])
    t.admit("deploy to staging", input_id="m1")
    t.tool_intent("call-9", "Bash", {"command": "./deploy.sh staging"})
    os.kill(os.getpid(), signal.SIGKILL)  # dies mid tool call, no outcome, no end
""")


@pytest.mark.skipif(os.name == "nt", reason="SIGKILL")
def test_recover_after_the_owner_died_mid_tool_call(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-c", CRASHER, str(tmp_path / "h"), str(work)],
                          capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with Continuation(tmp_path / "h") as c:
        t = c.open_thread("crashy", workspace=work)
        assert t.input("m1").state == "pending"  # nothing knows it died yet
        rec = t.recover()
        assert rec.crash_recorded and "gone" in (rec.reason or "")
        assert [(i.input_id, i.state) for i in rec.inputs] == [("m1", "reconciling")]
        [item] = rec.reconciliations
        assert (item.call_id, item.classification.kind) == ("call-9", "external")
        assert t.recover().crash_recorded is False  # recorded once
        ctx = t.context()
        assert "call-9" in ctx.text()  # the reconciliation prompt reaches the next context
        t.reconcile("call-9", "not_applied", "deploy.sh never ran")
        assert t.input("m1").state == "pending" and t.pending_reconciliations() == []


def test_recover_leaves_a_live_or_clean_thread_alone(tmp_path):
    with Continuation(tmp_path) as c:
        t = c.open_thread("s")
        t.admit("task", input_id="m1")
        rec = t.recover()  # this process is the owner, and it is alive
        assert (rec.crash_recorded, rec.reason) == (False, None)
        assert [i.input_id for i in rec.inputs] == ["m1"]
        assert t.input("m1").state == "pending"


def test_end_cuts_a_running_turn_and_closes_the_session(tmp_path):
    with open_thread("s", home=tmp_path) as t:
        t.admit("task", input_id="m1")
        t.end("exit")
        assert t.input("m1").state == "interrupted"
        assert all(s["ended_at"] for s in t._thread.store.sessions(t.key))


@pytest.mark.parametrize("call", [
    lambda t: t.admit("x", input_id=""),
    lambda t: t.tool_intent("", "Bash"),
    lambda t: t.tool_outcome(""),
    lambda t: t.reconcile("c", "maybe"),
    lambda t: t.checkpoint("whenever"),
])
def test_bad_arguments_raise_value_errors(tmp_path, call):
    with open_thread("s", home=tmp_path) as t:
        with pytest.raises(ValueError):
            call(t)


def test_recording_stays_light(tmp_path):
    """Per-event calls load no pydantic, tokenizer or GitPython (as the hook hot path)."""
    script = textwrap.dedent("""
        import json, sys
        from continuation.api import open_thread
        with open_thread("s", home=sys.argv[1]) as t:
            t.admit("x", input_id="m1")
            t.tool_intent("c1", "Bash", {"command": "ls"})
            t.tool_outcome("c1", exit_code=0)
            t.turn_completed(claim="done")
        print(json.dumps([m for m in ("pydantic", "tiktoken", "git", "capsule")
                          if m in sys.modules]))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_bench_api_script_measures_both_paths(tmp_path):
    """scripts/bench_api.py (the per-event cost measurement) runs and reports both paths."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_api.py"
    done = subprocess.run([sys.executable, str(script), "--events", "400", "--calls", "6",
                           "--hook-runs", "1", "--json"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["events_in_store"] > 400
    assert report["api_ms_per_event"] > 0 and report["hook_process_ms_per_event"] > 0
    assert report["ratio"] == pytest.approx(report["hook_process_ms_per_event"]
                                            / report["api_ms_per_event"], rel=0.05, abs=0.1)


def test_adapters_name_their_extra_when_the_sdk_is_missing():
    script = textwrap.dedent("""
        import sys
        sys.modules["agents"] = None           # as if the extra were not installed
        sys.modules["claude_agent_sdk"] = None
        errors = []
        try:
            import continuation.adapters.openai_agents
        except ImportError as exc:
            errors.append(str(exc))
        from continuation.adapters.claude_agent_sdk import continuation_hooks
        try:
            continuation_hooks(home=sys.argv[1])
        except ImportError as exc:
            errors.append(str(exc))
        print("\\n".join(errors))
    """)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", script, tmp], capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "continuation.adapters.openai_agents needs openai-agents: "
        "pip install 'continuation-engine[openai-agents]'",
        "continuation_hooks needs claude-agent-sdk: "
        "pip install 'continuation-engine[claude-agent-sdk]'"]
