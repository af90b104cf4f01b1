"""One recording core: the hooks (Claude Code and Codex payloads), the Python API and the
transcript importers record the same session as the same events.

The session: a prompt with a call that succeeds and one that fails, a completed turn; a prompt,
a call, a steer typed while that call runs, the call's end, a completed turn; a prompt whose
turn is interrupted; a prompt whose clean completion carries the interrupted input with it.
Each path writes its own state home; the events are compared after :func:`normalise`, which
drops only what legitimately differs between the paths:

- ids are replaced by labels in order of first appearance (``I1``, ``T1``): Claude Code names
  inputs and turns by ``prompt_id``, Codex by ``turn_id`` with hashed input ids, the API by
  its own turn names, and the hash covers the thread key, which names the runtime;
- provenance is dropped: the event's source, seq, timestamps, session marker, a call's
  ``started_at``, ``via`` (``Stop``, ``import:carry``...), an abort's ``reason`` (a Claude
  Code Esc is seen by the hooks as a cut by the next prompt, by the importer as the
  transcript's interrupt marker), an input's ``ordinal`` / ``id_source`` (folded into its id);
- a call's ``output`` is dropped: each path keeps the text its source has (a hook's response
  object, the transcript's tool result);
- Codex's hooks learn a call's exit code from the rollout at Stop (``tool_exit_code``): it is
  folded into the call's ``tool_finished``, with the reducer's rule (a non-zero code is an
  error); Claude Code reports none, so exit codes are compared within a runtime only (and a
  Codex turn that ends without Stop, interrupted, leaves its calls' codes unread by hooks);
- a steer that Claude Code records as typed while busy (admitted ``queued``, delivered at once
  into its own turn) is the same fact as a Codex steer admitted into the running turn: the
  ``queued`` flag and that delivery into its own turn are folded into the admission;
- events that are not the session's facts: the importer's cursor (``transcript_imported``).
"""
from __future__ import annotations

import itertools
import json

import pytest

from claude_script import ClaudeScript
from continuation import hooks
from continuation.api import open_thread
from continuation.importers import import_transcript
from continuation.session.engine import Engine
from continuation.session.recording import Recorder

SID = "rec-core"
SESSION = [
    ("prompt", "build it"),
    ("tool", "c1", "make", 0),
    ("tool", "c2", "make test", 2),
    ("stop", "built; the tests fail"),
    ("prompt", "deploy it"),
    ("tool_start", "c3", "deploy"),
    ("steer", "and tag the release"),
    ("tool_end", "c3", 0),
    ("stop", "deployed and tagged"),
    ("prompt", "clean up"),
    ("tool", "c4", "rm -rf tmp", 0),
    ("interrupt",),
    ("prompt", "try again"),
    ("stop", "cleaned up"),
]

EXPECTED = [
    ("input_admitted", "I1", "build it", "T1"),
    ("tool_started", "c1", "Bash", {"command": "make"}, "T1"),
    ("tool_finished", "c1", "ok"),
    ("tool_started", "c2", "Bash", {"command": "make test"}, "T1"),
    ("tool_finished", "c2", "error"),
    ("assistant_claim", "built; the tests fail", "T1"),
    ("turn_completed", "T1"),
    ("input_admitted", "I2", "deploy it", "T2"),
    ("tool_started", "c3", "Bash", {"command": "deploy"}, "T2"),
    ("input_admitted", "I3", "and tag the release", "T2"),
    ("tool_finished", "c3", "ok"),
    ("assistant_claim", "deployed and tagged", "T2"),
    ("turn_completed", "T2"),
    ("input_admitted", "I4", "clean up", "T3"),
    ("tool_started", "c4", "Bash", {"command": "rm -rf tmp"}, "T3"),
    ("tool_finished", "c4", "ok"),
    ("turn_aborted", "T3"),
    ("input_admitted", "I5", "try again", "T4"),
    ("assistant_claim", "cleaned up", "T4"),
    ("input_delivered", "I4", "T4"),  # the carry: the interrupted input decided by T4
    ("turn_completed", "T4"),
]


# -- the same session, written for each path ---------------------------------------------------
def play(steps: dict) -> None:
    """Run :data:`SESSION` through ``steps`` (step kind -> function of its fields); a ``tool``
    step is its ``tool_start`` and its ``tool_end``."""
    for kind, *fields in SESSION:
        if kind == "tool":
            steps["tool_start"](fields[0], fields[1])
            steps["tool_end"](fields[0], fields[2])
        else:
            steps[kind](*fields)


def _output(code: int) -> str:
    return f"Process exited with code {code}\nOutput:\n{'done' if code == 0 else 'failed'}"


def codex_session(folder) -> tuple[list[dict], str]:
    """The Codex hook payloads and rollout of :data:`SESSION`."""
    rollout = folder / "rollout-rec-core.jsonl"
    records = [{"type": "session_meta", "payload": {"id": SID, "cwd": str(folder),
                                                     "cli_version": "0.171.0"}}]
    payloads: list[dict] = []
    turn = None
    numbers = itertools.count(1)

    def item(payload):
        records.append({"type": "response_item", "payload": payload})

    def event(payload):
        records.append({"type": "event_msg", "payload": payload})

    def hook(name, **fields):
        payloads.append({"session_id": SID, "cwd": str(folder), "transcript_path": str(rollout),
                         "hook_event_name": name, "turn_id": turn, **fields})

    def user(text):
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        hook("UserPromptSubmit", prompt=text)

    def start(call, command):
        item({"type": "function_call", "name": "exec_command", "call_id": call,
              "arguments": json.dumps({"cmd": command})})
        hook("PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=call)

    def end(call, code):
        item({"type": "function_call_output", "call_id": call, "output": _output(code)})
        hook("PostToolUse", tool_name="Bash", tool_use_id=call, tool_response=_output(code))

    def prompt(text):
        nonlocal turn
        turn = f"t{next(numbers)}"
        event({"type": "task_started", "turn_id": turn})
        user(text)

    def stop(text):
        item({"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": text}]})
        event({"type": "task_complete", "turn_id": turn, "last_agent_message": text})
        hook("Stop", last_assistant_message=text)

    def interrupt():
        event({"type": "turn_aborted", "turn_id": turn, "reason": "interrupted"})
        hook("Interrupt")

    play({"prompt": prompt, "steer": user, "tool_start": start, "tool_end": end, "stop": stop,
          "interrupt": interrupt})
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return payloads, str(rollout)


def claude_session(folder) -> tuple[list[dict], str]:
    """The Claude Code hook payloads and transcript of :data:`SESSION` (a steer is written as
    newer Claude Code writes it: enqueued, then folded into the turn as a ``queued_command``
    attachment; Esc writes the interrupt marker and fires no hook)."""
    s = ClaudeScript(SID, folder / f"{SID}.jsonl", cwd=str(folder))
    numbers = itertools.count(1)

    def start(call, command):
        s.rec({"type": "assistant", "promptId": s.prompt_id, "message": {
            "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": call, "name": "Bash",
                         "input": {"command": command}}]}})
        s.hook("PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=call)

    def end(call, code):
        s.rec({"type": "user", "promptId": s.prompt_id, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": _output(code),
             "is_error": code != 0}]}})
        if code:
            s.hook("PostToolUseFailure", tool_name="Bash", tool_use_id=call, error=_output(code))
        else:
            s.hook("PostToolUse", tool_name="Bash", tool_use_id=call,
                   tool_response={"stdout": _output(code), "stderr": "", "interrupted": False})

    def prompt(text):
        s.prompt(f"p{next(numbers)}", text)

    def steer(text):
        s.enqueue(text)
        s.rec({"type": "attachment", "attachment": {"type": "queued_command", "prompt": text}})
        s.hook("UserPromptSubmit", prompt=text)

    play({"prompt": prompt, "steer": steer, "tool_start": start, "tool_end": end,
          "stop": s.reply, "interrupt": s.interrupt})
    return s.payloads, str(s.write())


def run_api(home, folder) -> None:
    with open_thread(SID, home=home, workspace=folder) as t:
        def outcome(call, code):
            t.tool_outcome(call, ok=code == 0, exit_code=code, output=_output(code))

        play({"prompt": t.admit, "steer": lambda text: t.admit(text, steer=True),
              "tool_start": lambda call, command: t.tool_intent(call, "Bash", {"command": command}),
              "tool_end": outcome, "stop": lambda text: t.turn_completed(claim=text),
              "interrupt": lambda: t.turn_aborted("user_interrupt")})


def run_hooks(home, runtime, payloads, monkeypatch) -> None:
    monkeypatch.setenv("CONTINUATION_HOME", str(home))
    monkeypatch.setenv("CONTINUATION_STRICT", "1")  # an error of ours fails the test
    for payload in payloads:
        assert hooks.run(runtime, json.dumps(payload).encode()) == ("{}", 0)


def run_import(home, runtime, path) -> None:
    with Engine(home) as e:
        import_transcript(runtime, path, engine=e, session_over=True)


def events_of(home, runtime) -> list[dict]:
    with Engine(home) as e:
        thread = e.find_thread(runtime, SID)
        assert thread is not None
        return thread.events()


# -- the comparison ------------------------------------------------------------------------------
class _Labels(dict):
    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def __call__(self, value):
        if value is None:
            return None
        return self.setdefault(value, f"{self.prefix}{len(self) + 1}")


def normalise(events: list[dict], *, exit_codes: bool = True) -> list[tuple]:
    """The session's facts, as the module docstring says; ``exit_codes``: keep them."""
    inputs, turns = _Labels("I"), _Labels("T")
    admitted_in: dict[str, str | None] = {}
    finished: dict[str, list] = {}
    out: list[list] = []
    for event in events:
        kind, d = event["type"], event["data"]
        if kind == "input_admitted":
            admitted_in[d["input_id"]] = d.get("turn_id")
            out.append([kind, inputs(d["input_id"]), d["text"], turns(d.get("turn_id"))])
        elif kind == "input_delivered":
            if admitted_in.get(d["input_id"]) != d.get("turn_id"):
                out.append([kind, inputs(d["input_id"]), turns(d.get("turn_id"))])
        elif kind == "tool_started":
            out.append([kind, d["call_id"], d["tool"], d["args"], turns(d.get("turn_id"))])
        elif kind == "tool_finished":
            finished[d["call_id"]] = row = [kind, d["call_id"], d["status"], d.get("exit_code")]
            out.append(row)
        elif kind == "tool_exit_code":
            row = finished[d["call_id"]]
            row[3] = d["exit_code"]
            if d["exit_code"]:
                row[2] = "error"
        elif kind == "assistant_claim":
            out.append([kind, d["text"], turns(d.get("turn_id"))])
        elif kind in ("turn_completed", "turn_aborted"):
            out.append([kind, turns(d["turn_id"])])
        elif kind != "transcript_imported":
            out.append([kind])  # a fact this comparison does not expect: shown in full
    return [tuple(row if exit_codes or row[0] != "tool_finished" else row[:3]) for row in out]


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """path name -> the events that path recorded for :data:`SESSION`."""
    folder = tmp_path / "work"
    folder.mkdir()
    codex_payloads, rollout = codex_session(folder)
    claude_payloads, transcript = claude_session(folder)
    got = {}
    run_hooks(tmp_path / "codex-hooks", "codex", codex_payloads, monkeypatch)
    got["codex hooks"] = events_of(tmp_path / "codex-hooks", "codex")
    run_hooks(tmp_path / "claude-hooks", "claude", claude_payloads, monkeypatch)
    got["claude hooks"] = events_of(tmp_path / "claude-hooks", "claude")
    run_api(tmp_path / "api", folder)
    got["api"] = events_of(tmp_path / "api", "python")
    run_import(tmp_path / "codex-import", "codex", rollout)
    got["codex import"] = events_of(tmp_path / "codex-import", "codex")
    run_import(tmp_path / "claude-import", "claude", transcript)
    got["claude import"] = events_of(tmp_path / "claude-import", "claude")
    return got


def test_every_path_records_the_same_facts(recorded):
    facts = {path: normalise(events, exit_codes=False) for path, events in recorded.items()}
    for path, got in facts.items():
        assert got == EXPECTED, path


def test_exit_codes_agree_within_a_runtime(recorded):
    codes = {path: {row[1]: row[3] for row in normalise(events) if row[0] == "tool_finished"}
             for path, events in recorded.items()}
    assert codes["codex import"] == codes["api"] == {"c1": 0, "c2": 2, "c3": 0, "c4": 0}
    # Codex's hooks read exit codes from the rollout at Stop: an interrupted turn gets none
    assert codes["codex hooks"] == {"c1": 0, "c2": 2, "c3": 0, "c4": None}
    assert codes["claude hooks"] == codes["claude import"]


def test_every_path_ends_in_the_same_states(recorded, tmp_path):
    def states(home, runtime):
        with Engine(home) as e:
            t = e.find_thread(runtime, SID)
            return ({r.text: r.state for r in t.inputs()},
                    {c.call_id: c.status for c in t.tool_calls()})

    got = {(h, r): states(tmp_path / h, r) for h, r in [
        ("codex-hooks", "codex"), ("claude-hooks", "claude"), ("api", "python"),
        ("codex-import", "codex"), ("claude-import", "claude")]}
    assert set(map(repr, got.values())) == {repr((
        {"build it": "handled", "deploy it": "handled", "and tag the release": "handled",
         "clean up": "handled", "try again": "handled"},
        {"c1": "ok", "c2": "error", "c3": "ok", "c4": "ok"}))}


# -- the comparison catches a path that skips a rule of the core ------------------------------
def _no_carry(view, turn_id):
    return []


def _no_cut(self, turn):
    return None


@pytest.mark.parametrize("path, target, replacement, missing", [
    # the API skipping the carry rule: the interrupted input is not decided by the next turn
    ("api", "continuation.session.turn_rules.carried_into", _no_carry,
     ("input_delivered", "I4", "T4")),
    # the Claude hooks skipping the cut of a turn left running by Esc
    ("claude hooks", "continuation.session.recording.Recorder.start_turn", _no_cut,
     ("turn_aborted", "T3")),
])
def test_a_path_that_skips_a_core_rule_differs(tmp_path, monkeypatch, path, target, replacement,
                                                missing):
    folder = tmp_path / "work"
    folder.mkdir()
    payloads, _ = claude_session(folder)
    monkeypatch.setattr(target, replacement)
    if path == "api":
        run_api(tmp_path / "h", folder)
        got = normalise(events_of(tmp_path / "h", "python"), exit_codes=False)
    else:
        run_hooks(tmp_path / "h", "claude", payloads, monkeypatch)
        got = normalise(events_of(tmp_path / "h", "claude"), exit_codes=False)
    assert got != EXPECTED and missing in EXPECTED and missing not in got


def test_the_core_is_what_the_hooks_and_the_api_call(tmp_path, monkeypatch):
    """Neither the API nor the hooks record around the core: each fact of a prompt goes
    through :class:`Recorder` (counted here), whoever the caller."""
    calls: list[str] = []
    real = Recorder.admit_prompt

    def counted(self, *a, **k):
        calls.append(self.source)
        return real(self, *a, **k)

    monkeypatch.setattr(Recorder, "admit_prompt", counted)
    with open_thread(SID, home=tmp_path / "api") as t:
        t.admit("one")
    run_hooks(tmp_path / "hooks", "codex", [{"session_id": SID, "turn_id": "t1",
                                             "hook_event_name": "UserPromptSubmit",
                                             "prompt": "one"}], monkeypatch)
    assert calls == ["api", "hook:codex"]
