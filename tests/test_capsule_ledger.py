"""The work ledger: a long turn's finished calls survive the budget, grouped."""
from __future__ import annotations

from test_capsule_sample import counter, ptr, representative_source

from capsule import Budget, build_capsule, render_capsule
from capsule.ledger import (
    PLACEHOLDER,
    args_text,
    compress_values,
    expand_group,
    expand_values,
    files_written,
    group_calls,
)
from capsule.source import SourceClaim, SourceFact, SourceInput, SourceToolCall


def _cmd(i: int) -> dict:
    return {"command": f'echo "step {i} of the migration log: moved record batch {i} to the new table" >> notes.txt'}


def _calls(args_list, status="ok", exit_code=0):
    return [("Bash", status, exit_code, a, f"p{k}") for k, a in enumerate(args_list)]


def test_identical_calls_are_one_group_with_a_count():
    (g,) = group_calls(_calls([{"command": "echo line >> notes.txt"}] * 46))
    assert (g.tool, g.count, g.values, g.status, g.exit_code) == ("Bash", 46, None, "ok", 0)
    assert g.files == ["notes.txt"] and g.pointers[0] == "p0" and g.pointers[-1] == "p45"


def test_calls_differing_in_numbers_that_vary_together_are_one_template():
    args = [_cmd(i) for i in range(1, 37)]
    (g,) = group_calls(_calls(args))
    assert g.args.count(PLACEHOLDER) == 2 and g.values_text == "1..36" and g.count == 36
    assert expand_group(g.args, g.values_text) == [args_text(a) for a in args]


def test_grouping_keeps_statuses_apart_and_never_guesses():
    calls = _calls([_cmd(1), _cmd(2)]) + _calls([_cmd(3)], status="error", exit_code=2)
    # two numbers that do not vary together: identical texts only
    calls += _calls([{"command": "sed -n 1,50p a.py"}, {"command": "sed -n 51,100p a.py"}])
    calls += _calls([{"command": "echo {N} 1"}, {"command": "echo {N} 2"}])  # a literal {N}: no template
    groups = group_calls(calls)
    got = [(g.status, g.exit_code, g.count, g.values_text) for g in groups]
    assert got == [("ok", 0, 2, "1..2"), ("error", 2, 1, None), ("ok", 0, 1, None), ("ok", 0, 1, None),
                   ("ok", 0, 1, None), ("ok", 0, 1, None)]
    every = [t for g in groups for t in expand_group(g.args, g.values_text) * (g.count if g.values is None else 1)]
    assert sorted(every) == sorted(args_text(c[3]) for c in calls)


def test_values_compress_and_expand_in_call_order():
    values = ["1", "2", "3", "7", "5", "6", "007", "0"]
    assert compress_values(values) == "1..3,7,5..6,007,0"
    assert expand_values(compress_values(values)) == values


def test_long_value_lists_split_over_groups():
    args = [_cmd(i) for i in range(0, 4000, 2)]  # no runs: every value listed
    groups = group_calls(_calls(args))
    assert len(groups) > 1 and all(len(g.values_text) <= 400 for g in groups)
    assert [t for g in groups for t in expand_group(g.args, g.values_text)] == [args_text(a) for a in args]


def test_files_written_are_what_the_arguments_name():
    assert files_written("Write", {"file_path": "/w/a.py", "content": "x"}) == ["/w/a.py"]
    assert files_written("apply_patch", {"input": "*** Begin Patch\n*** Update File: b.py\n*** Add File: c.py\n"}) == [
        "b.py", "c.py"]
    assert files_written("Bash", {"command": "make 2>&1 | tee build.log; echo x > 'out file.txt' && cat a >/dev/null"}) == [
        "out file.txt", "build.log"]
    assert files_written("shell", {"command": ["bash", "-lc", "echo hi >> notes.txt"]}) == ["notes.txt"]
    assert files_written("Read", {"file_path": "a.py"}) == []


def long_turn_source(calls: int, done: int):
    """One pending input whose turn made ``done`` of ``calls`` numbered calls, plus the kinds of
    detail that filled the capsule in the issue: facts, claims, a big workspace record."""
    big_ws = {"root": "/home/dev/proj", "kind": "git", "schema_version": 1, "head": "3f2a9c1e" * 5,
              "branch": "main", "detached": False, "snapshot_ref": "refs/continuation/t/1",
              "snapshot_commit": "a" * 40, "snapshot_tree": "b" * 40, "size_cap_bytes": 10485760,
              "exclude_patterns": ["*.log", "node_modules/"], "excluded": [f"big{k}.bin" for k in range(20)],
              "dirty": {"base": "HEAD", "modified": 1, "paths": [{"status": "M", "path": "notes.txt"}]}}
    return representative_source(
        inputs=[SourceInput(id="in-long", text=f"write the migration log, {calls} steps", state="pending",
                            turn_id="t-long", admitted_seq=1, pointer=ptr(1))],
        tool_calls=[SourceToolCall(call_id=f"c{i}", tool="Bash", args=_cmd(i), status="ok", exit_code=0,
                                   turn_id="t-long", pointer=ptr(10 + i)) for i in range(1, done + 1)],
        facts=[SourceFact(seq=10 + i, kind="tool_finished", text=f"tool call c{i} finished: ok", pointer=ptr(10 + i))
               for i in range(1, 41)],
        claims=[SourceClaim(turn_id="t-long", seq=5000 + k, text=f"Wrote steps up to {k * 10}. " * 8,
                            pointer=ptr(5000 + k)) for k in range(8)],
        workspace=big_ws, notices=[], plan=None, background=[], attachments=[],
    )


def _ledger_calls(capsule) -> list[str]:
    """Every call the capsule's ledger rows stand for, as call texts (``$ <command>``)."""
    out = []
    for row in capsule.work_done:
        texts = expand_group(row.call, row.values)
        out += texts if row.values is not None else texts * row.count
    return out


def test_a_long_turn_keeps_its_newest_calls_verbatim_and_cuts_the_oldest_with_pointers():
    """Calls that differ only in numbers are each their own line, written as they ran (no
    ``{N}`` template a model would have to expand); the budget holds, the newest calls are
    kept, and the cut names the oldest ones' first and last pointers (the work record's pages
    hold them all: tests/test_work_record.py)."""
    for calls in (40, 200, 1000):
        done = calls * 9 // 10
        capsule = build_capsule(long_turn_source(calls, done), counter=counter())
        budget = Budget()
        assert capsule.budget.bytes <= budget.max_bytes and capsule.budget.tokens <= budget.max_tokens
        kept = _ledger_calls(capsule)
        expected = [f"$ {_cmd(i)['command']}" for i in range(1, done + 1)]
        assert kept == expected[len(expected) - len(kept):], calls  # the newest, in order
        assert all(row.values is None and row.count == 1 for row in capsule.work_done)
        if len(kept) < done:
            [cut] = [c for c in capsule.cuts if c.field == "work_done[actionable]"]
            assert cut.items == done - len(kept) and cut.pointer == ptr(11)
        text = render_capsule(capsule)
        for internal in ("snapshot_tree", "size_cap_bytes", "schema_version", "exclude_patterns", "snapshot_commit"):
            assert internal not in text
    assert len(kept) >= 80  # ~95-character commands (60-character ones: 100, tests/test_work_record.py)


def test_identical_calls_are_one_line_with_a_count():
    source = long_turn_source(40, 0).model_copy(update={"tool_calls": [
        SourceToolCall(call_id=f"c{i}", tool="Bash", args={"command": "echo line >> notes.txt"}, status="ok",
                       exit_code=0, turn_id="t-long", pointer=ptr(10 + i)) for i in range(46)]})
    capsule = build_capsule(source, counter=counter())
    [row] = capsule.work_done
    assert (row.count, row.call, row.seq, row.last_seq) == (46, "$ echo line >> notes.txt", 10, 55)
    assert "#10..#55 ran=46x $ echo line >> notes.txt" in render_capsule(capsule)


def test_the_open_turns_ledger_is_cut_after_workspace_facts_and_claims():
    """With no room for everything, workspace, facts and claims go first; the ledger of the
    open input's turn stays (distinct calls: no grouping helps)."""
    source = long_turn_source(40, 36).model_copy(update={"tool_calls": [
        SourceToolCall(call_id=f"c{i}", tool="Bash", args={"command": f"run-task-{chr(65 + i % 26) * (i + 3)}"},
                       status="ok", turn_id="t-long", pointer=ptr(10 + i)) for i in range(120)]})
    capsule = build_capsule(source, Budget(max_bytes=6144, max_tokens=2000), counter=counter())
    dropped = capsule.budget.dropped
    assert capsule.work_done and dropped.get("work_done[actionable]"), dropped
    assert not capsule.runtime_facts and not capsule.assistant_claims and capsule.workspace is None
    full = build_capsule(source, counter=counter())
    # with the default budget the facts and claims go first, the open turn's calls are cut last
    assert sum(r.count for r in full.work_done) > sum(r.count for r in capsule.work_done)
    assert not full.runtime_facts
    order = [f"$ {c.args['command']}" for c in source.tool_calls]
    kept = _ledger_calls(capsule)
    assert kept == order[len(order) - len(kept):]  # the oldest groups went first
