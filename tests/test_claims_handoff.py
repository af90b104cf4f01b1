"""The newest turns' final claims survive the budget, and a claim that says it
ran, tested, built, committed ... is shown next to what the turn's recorded calls say."""
from __future__ import annotations

from test_capsule_sample import counter, ptr, representative_source

from capsule import build_capsule, render_capsule
from capsule.claim_check import TurnCall, check_claim
from capsule.source import SourceClaim, SourceInput, SourceToolCall
from continuation.boundary.checkpoints import build
from continuation.session.engine import Engine

EDIT = {"file_path": "src/app/handlers.py", "old_string": "x = compute(a, b)\n" * 27,
        "new_string": "x = compute(a, b, strict=True)\n" * 17}


def test_rule_no_call_failed_call_pending_call_and_intents():
    edit = TurnCall({"file_path": "a.py"}, "ok")
    assert check_claim("I ran the tests and they pass.", [edit]) == ["no tool call of this turn ran tests"]
    assert check_claim("I ran the tests and they pass.", [edit, TurnCall({"command": "pytest -q"}, "ok", 0)]) == []
    assert check_claim("All tests pass now.", [TurnCall({"command": ["bash", "-lc", "cargo test"]}, "error", 101)]) == [
        "every test call of this turn failed (last: exit 101)"]
    assert check_claim("Tests pass.", [TurnCall({"command": "npm test"}, "in_flight")]) == [
        "the test call of this turn has no recorded outcome"]
    assert check_claim("Built it, committed and pushed.", [TurnCall({"command": "make -j4"}, "ok", 0),
                                                            TurnCall({"command": "git commit -am fix"}, "ok", 0)]) == [
        "no tool call of this turn pushed"]
    for honest in ("Next I will run the tests.", "I did not run the tests.", "Renamed, alias kept.",
                   "Added the changelog entry.", "Let me build it first."):
        assert check_claim(honest, []) == [], honest


def _turns_source(turns: int = 8):
    """The issue's case: every turn made big Edit calls and ended with a claim."""
    inputs, calls, claims = [], [], []
    for t in range(turns):
        turn = f"turn-{t}"
        inputs.append(SourceInput(id=f"in-{t}", text=f"refactor handler {t}", state="handled", turn_id=turn,
                                  admitted_seq=t * 10, pointer=ptr(t * 10)))
        calls += [SourceToolCall(call_id=f"c{t}-{k}", tool="Edit", args={**EDIT, "file_path": f"src/h{t}_{k}.py"},
                                 status="ok", turn_id=turn, pointer=ptr(t * 10 + 1 + k)) for k in range(3)]
        claims.append(SourceClaim(turn_id=turn, seq=t * 10 + 9, pointer=ptr(t * 10 + 9),
                                  text=f"Refactored handler {t}: strict mode on, callers updated. " * 3))
    inputs.append(SourceInput(id="in-open", text="now wire the handlers into the router", state="pending",
                              turn_id="turn-open", admitted_seq=999, pointer=ptr(999)))
    return representative_source(inputs=inputs, tool_calls=calls, claims=claims)


def test_a_kinds_command_and_success_patterns_are_compiled_only_when_claimed(monkeypatch):
    """Importing the check compiles no kind's pattern, and checking a claim of tests compiles
    the claim patterns and the test kind's command and success patterns, no other kind's (a
    boundary gathering claims paid every compile at import: ~5 ms)."""
    import importlib
    import re
    import sys

    compiled: list[str] = []
    compile_ = re.compile

    def recording(pattern, flags=0):
        compiled.append(pattern)
        return compile_(pattern, flags)

    monkeypatch.setattr(re, "compile", recording)
    re.purge()  # (re keeps what it compiled; start from nothing)
    monkeypatch.delitem(sys.modules, "capsule.claim_check")  # a fresh import, put back after
    claim_check = importlib.import_module("capsule.claim_check")
    kinds = {k.name: k for k in claim_check.KINDS}
    assert not {p for k in kinds.values() for p in (k.claim_pattern, k.command_pattern)} & set(compiled)
    assert claim_check.check_claim("I ran the tests and they pass.",
                                   [claim_check.TurnCall({"command": "pytest -q"}, "error", 1)]) == [
        "every test call of this turn failed (last: exit 1)"]
    assert {k.claim_pattern for k in kinds.values()} <= set(compiled)
    assert {kinds["test"].command_pattern, kinds["test"].success_pattern} <= set(compiled)
    assert not {k.command_pattern for name, k in kinds.items() if name != "test"} & set(compiled)


def test_final_claims_of_the_newest_turns_outlive_old_edit_arguments():
    capsule = build_capsule(_turns_source(), counter=counter())
    assert capsule.budget.tokens <= 4000
    assert capsule.budget.dropped.get("work_done[historical]"), capsule.budget.dropped  # big Edits went
    kept = {c.turn_id for c in capsule.assistant_claims}
    assert {"turn-5", "turn-6", "turn-7"} <= kept, kept
    text = render_capsule(capsule)
    assert all(line.startswith("- claim (assistant said; unverified)")
               for line in text.splitlines() if "Refactored handler 7" in line)


def test_claim_of_a_test_run_that_never_happened_is_shown_with_the_record(home):
    with Engine(home) as e:
        t = e.thread("claude", "claims", workspace_root=None)
        t.admit("fix the import and run the tests", input_id="p1", turn_id="p1")
        t.tool_started("e1", "Edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"}, turn_id="p1")
        t.tool_finished("e1", "ok", turn_id="p1")
        t.claim("Fixed the import. I ran the tests and they pass.", turn_id="p1")
        t.turn_completed("p1")
        t.admit("and now the changelog", input_id="p2", turn_id="p2")
        t.tool_started("t2", "Bash", {"command": "python -m pytest -q"}, turn_id="p2")
        t.tool_finished("t2", "error", exit_code=1, turn_id="p2")
        t.claim("Changelog updated; tests pass.", turn_id="p2")
        t.turn_completed("p2")
        capsule = build(t, generation=1, reason="test")
    checks = {c.turn_id: c.checks for c in capsule.assistant_claims}
    assert checks == {"p1": ["no tool call of this turn ran tests"],
                      "p2": ["every test call of this turn failed (last: exit 1)"]}
    line = next(x for x in render_capsule(capsule).splitlines() if "I ran the tests" in x)
    assert line.startswith("- claim (assistant said; unverified)")
    assert 'runtime_record=["no tool call of this turn ran tests"]' in line


def test_compiling_the_claim_patterns_compiles_each_kinds_claim_and_nothing_else(monkeypatch):
    """What a rewind's warm-up compiles ahead (``compile_claim_patterns``) is exactly what a
    gathering's claim check compiles first: every kind's claim pattern, not its command or
    success patterns (compiled only when a claim asserts that kind)."""
    import re

    from capsule import claim_check

    seen = []
    real = re.compile
    monkeypatch.setattr(re, "compile",
                        lambda pattern, flags=0: seen.append(pattern) or real(pattern, flags))
    claim_check.compile_claim_patterns()
    assert sorted(seen) == sorted(k.claim_pattern for k in claim_check.KINDS)
