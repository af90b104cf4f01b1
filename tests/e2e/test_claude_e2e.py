"""End-to-end: the real Claude Code CLI (pinned) against a loopback Messages-API stand-in.

One session is driven through: a prompt answered with text, a prompt that makes a Bash tool call,
a manual ``/compact``, a prompt after the compaction, and a run SIGKILLed (whole process group)
while its slow tool call (``sh build.sh``, which sleeps 30 s) runs. Claude Code 2.1.332 refuses
a bare ``sleep 30`` Bash call ("Blocked: standalone sleep") before any hook fires.

- ``test_claude_hook_context_reaches_model`` uses recorder hooks only: it pins down how Claude Code
  2.1.332 delivers hook context (which path the engine can rely on) and the hook order.
- ``test_claude_session_through_continuation`` installs our hooks with
  ``continuation install --runtime claude --scope user`` and checks the engine's view of the session,
  then resumes the crashed session and checks what the model is told.
- ``test_claude_prompt_typed_mid_turn_is_its_own_input``: a prompt steered into a running turn shares
  its prompt_id; ``test_claude_auto_compaction_mid_turn_keeps_the_prompt``: an auto-compaction inside
  a turn drops the prompt from the model's view, our context keeps it.
- ``test_standin_*``: unit tests of the Messages-API stand-in itself (no Claude Code needed).

Skipped with a reason when node/npm are missing or the pinned CLI cannot be installed. Bounded: every
subprocess has a timeout and is killed with its process group.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

try:  # tests/e2e may or may not be a package
    from . import claude_tools as ct
    from .messages_standin import StandInServer, read_log
except ImportError:
    import claude_tools as ct  # type: ignore[no-redef]
    from messages_standin import StandInServer, read_log  # type: ignore[no-redef]



def e2e(test):
    """Drives the real Claude Code CLI (marked e2e and slow; the stand-in unit tests are neither)."""
    return pytest.mark.e2e(pytest.mark.slow(test))


PROMPTS = (
    "append a line to notes.txt",
    "append a second line",
    "/compact",
    "append a third line",
    "slow task: wait for the build",
)
# The capsule block as rendered for the model (capsule/render.py): a nonce'd BEGIN and END line.
CHECKPOINT_BEGIN = re.compile(r"<<<CONTINUATION-CHECKPOINT ([0-9a-f]+) BEGIN>>>")
CHECKPOINT_MARKER = "<<<CONTINUATION-CHECKPOINT "
RUN_TIMEOUT_S = 120
CLI_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def claude_bin() -> Path:
    try:
        return ct.ensure_claude()
    except ct.ClaudeUnavailable as exc:
        pytest.skip(f"Claude Code {ct.CLAUDE_VERSION} unavailable: {exc}")


@dataclass
class Step:
    prompt: str
    first_request: int  # index into the stand-in log of the first request this run sent
    end_request: int
    first_payload: int  # index into the recorder's hook payload log
    end_payload: int
    result: dict[str, Any] | None = None


@dataclass
class Session:
    session_id: str
    steps: list[Step] = field(default_factory=list)
    killed_tool_pids: list[int] = field(default_factory=list)


def _requests(log: Path) -> list[dict[str, Any]]:
    return [r for r in read_log(log) if r.get("method") == "POST" and str(r.get("path", "")).startswith("/v1/messages")
            and "count_tokens" not in str(r.get("path"))]


def _body_text(request: dict[str, Any]) -> str:
    return json.dumps(request.get("body"), ensure_ascii=False)


def _strings(value: Any):
    """Every string inside a JSON value (a request body), e.g. each message's text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _is_compaction_request(request: dict[str, Any]) -> bool:
    return "create a detailed summary of the conversation" in _body_text(request)


def drive_session(box: ct.ClaudeSandbox, request_log: Path) -> Session:
    """Run the five steps on one session; the last one is SIGKILLed mid tool call."""
    session: Session | None = None
    for prompt in PROMPTS[:-1]:
        before_req, before_hooks = len(_requests(request_log)), len(box.hook_payloads())
        done = box.run(prompt, resume=session.session_id if session else None, timeout=RUN_TIMEOUT_S)
        assert done.returncode == 0, f"claude -p {prompt!r} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}"
        result = done.json()
        assert result.get("is_error") is False, result
        if session is None:
            session = Session(session_id=result["session_id"])
        assert result["session_id"] == session.session_id, "resume must keep the session id"
        session.steps.append(Step(prompt, before_req, len(_requests(request_log)), before_hooks,
                                  len(box.hook_payloads()), result))

    assert session is not None
    before_req, before_hooks = len(_requests(request_log)), len(box.hook_payloads())
    proc = box.start(PROMPTS[-1], resume=session.session_id)
    try:
        def tool_running() -> list[int]:
            if proc.poll() is not None:
                out, err = proc.communicate(timeout=30)
                raise AssertionError(f"claude exited ({proc.returncode}) before its tool call ran: "
                                     f"{out[-2000:]!r} {err[-2000:]!r}")
            started = [p for p in box.hook_payloads()[before_hooks:]
                       if p.get("hook_event_name") == "PreToolUse"
                       and "build.sh" in json.dumps(p.get("tool_input"))]
            if not started:
                return []
            if not Path("/proc").is_dir():  # no process table to look at: the hook fired, give it a moment
                return [-1]
            # All PreToolUse hooks have returned once the tool command itself runs.
            return [pid for pid in ct.descendants(proc.pid) if ct.cmdline(pid).startswith("sleep 30")]

        session.killed_tool_pids = ct.wait_for(tool_running, timeout=RUN_TIMEOUT_S,
                                               what="the slow task's build.sh tool call (sleep 30) to start")
        assert proc.poll() is None, "claude exited before the kill"
    finally:
        ct.kill_tree(proc)
    session.steps.append(Step(PROMPTS[-1], before_req, len(_requests(request_log)), before_hooks,
                              len(box.hook_payloads())))
    for pid in session.killed_tool_pids:
        if pid > 0:  # SIGKILL is delivered, not awaited: on a loaded machine it ends a moment later
            ct.wait_for(lambda: not Path(f"/proc/{pid}").exists() or "sleep" not in ct.cmdline(pid),
                        timeout=10, what=f"the killed tool process {pid} (sleep 30) to end")
    return session


def _step_events(box: ct.ClaudeSandbox, step: Step) -> list[str]:
    return ct.event_names(box.hook_payloads()[step.first_payload:step.end_payload])


@e2e
def test_claude_hook_context_reaches_model(claude_bin: Path, tmp_path: Path) -> None:
    """Which hook context Claude Code 2.1.332 passes to the model, and in which order hooks fire."""
    request_log = tmp_path / "requests.jsonl"
    with StandInServer(request_log) as server:
        box = ct.ClaudeSandbox(tmp_path, claude_bin, server.base_url)
        box.init_repo()
        box.write_settings(markers=True)
        session = drive_session(box, request_log)

    first, second, compact, third, slow = session.steps
    requests = _requests(request_log)

    # Hook order per run (the /compact run has no UserPromptSubmit and no Stop: it is not an input).
    assert _step_events(box, first) == ["SessionStart:startup", "UserPromptSubmit", "Stop", "SessionEnd"]
    assert _step_events(box, second) == ["SessionStart:resume", "UserPromptSubmit", "PreToolUse:Bash",
                                         "PostToolUse:Bash", "Stop", "SessionEnd"]
    assert _step_events(box, compact) == ["SessionStart:resume", "PreCompact:manual", "SessionStart:compact",
                                          "PostCompact:manual", "SessionEnd"]
    assert _step_events(box, third) == ["SessionStart:resume", "UserPromptSubmit", "Stop", "SessionEnd"]
    # SIGKILL mid tool call: PreToolUse fired, no PostToolUse / Stop / SessionEnd ever came.
    assert _step_events(box, slow) == ["SessionStart:resume", "UserPromptSubmit", "PreToolUse:Bash"]
    payloads = box.hook_payloads()
    assert all(p["session_id"] == session.session_id for p in payloads)
    ups = [p for p in payloads if p["hook_event_name"] == "UserPromptSubmit"]
    assert [p["prompt"] for p in ups] == [p for p in PROMPTS if p != "/compact"]
    assert len({p["prompt_id"] for p in ups}) == 4, "each prompt has its own prompt_id"

    # The tool call really ran; the answer to the text prompt wrote nothing.
    assert (box.repo / "notes.txt").read_text(encoding="utf-8") == "line\n"

    # UserPromptSubmit context reaches the model in the request carrying that prompt.
    first_request = _body_text(requests[first.first_request])
    assert "UserPromptSubmit hook additional context: " + ct.UPS_MARKER in first_request
    assert ct.SS_MARKER.format(source="startup") in first_request

    # The /compact run sends exactly the summarisation request.
    compact_requests = requests[compact.first_request:compact.end_request]
    assert len(compact_requests) == 1 and _is_compaction_request(compact_requests[0])
    compact_marker = ct.SS_MARKER.format(source="compact")
    assert compact_marker not in _body_text(compact_requests[0])

    # The SessionStart(compact) context reaches the model in the first request after the compaction
    # (the next run, which resumes from the transcript): the primary path works in 2.1.332.
    after = _body_text(requests[third.first_request])
    assert "SessionStart hook additional context: " + compact_marker in after
    # Contexts given before the compaction are gone from the model's view after it.
    assert ct.SS_MARKER.format(source="startup") not in after
    assert after.count(ct.UPS_MARKER) == 1

    # The killed run reached the model (tool_use answer) before the kill.
    assert slow.end_request - slow.first_request == 1


# ---------------------------------------------------------------------------------------------
# With our hooks installed


def _continuation_cmd() -> list[str] | None:
    exe = shutil.which("continuation", path=str(Path(sys.executable).parent)) or shutil.which("continuation")
    return [exe] if exe else None


def _subcommands(cmd: list[str]) -> set[str]:
    """The subcommands ``continuation --help`` lists (``hook`` takes no --help of its own)."""
    try:
        done = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    names = set(re.findall(r"^ {4}([a-z][a-z0-9_-]*)\b", done.stdout, flags=re.MULTILINE))
    for group in re.findall(r"\{([a-z0-9_,-]+)\}", done.stdout):
        names.update(group.split(","))
    return names


def _cli(cmd: list[str], box: ct.ClaudeSandbox, *args: str) -> ct.RunResult:
    done = ct.run_bounded(cmd + list(args), cwd=box.repo, env=box.env, timeout=CLI_TIMEOUT_S)
    assert done.returncode == 0, f"continuation {' '.join(args)} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    return done


def _json_list(text: str, key: str) -> list[dict[str, Any]]:
    value = json.loads(text)
    if isinstance(value, dict):
        value = value.get(key, value.get("items", []))
    assert isinstance(value, list), text[:2000]
    return value


REQUIRED_COMMANDS = ("hook", "install", "inputs", "events", "recover")


@pytest.fixture
def continuation_cmd() -> list[str]:
    """The ``continuation`` launcher, or a skip naming what is missing."""
    cmd = _continuation_cmd()
    if cmd is None:
        pytest.skip(f"the `continuation` command is neither next to {sys.executable} nor on PATH "
                    "(install the project: pip install -e '.[test]')")
    missing = [name for name in REQUIRED_COMMANDS if name not in _subcommands(cmd)]
    if missing:
        pytest.skip(f"`continuation` lacks subcommands {missing} needed for this test")
    return cmd


@dataclass
class Installed:
    """A sandbox whose temporary HOME has our hooks (and a recorder and the user's permissions)."""

    cmd: list[str]
    box: ct.ClaudeSandbox
    state_home: Path
    request_log: Path

    def cli(self, *args: str) -> ct.RunResult:
        return _cli(self.cmd, self.box, *args)

    def inputs(self, session_id: str) -> list[dict[str, Any]]:
        return _json_list(self.cli("inputs", "--thread", session_id, "--json").stdout, "inputs")

    def assert_no_hook_errors(self) -> None:
        log = self.state_home / "logs" / "hooks.log"
        assert not log.exists(), "our hook failed (open):\n" + log.read_text(encoding="utf-8")[-4000:]


@contextmanager
def installed_sandbox(cmd: list[str], claude: Path, tmp_path: Path):
    """Stand-in up, repo and HOME ready, ``continuation install --runtime claude --scope user`` run;
    checks that install kept the user's own hooks and permissions."""
    request_log = tmp_path / "requests.jsonl"
    state_home = tmp_path / "state"
    with StandInServer(request_log) as server:
        box = ct.ClaudeSandbox(tmp_path, claude, server.base_url, extra_env={"CONTINUATION_HOME": str(state_home)})
        box.init_repo()
        box.write_settings(markers=False)  # the user's permissions + a recorder, which install must keep
        mine = json.loads(box.settings_path.read_text(encoding="utf-8"))
        _cli(cmd, box, "install", "--runtime", "claude", "--scope", "user")
        installed = json.loads(box.settings_path.read_text(encoding="utf-8"))
        # the user's permissions kept; the state home's contexts folder readable by Read; the
        # sealed record's `continuation source` (this installation's script) run by Bash
        from continuation.host.own_command import source_command

        assert installed["permissions"] == {
            **mine["permissions"], "allow": [*mine["permissions"].get("allow", []), f"Bash({source_command()}:*)"],
            "additionalDirectories": [str(state_home / "contexts")]}
        for event, groups in mine["hooks"].items():
            for group in groups:
                assert group in installed["hooks"][event], f"install dropped the user's {event} hook"
            ours = [g for g in installed["hooks"][event] if g not in groups]
            assert "hook --runtime claude" in json.dumps(ours), f"no continuation hook for {event}"
        env = Installed(cmd, box, state_home, request_log)
        env.server = server  # type: ignore[attr-defined]
        yield env


def assert_import_agrees(env: Installed, session_id: str, tmp_path: Path) -> None:
    """The session's real transcript, imported into the hooks' store and alone into a
    fresh one, gives the states (and queued flags) the hooks recorded.

    One exception, named: Claude Code writes the assistant message that starts a tool call to
    the transcript after the call has begun, so the crash can land first (measured: about one
    run in three here). The hooks recorded the call (PreToolUse), the transcript has no trace of
    it: importing keeps what the hooks know, and the transcript alone can only show its input
    answered (``handled``), never the call it cannot see."""
    from continuation.session.engine import Engine
    from continuation.importers import import_transcript

    def summary(rows):
        return {str(i.get("text")): (i.get("state"), bool(i.get("queued"))) for i in rows}

    hooked = summary(env.inputs(session_id))
    transcript = env.box.transcript(session_id)
    imported = env.cli("import", "claude", str(transcript), "--session-over")
    assert imported.returncode == 0, imported.stderr[-2000:]
    merged = summary(env.inputs(session_id))
    with Engine(tmp_path / "import-only") as engine:
        import_transcript("claude", transcript, engine=engine, session_over=True)
        alone = {r.text: (r.state, r.queued) for r in engine.find_thread("claude", session_id).inputs()}
    states = {"hooks": hooked, "hooks+import": merged, "import only": alone}
    assert merged == hooked, states
    written = set()  # the tool_use blocks of the transcript's assistant messages
    for line in transcript.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("type") == "assistant":
            content = (record.get("message") or {}).get("content") or ()
            written |= {b.get("id") for b in content
                        if isinstance(b, dict) and b.get("type") == "tool_use"}
    events = _json_list(env.cli("events", "--thread", session_id, "--json").stdout, "events")
    unseen = [e["data"]["call_id"] for e in events
              if e["type"] == "tool_started" and e["data"]["call_id"] not in written]
    if not unseen:
        assert alone == hooked, states
        return
    differ = {k for k in hooked if alone.get(k) != hooked[k]}
    assert len(unseen) == 1 and set(alone) == set(hooked), states
    assert all(hooked[k] == ("reconciling", False) and alone[k] == ("handled", False)
               for k in differ), states


def _checkpoint_blocks(body: Any) -> list[tuple[str, str]]:
    """(nonce, block text from BEGIN through END) of every whole checkpoint block in a request body."""
    blocks = []
    for text in _strings(body):
        for begin in CHECKPOINT_BEGIN.finditer(text):
            end_line = f"<<<CONTINUATION-CHECKPOINT {begin.group(1)} END>>>"
            end = text.find(end_line, begin.end())
            if end >= 0:
                blocks.append((begin.group(1), text[begin.start():end + len(end_line)]))
    return blocks


@e2e
def test_claude_session_through_continuation(continuation_cmd: list[str], claude_bin: Path, tmp_path: Path) -> None:
    """The issue's scenario with our hooks: handled, handled, (/compact), handled, reconciling after
    `continuation recover`; our context answers the compact SessionStart and reaches the model; after
    the crash, resuming the session gives the model the reconciling input and its unsettled call."""
    with installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        box, request_log = env.box, env.request_log
        session = drive_session(box, request_log)
        recovery = json.loads(env.cli("recover", "--record", "--json").stdout)
        inputs = env.inputs(session.session_id)
        events = _json_list(env.cli("events", "--thread", session.session_id, "--json").stdout, "events")
        # Resume the crashed session: the next context must tell the model what was cut.
        before_resume = len(_requests(request_log))
        resumed = box.run("what is the state of things?", resume=session.session_id, timeout=RUN_TIMEOUT_S)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        inputs_after_resume = env.inputs(session.session_id)
        # Claude Code's placeholder result for the killed call is no outcome, and the
        # prompt after the resume is not "queued"
        assert_import_agrees(env, session.session_id, tmp_path)
    env.assert_no_hook_errors()

    states = {str(i.get("text")): i.get("state") for i in inputs}
    assert states == {
        "append a line to notes.txt": "handled",
        "append a second line": "handled",
        "append a third line": "handled",
        "slow task: wait for the build": "reconciling",
    }, inputs  # the /compact command is not an input

    # `continuation recover` lists the session as interrupted, with the cut tool call unsettled.
    slow_call = next(p for p in box.hook_payloads() if p["hook_event_name"] == "PreToolUse"
                     and "build.sh" in json.dumps(p.get("tool_input")))
    entry = next(e for e in recovery["interrupted"] if e.get("session_id") == session.session_id)
    assert [(i["text"], i["state"]) for i in entry["inputs"]] == [("slow task: wait for the build", "reconciling")]
    assert [(c["call_id"], c["status"]) for c in entry["unknown_calls"]] == [(slow_call["tool_use_id"], "unknown")]
    assert session.session_id in entry["resume_command"]

    # The compact SessionStart answered with our assembled context (its stdout, kept in the transcript).
    transcript = box.transcript(session.session_id)
    compact_out = ct.hook_outputs(transcript, "SessionStart:compact")
    ours = [o for o in compact_out if CHECKPOINT_MARKER in o]
    assert len(ours) == 1, f"SessionStart:compact outputs: {compact_out!r}"
    answer = json.loads(ours[0])
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = answer["hookSpecificOutput"]["additionalContext"]
    (nonce, block), = _checkpoint_blocks(context)
    # Claude Code replaces a context over 10,000 characters by a file path and a 2 KB preview.
    assert len(context) <= 10_000, f"assembled context has {len(context)} chars: Claude Code would not pass it on"
    assert any(e.get("type") == "context_delivered" for e in events), "engine recorded no context delivery"
    # It tells the model that both earlier requests are handled (and nothing is left to redo).
    for text in ("append a line to notes.txt", "append a second line"):
        assert any(json.dumps(text) in line and "state=handled" in line for line in block.splitlines()), block
    assert "state=pending" not in block and "state=reconciling" not in block

    # ... and it reached the model, whole and once, in the first request after the compaction,
    # through the SessionStart(compact) answer (else through the fallback at UserPromptSubmit).
    requests = _requests(request_log)
    assert all(CHECKPOINT_MARKER not in _body_text(r) for r in requests[:session.steps[2].first_request])
    after_body = requests[session.steps[3].first_request]["body"]
    assert _checkpoint_blocks(after_body) == [(nonce, block)], "checkpoint not delivered exactly once, whole"
    after = _body_text(requests[session.steps[3].first_request])
    via_session_start = any(CHECKPOINT_MARKER in chunk.split("UserPromptSubmit hook additional context: ")[0]
                            for chunk in after.split("SessionStart hook additional context: ")[1:])
    path = "SessionStart(compact)" if via_session_start else "UserPromptSubmit fallback"
    print(f"context path taken by Claude Code {ct.CLAUDE_VERSION}: {path}")
    # Claude Code 2.1.332 passes the compact SessionStart context on (see the recorder test).
    assert via_session_start, "expected the checkpoint in the SessionStart(compact) context block"

    # After the crash: the first request of the resumed session holds a new checkpoint in which the
    # slow task is reconciling and its build call is unsettled; resuming settles nothing by itself.
    first_after_crash = _requests(request_log)[before_resume]
    new_blocks = [b for n, b in _checkpoint_blocks(first_after_crash["body"]) if n != nonce]
    assert new_blocks, "no fresh checkpoint reached the model after the crash"
    crash_block = new_blocks[-1]
    assert any(json.dumps("slow task: wait for the build") in line and "state=reconciling" in line
               for line in crash_block.splitlines()), crash_block
    assert "sh build.sh" in crash_block and slow_call["tool_use_id"] in crash_block
    states_after = {str(i.get("text")): i.get("state") for i in inputs_after_resume}
    assert states_after["slow task: wait for the build"] == "reconciling"
    assert states_after["what is the state of things?"] == "handled"


@e2e
def test_claude_prompt_typed_mid_turn_is_its_own_input(continuation_cmd: list[str], claude_bin: Path,
                                                       tmp_path: Path) -> None:
    """A prompt sent while a tool call runs is steered into the running turn by Claude Code, and its
    UserPromptSubmit carries the SAME prompt_id as the turn's first prompt: the engine must still
    admit it as a separate input (not drop it as a duplicate), and mark both handled."""
    first_text, steered_text = "quick build: compile the project", "also count the lines of notes.txt"
    with installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        box = env.box
        proc = box.start_streaming()
        try:
            ct.send(proc, first_text)
            ct.wait_for(lambda: proc.poll() is not None or any(
                p.get("hook_event_name") == "PreToolUse" for p in box.hook_payloads()),
                timeout=RUN_TIMEOUT_S, what="the build tool call to start")
            assert proc.poll() is None, "claude exited before the build tool call"
            ct.send(proc, steered_text)  # the build (sleep 3) is still running
            output = ct.finish_streaming(proc, timeout=RUN_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                ct.kill_tree(proc)
        session_id = box.hook_payloads()[0]["session_id"]
        inputs = env.inputs(session_id)
        assert_import_agrees(env, session_id, tmp_path)

    # What Claude Code 2.1.332 does: one turn, two UserPromptSubmit payloads with one prompt_id.
    assert [r.get("subtype") for r in output if r.get("type") == "result"] == ["success"]
    ups = [p for p in box.hook_payloads() if p["hook_event_name"] == "UserPromptSubmit"]
    assert [p["prompt"] for p in ups] == [first_text, steered_text]
    assert ups[0]["prompt_id"] == ups[1]["prompt_id"]
    after_tool = [r for r in _requests(env.request_log) if '"tool_result"' in _body_text(r)]
    assert after_tool and "The user sent a new message while you were working:\\n" + steered_text in _body_text(after_tool[0])

    env.assert_no_hook_errors()
    states = {str(i.get("text")): i.get("state") for i in inputs}
    assert states == {first_text: "handled", steered_text: "handled"}, inputs


@e2e
def test_claude_failed_tool_call_has_an_outcome(continuation_cmd: list[str], claude_bin: Path,
                                                tmp_path: Path) -> None:
    """A Bash call that exits non-zero fires PostToolUseFailure (not PostToolUse) in Claude Code
    2.1.332: installed, it records the failure, so the turn's input is handled, not left waiting
    for reconciliation with an unknown outcome."""
    with installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        result = env.box.run("run the failing check", timeout=RUN_TIMEOUT_S)
        assert result.returncode == 0, result.stderr[-2000:]
        session_id = env.box.hook_payloads()[0]["session_id"]
        inputs = env.inputs(session_id)
        events = _json_list(env.cli("events", "--thread", session_id, "--json").stdout, "events")
        assert_import_agrees(env, session_id, tmp_path)
    env.assert_no_hook_errors()
    # the user's recorder hook (not ours) listens to PostToolUse only: it never saw the outcome
    fired = [p["hook_event_name"] for p in env.box.hook_payloads()]
    assert "PreToolUse" in fired and "PostToolUse" not in fired, fired
    finished = [e["data"] for e in events if e["type"] == "tool_finished"]
    assert [f["status"] for f in finished] == ["error"], finished
    assert [(i["text"], i["state"]) for i in inputs] == [("run the failing check", "handled")]


@e2e
def test_claude_denied_tool_call_has_an_outcome(continuation_cmd: list[str], claude_bin: Path,
                                                tmp_path: Path) -> None:
    """A call refused by a deny rule: PreToolUse may fire, no PostToolUse follows; the installed
    PermissionDenied hook (or no PreToolUse at all) must leave nothing waiting to reconcile."""
    with installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        settings = json.loads(env.box.settings_path.read_text(encoding="utf-8"))
        settings["permissions"]["deny"] = ["Bash(curl:*)"]
        env.box.settings_path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
        result = env.box.run("fetch the page", timeout=RUN_TIMEOUT_S)
        assert result.returncode == 0, result.stderr[-2000:]
        session_id = env.box.hook_payloads()[0]["session_id"]
        inputs = env.inputs(session_id)
        events = _json_list(env.cli("events", "--thread", session_id, "--json").stdout, "events")
        assert_import_agrees(env, session_id, tmp_path)
    env.assert_no_hook_errors()
    started = [e["data"] for e in events if e["type"] == "tool_started"]
    finished = [e["data"] for e in events if e["type"] == "tool_finished"]
    print("denied call: tool_started", len(started), "tool_finished", finished)
    assert len(finished) == len(started), "a refused call was left without an outcome"
    assert [(i["text"], i["state"]) for i in inputs] == [("fetch the page", "handled")]


@e2e
def test_claude_auto_compaction_mid_turn_keeps_the_prompt(continuation_cmd: list[str], claude_bin: Path,
                                                          tmp_path: Path) -> None:
    """Claude Code auto-compacts inside a turn (after a tool result) when the model reports a nearly
    full window. The request that continues the turn then holds the summary, the tool call and our
    SessionStart(compact) context, but no longer the user's prompt: the checkpoint must carry it as
    pending. After the turn completes, the input is handled."""
    prompt = "append a second line"
    with installed_sandbox(continuation_cmd, claude_bin, tmp_path) as env:
        box = env.box
        first = box.run("append a line to notes.txt", timeout=RUN_TIMEOUT_S)
        assert first.returncode == 0, first.stderr[-2000:]
        session_id = first.json()["session_id"]
        before_hooks = len(box.hook_payloads())
        # The answer with the tool call reports 99% of the 1M-token window in use.
        env.server.standin.usage_overrides.append(990_000)
        second = box.run(prompt, resume=session_id, timeout=RUN_TIMEOUT_S)
        assert second.returncode == 0 and second.json().get("is_error") is False, second.stdout[-2000:]
        inputs = env.inputs(session_id)
        assert_import_agrees(env, session_id, tmp_path)

    assert ct.event_names(box.hook_payloads()[before_hooks:]) == [
        "SessionStart:resume", "UserPromptSubmit", "PreToolUse:Bash", "PostToolUse:Bash",
        "PreCompact:auto", "SessionStart:compact", "PostCompact:auto", "Stop", "SessionEnd"]
    requests = _requests(env.request_log)
    compaction = [i for i, r in enumerate(requests) if _is_compaction_request(r)]
    assert len(compaction) == 1
    continued = requests[compaction[0] + 1]
    assert '"tool_result"' in _body_text(continued), "the turn goes on after the compaction"
    # Our SessionStart(compact) answer, as Claude Code kept it in the transcript.
    answers = [json.loads(o) for o in ct.hook_outputs(box.transcript(session_id), "SessionStart:compact")
               if CHECKPOINT_MARKER in o]
    assert len(answers) == 1, "SessionStart(compact) did not answer with our checkpoint"
    context = answers[0]["hookSpecificOutput"]["additionalContext"]
    assert any(context in t for t in _strings(continued.get("body"))), \
        "our context did not reach the model whole after the auto-compaction"
    (_, capsule), = _checkpoint_blocks(context)
    assert any(json.dumps(prompt) in line and "state=pending" in line for line in capsule.splitlines()), capsule
    # Claude Code dropped the prompt from the model's view; only our context still holds it.
    outside = _body_text(continued).replace(json.dumps(context, ensure_ascii=False)[1:-1], "")
    assert prompt not in outside

    env.assert_no_hook_errors()
    states = {str(i.get("text")): i.get("state") for i in inputs}
    assert states == {"append a line to notes.txt": "handled", prompt: "handled"}, inputs


# ---------------------------------------------------------------------------------------------
# The stand-in itself (fast; runs without node)


def _post(base_url: str, path: str, body: Any) -> tuple[int, str, str]:
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base_url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode("utf-8")


def _sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def test_standin_streams_a_scripted_tool_call(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    body = {"model": "m", "stream": True, "messages": [_user(_text("append a second line"))]}
    with StandInServer(log) as server:
        status, ctype, text = _post(server.base_url, "/v1/messages?beta=true", body)
    assert status == 200 and ctype.startswith("text/event-stream")
    events = _sse(text)
    assert [name for name, _ in events] == ["message_start", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    block = events[1][1]["content_block"]
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["id"].startswith("toolu_")
    assert json.loads(events[2][1]["delta"]["partial_json"])["command"] == "echo line >> notes.txt"
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"
    assert read_log(log) == [{"method": "POST", "path": "/v1/messages?beta=true", "body": body}]


def test_standin_script_follows_the_user_prompt_not_injected_context(tmp_path: Path) -> None:
    def answer(server: StandInServer, *messages: dict[str, Any]) -> dict[str, Any]:
        status, _, text = _post(server.base_url, "/v1/messages", {"model": "m", "messages": list(messages)})
        assert status == 200
        return json.loads(text)

    with StandInServer(tmp_path / "requests.jsonl") as server:
        # A system-reminder (hook context) naming a scripted key does not steer the answer.
        plain = answer(server, _user(_text("<system-reminder>\nslow task</system-reminder>"),
                                     _text("append a third line")))
        assert plain["content"] == [_text("Appended the third line (claim).")]
        assert plain["stop_reason"] == "end_turn"
        after_tool = answer(server, _user({"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}))
        assert after_tool["content"][0]["text"].startswith("done (")
        summary = answer(server, _user(_text("Your task is to create a detailed summary of the conversation "
                                             "so far, paying close attention to ...")))
        assert "<summary>" in summary["content"][0]["text"]
        assert answer(server, {"role": "user", "content": "something else"})["content"][0]["text"].startswith("ok (")
        server.standin.usage_overrides.append(990_000)
        assert answer(server, _user(_text("hi")))["usage"]["input_tokens"] == 990_000
        assert answer(server, _user(_text("hi")))["usage"]["input_tokens"] < 990_000


def test_standin_answers_count_tokens_and_rejects_bad_requests(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with StandInServer(log) as server:
        status, _, text = _post(server.base_url, "/v1/messages/count_tokens", {"messages": [_user(_text("x"))]})
        assert status == 200 and json.loads(text)["input_tokens"] > 0
        status, _, text = _post(server.base_url, "/v1/messages", b"{not json")
        assert status == 400 and json.loads(text)["error"]["type"] == "invalid_request_error"
        status, _, text = _post(server.base_url, "/v1/messages", {"model": "m"})  # no messages
        assert status == 400
        status, _, text = _post(server.base_url, "/v1/other", {})
        assert status == 404 and json.loads(text)["error"]["type"] == "not_found_error"
    logged = read_log(log)
    assert [r["path"] for r in logged] == ["/v1/messages/count_tokens", "/v1/messages", "/v1/messages",
                                           "/v1/other"]
    assert logged[1]["body"] == {"unparsed": "{not json"}
