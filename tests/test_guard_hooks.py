"""The recovery loop through ``continuation hook --runtime claude|codex|gemini``: each runtime's
payload shapes (``continuation.prove.payloads``, modelled on the real CLIs' payloads) and the
answer fields that reach its model (docs/runtimes.md): a tool result's added context after a
call, a turn-end ``block`` that sends the turn back to work, ``continue: false`` that stops it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from continuation.guard.config import GuardConfig, write
from continuation.prove.payloads import PayloadShape
from continuation.session.engine import Engine
from workspace_repos import git_home, make_repo  # noqa: F401  (fixture)

CHECK = "grep -q good app.txt || { echo 'FAILED test_app: app.txt lost its good line'; exit 1; }"
RUNTIMES = ("claude", "codex", "gemini")
EDIT = {"claude": "Edit", "codex": "apply_patch", "gemini": "replace"}


@pytest.fixture
def ws(tmp_path, git_home, monkeypatch):
    monkeypatch.setenv("CONTINUATION_HOME", str(git_home))
    monkeypatch.delenv("CONTINUATION_STRICT", raising=False)
    remote = tmp_path / "remote.log"
    return make_repo(tmp_path / "ws", {"app.txt": "good\n",
                                       "deploy.sh": f"#!/bin/sh\necho deployed >> {remote}\n"})


class Session:
    def __init__(self, runtime: str, root, sid: str = "sess-1"):
        self.runtime = runtime
        self.root = root
        self.shape = PayloadShape(runtime, sid, str(root), str(root.parent / f"{sid}.jsonl"))
        self.turn = None
        self.calls = 0

    def hook(self, payload: dict) -> dict:
        done = subprocess.run([sys.executable, "-m", "continuation", "hook", "--runtime",
                               self.runtime], input=json.dumps(payload).encode(),
                              capture_output=True, timeout=120, env={**os.environ,
                                                                     "CONTINUATION_STRICT": "1"})
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        return json.loads(done.stdout)

    def start(self) -> dict:
        return self.hook(self.shape.session_start("startup"))

    def prompt(self, text: str, turn: str) -> dict:
        self.turn = turn
        return self.hook(self.shape.user_prompt(turn, text))

    def edit(self, text: str) -> dict:
        self.calls += 1
        call = f"call_{self.calls}"
        args = {"file_path": str(self.root / "app.txt"), "old_string": "", "new_string": text}
        if self.runtime == "codex":
            args = {"input": "*** Begin Patch\n*** Update File: app.txt\n*** End Patch"}
        assert self.hook(self.shape.pre_tool(self.turn, call, EDIT[self.runtime], args)) == {}
        (self.root / "app.txt").write_text(text, encoding="utf-8")
        return self.hook(self.shape.post_tool(self.turn, call, EDIT[self.runtime], args, "ok"))

    def shell(self, command: str) -> dict:
        self.calls += 1
        call = f"call_{self.calls}"
        args = {"command": command}
        assert self.hook(self.shape.pre_tool(self.turn, call, "Bash", args)) == {}
        done = subprocess.run(command, shell=True, cwd=self.root, capture_output=True, text=True)
        return self.hook(self.shape.post_tool(self.turn, call, "Bash", args, done.stdout,
                                              ok=done.returncode == 0))

    def stop(self, message: str = "done") -> dict:
        return self.hook(self.shape.stop(self.turn, message, prompt="work"))

    def thread(self):
        engine = Engine()
        return engine, engine.find_thread(self.runtime, self.shape.session_id)


def _states(s: Session) -> list[str]:
    engine, th = s.thread()
    try:
        return [i.state for i in th.inputs()]
    finally:
        engine.close()


def _types(s: Session, etype: str) -> list[dict]:
    engine, th = s.thread()
    try:
        return [e["data"] for e in th.events() if e["type"] == etype]
    finally:
        engine.close()


def _context(answer: dict, runtime: str) -> str:
    out = answer.get("hookSpecificOutput") or {}
    assert out.get("hookEventName") == ("AfterTool" if runtime == "gemini" else "PostToolUse")
    return out["additionalContext"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_after_each_change_a_report_then_a_rewind_reach_the_model(ws, runtime):
    write(str(ws), GuardConfig(CHECK, when="change", failures_before_rewind=2))
    s = Session(runtime, ws)
    assert "systemMessage" not in s.start()  # the baseline passed
    s.prompt("improve the app", "t1")
    assert s.edit("good and better\n") == {}  # passed: nothing to say
    report = s.edit("broken\n")
    assert "FAILED test_app" in _context(report, runtime) and "the agent was told" in report["systemMessage"]
    rewind = s.shell("sh deploy.sh")
    text = _context(rewind, runtime)
    assert "put back automatically" in text and "app.txt (restored)" in text
    assert "sh deploy.sh" in text and "OUTSIDE the workspace" in text
    assert (ws / "app.txt").read_text() == "good and better\n"
    assert (ws.parent / "remote.log").read_text() == "deployed\n"
    assert s.stop() == {}  # the files pass again and nothing changed since: the turn ends
    assert _states(s) == ["handled"]
    delivered = _types(s, "guard_delivered")
    assert [(d["action"], d["via"]) for d in delivered] == [("report", "tool_context"),
                                                           ("rewind", "tool_context")]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_at_a_turns_end_the_turn_is_sent_back_with_the_summary(ws, runtime):
    write(str(ws), GuardConfig(CHECK, failures_before_rewind=1))
    s = Session(runtime, ws)
    s.start()
    s.prompt("improve the app", "t1")
    assert s.edit("broken\n") == {}  # "turn": the check waits for the turn's end
    answer = s.stop("Improved it.")
    assert answer["decision"] == "block" and "put back automatically" in answer["reason"]
    assert (ws / "app.txt").read_text() == "good\n"
    assert _states(s) == ["pending"]  # the turn goes on
    if runtime == "gemini":
        # Gemini CLI sends a turn-end block's reason as the next request, and BeforeAgent fires
        # with it: the loop's own words are not the user's input
        assert s.hook(s.shape.user_prompt("t1", answer["reason"])) == {}
        assert len(_states(s)) == 1
    s.edit("good, better\n")
    assert s.stop("Improved it, carefully.") == {}
    assert _states(s) == ["handled"]
    verdicts = [v["action"] for v in _types(s, "guard_verdict")]
    assert verdicts == ["pass", "rewind", "pass"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_policy_halt_stops_the_agent_and_tells_the_user(ws, runtime):
    write(str(ws), GuardConfig(CHECK, policy="halt"))
    s = Session(runtime, ws)
    s.start()
    s.prompt("improve the app", "t1")
    s.edit("broken\n")
    answer = s.stop()
    assert answer["continue"] is False and "The agent was stopped" in answer["systemMessage"]
    assert answer["stopReason"] and "decision" not in answer
    assert _states(s) == ["interrupted"]
    # the stop reached only the user; the next prompt tells the model, once
    told = s.prompt("why did you stop? fix it", "t2")
    out = told["hookSpecificOutput"]
    assert out["hookEventName"] == ("BeforeAgent" if runtime == "gemini" else "UserPromptSubmit")
    assert "Your previous turn was stopped" in out["additionalContext"]
    assert "The agent was stopped" in out["additionalContext"]
    assert "FAILED test_app" in out["additionalContext"]
    assert "guard" not in json.dumps(s.prompt("thanks", "t3"))
    vias = [d["via"] for d in _types(s, "guard_delivered")]
    assert vias == ["stop_reason", "prompt_context"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_broken_guard_file_is_told_at_the_turns_end_and_changes_nothing(ws, runtime):
    (ws / ".continuation").mkdir()
    (ws / ".continuation" / "guard.json").write_text('{"command": "x", "polcy": "halt"}')
    s = Session(runtime, ws)
    assert "unknown setting 'polcy'" in s.start()["systemMessage"]
    s.prompt("work", "t1")
    assert s.edit("broken\n") == {}
    assert "the guard is off" in s.stop()["systemMessage"]
    assert _states(s) == ["handled"]


def test_a_failing_loop_never_costs_the_turn_its_completion(ws, home, monkeypatch):
    """The loop itself failing (here: its checkpoint) is logged and told; the hook still
    records the turn's end (fail open)."""
    from continuation import hooks
    from continuation.guard import loop

    write(str(ws), GuardConfig(CHECK))

    def broken(self):
        raise OSError("no room for the snapshot")

    s = Session("claude", ws)
    s.start()
    s.prompt("improve the app", "t1")
    s.edit("good, better\n")
    monkeypatch.setattr(loop.Loop, "_good_checkpoint", broken)
    out, code = hooks.run("claude", json.dumps(s.shape.stop("t1", "done")).encode())
    assert code == 0 and "the recovery loop failed (OSError" in json.loads(out)["systemMessage"]
    assert _states(s) == ["handled"]
    assert "no room for the snapshot" in (home / "logs" / "hooks.log").read_text()


def test_what_the_user_reads_hides_secret_looking_tokens_the_model_gets_it_all(ws):
    token = "ghp_" + "a1B2" * 10
    write(str(ws), GuardConfig(f"echo 'token {token}'; exit 1", policy="halt"))
    s = Session("claude", ws)
    s.start()
    s.prompt("work", "t1")
    s.edit("broken\n")
    answer = s.stop()
    assert token not in answer["systemMessage"] and "[redacted: GitHub token]" in answer["systemMessage"]
    assert token in _types(s, "guard_ran")[-1]["output"]  # stored as it was


@pytest.mark.skipif(sys.platform == "win32", reason="signals")
def test_a_hook_the_runtime_ends_mid_check_leaves_no_check_running(ws):
    """The runtime ends a hook past its own timeout with SIGKILL (a guard file written by
    hand can ask for more time than the runtime gives): the check ends with it, and the
    next turn's end runs the check again."""
    import signal

    from test_guard_parts import _alive, _gone, _pid_from

    pidfile = ws.parent / "check.pid"
    write(str(ws), GuardConfig(CHECK))
    s = Session("claude", ws)
    s.start()
    write(str(ws), GuardConfig(f"sleep 300 & echo $! > {pidfile}; wait", timeout=600))
    s.prompt("improve the app", "t1")
    s.edit("good, better\n")
    hook = subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime", "claude"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    hook.stdin.write(json.dumps(s.shape.stop("t1", "done", prompt="work")).encode())
    hook.stdin.close()
    try:
        pid = _pid_from(pidfile, within=60)
        assert _alive(pid)
        hook.send_signal(signal.SIGKILL)
        hook.wait(10)
        assert _gone(pid), "the check outlived the hook the runtime ended"
    finally:
        hook.kill()
        hook.wait()
    write(str(ws), GuardConfig(CHECK))
    s.prompt("go on", "t2")
    assert s.stop("done") == {}
    assert [v["action"] for v in _types(s, "guard_verdict")] == ["pass", "pass"]


def _started(s: Session, payload: dict) -> subprocess.Popen:
    hook = subprocess.Popen([sys.executable, "-m", "continuation", "hook", "--runtime", s.runtime],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "CONTINUATION_STRICT": "1"})
    hook.stdin.write(json.dumps(payload).encode())
    hook.stdin.close()
    return hook


def _answer(hook: subprocess.Popen) -> dict:
    assert hook.wait(120) == 0
    return json.loads(hook.stdout.read())


def test_parallel_calls_hooks_rewind_once_and_undo_takes_it_back(ws):
    """Claude Code runs the PostToolUse hooks of parallel calls at once: one check and one
    rewind, not two (the second a no-op that `restore --undo` would undo instead of the first)."""
    (ws / "b.txt").write_text("b\n")
    write(str(ws), GuardConfig(CHECK + "; sleep 1", when="change", failures_before_rewind=1))
    s = Session("claude", ws)
    s.start()
    s.prompt("improve the app", "t1")
    calls = {"c1": ("app.txt", "broken\n"), "c2": ("b.txt", "b, the agent's\n")}
    for call, (name, text) in calls.items():
        args = {"file_path": str(ws / name), "content": text}
        assert s.hook(s.shape.pre_tool("t1", call, "Write", args)) == {}
        (ws / name).write_text(text)
    hooks = [_started(s, s.shape.post_tool("t1", call, "Write",
                                           {"file_path": str(ws / name), "content": text}, "ok"))
             for call, (name, text) in calls.items()]
    answers = [_answer(h) for h in hooks]
    told = [a["hookSpecificOutput"]["additionalContext"] for a in answers if a]
    assert len(told) == 1 and "put back automatically" in told[0]
    assert [v["action"] for v in _types(s, "guard_verdict")] == ["pass", "rewind"]
    assert len(_types(s, "guard_ran")) == 2
    assert (ws / "app.txt").read_text() == "good\n"
    done = subprocess.run([sys.executable, "-m", "continuation", "restore", "--undo", "--yes",
                           "--thread", "claude-sess-1"], capture_output=True, text=True, cwd=ws)
    assert done.returncode == 0, done.stderr
    assert [(ws / n).read_text() for n in ("app.txt", "b.txt")] == ["broken\n", "b, the agent's\n"]


def test_a_change_made_while_the_check_ran_is_checked_after_it(ws):
    """A call that finishes while another call's check runs (a Bash beside an Edit) changed
    files the check may have read already: its change is checked by the next run, not
    taken as covered because the call started before the check."""
    started = ws.parent / "check-started"
    (ws / "b.txt").write_text("b good\n")
    check = f"grep -q good b.txt && grep -q good app.txt && touch {started} && sleep 2"
    write(str(ws), GuardConfig(check, when="change", failures_before_rewind=2))
    s = Session("claude", ws)
    s.start()
    started.unlink()  # the baseline's run
    s.prompt("improve the app", "t1")
    edit = {"file_path": str(ws / "app.txt"), "content": "good, better\n"}
    bash = {"command": "sed -i s/good/bad/ b.txt"}
    s.hook(s.shape.pre_tool("t1", "c1", "Write", edit))
    s.hook(s.shape.pre_tool("t1", "c2", "Bash", bash))
    (ws / "app.txt").write_text("good, better\n")
    first = _started(s, s.shape.post_tool("t1", "c1", "Write", edit, "ok"))
    for _ in range(600):
        if started.exists():
            break
        time.sleep(0.05)
    (ws / "b.txt").write_text("b bad\n")  # the Bash call's effect, after the check read b.txt
    assert _answer(first) == {}  # the check passed: it read b.txt before
    after = s.hook(s.shape.post_tool("t1", "c2", "Bash", bash, ""))
    assert "the agent was told" in after["systemMessage"]
    assert [v["action"] for v in _types(s, "guard_verdict")] == ["pass", "pass", "report"]


def test_a_rewind_names_the_submodule_files_it_cannot_put_back(ws):
    """Snapshots never descend into a submodule: an agent's write there stays after a rewind,
    and the summary says so rather than calling every effect undone."""
    from workspace_repos import git

    lib = make_repo(ws.parent / "lib-src", {"lib.txt": "lib good\n"})
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(ws, "commit", "-qm", "lib")
    write(str(ws), GuardConfig(CHECK, failures_before_rewind=1))
    s = Session("claude", ws)
    s.start()
    s.prompt("improve the app", "t1")
    args = {"file_path": str(ws / "lib" / "lib.txt"), "content": "lib, the agent's\n"}
    s.hook(s.shape.pre_tool("t1", "c-lib", "Write", args))
    (ws / "lib" / "lib.txt").write_text("lib, the agent's\n")
    s.hook(s.shape.post_tool("t1", "c-lib", "Write", args, "ok"))
    s.edit("broken\n")
    answer = s.stop()
    assert (ws / "app.txt").read_text() == "good\n"
    assert (ws / "lib" / "lib.txt").read_text() == "lib, the agent's\n"
    assert "NOT put back" in answer["reason"] and "lib/lib.txt (inside a submodule" in answer["reason"]
    assert "1 the checkpoint could not store" in answer["systemMessage"]
