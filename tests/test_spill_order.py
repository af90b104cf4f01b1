"""What a shortened context keeps inline, and a new block naming the one it
supersedes."""
from __future__ import annotations

import json

from test_capsule_sample import counter, ptr, representative_source

from capsule import build_capsule, render_capsule
from capsule.assemble import assemble_context
from capsule.context import js_len
from capsule.source import SourceFact
from continuation.boundary import checkpoints
from continuation import hooks
from continuation.session.engine import Engine


def _source():
    facts = []
    for k in range(30):  # a long life of session starts and ends, oldest first
        kind = "session_started" if k % 2 == 0 else "session_ended"
        facts.append(SourceFact(seq=100 + k, kind=kind, text=f"{kind.replace('_', ' ')} (startup) #{k}",
                                pointer=ptr(100 + k)))
    facts.append(SourceFact(seq=200, kind="crash_detected", text="session ended without a clean end: pid gone",
                            pointer=ptr(200)))
    return representative_source(facts=facts)


def test_a_shortened_block_moves_old_low_value_lines_first(tmp_path):
    source = _source()
    capsule = build_capsule(source, counter=counter())
    block = render_capsule(capsule)
    actionable = [i for i in source.inputs if i.state == "pending"]
    ctx = assemble_context(None, capsule, actionable_inputs=actionable)
    limit = js_len(ctx.as_text()) - 1500
    inline = ctx.fit_inline(limit, str(tmp_path / "spill.md"))
    assert inline.spilled and js_len(inline.text) <= limit
    text = inline.text
    # the newest, most useful lines stay: the crash fact, the cuts, the open inputs, the ledger
    assert 'kind="crash_detected"' in text, text
    assert "- cut " in text or not capsule.cuts
    for line in block.splitlines():
        if line.startswith(("- input=", "- done ", "- call=", "- notice ")) and (
                "state=handled" not in line and "state=superseded" not in line):
            assert line in text, line
    # the oldest session start/end facts moved first, and the section says so
    kept_sessions = [k for k in range(30) if f"(startup) #{k}\"" in text]
    assert kept_sessions == sorted(kept_sessions) and (not kept_sessions or kept_sessions[-1] == 29)
    assert len(kept_sessions) < 30
    assert "more item(s) of this section: in the full text file]" in text
    # the block is still well formed: its markers, its preamble and its section order
    lines = text.splitlines()
    begin = next(i for i, x in enumerate(lines) if x.startswith("<<<CONTINUATION-CHECKPOINT"))
    assert lines[begin + 1].startswith("CHECKPOINT DATA")
    headings = [x for x in lines if x.startswith("## ")]
    assert headings == [x for x in block.splitlines() if x in headings]


def feed(runtime: str, payloads) -> None:
    for p in payloads:
        hooks.run(runtime, json.dumps(p).encode())


def test_a_later_block_says_which_generation_it_supersedes(home, tmp_path):
    base = {"session_id": "sup", "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")}
    feed("claude", [{**base, "hook_event_name": "SessionStart", "source": "startup"},
                    {**base, "hook_event_name": "UserPromptSubmit", "prompt": "first task", "prompt_id": "p1"},
                    {**base, "hook_event_name": "PreCompact", "trigger": "manual"},
                    {**base, "hook_event_name": "SessionStart", "source": "compact"},
                    {**base, "hook_event_name": "UserPromptSubmit", "prompt": "second task", "prompt_id": "p2"},
                    {**base, "hook_event_name": "PreCompact", "trigger": "auto"}])
    with Engine(home) as e:
        t = e.find_thread("claude", "sup")
        first, second = checkpoints.load(t, 1).capsule, checkpoints.load(t).capsule
    assert first.supersedes_generation is None
    assert second.generation == 2 and second.supersedes_generation == 1
    preamble = render_capsule(second).splitlines()[1:4]
    assert any("supersedes the checkpoint block of generation 1" in x for x in preamble)
    assert not any("supersedes" in x for x in render_capsule(first).splitlines())


def test_the_budget_drops_session_facts_before_an_older_crash_fact():
    facts = [SourceFact(seq=1, kind="crash_detected", text="session ended without a clean end", pointer=ptr(1))]
    facts += [SourceFact(seq=10 + k, kind="session_started", text=f"session started (resume) #{k} " + "x" * 80,
                         pointer=ptr(10 + k)) for k in range(40)]
    from capsule import Budget

    capsule = build_capsule(representative_source(facts=facts), Budget(max_bytes=8192, max_tokens=2500),
                            counter=counter())
    kinds = [f.kind for f in capsule.runtime_facts]
    assert capsule.budget.dropped.get("runtime_facts"), capsule.budget.dropped
    assert "crash_detected" in kinds


def test_the_newest_input_keeps_its_text_before_an_older_long_one(tmp_path):
    from capsule.source import SourceInput

    source = representative_source()
    capsule = build_capsule(source, counter=counter())
    old = SourceInput(id="in-old", text="migrate the handlers: " + "step k: update a handler. " * 150,
                      state="interrupted", turn_id="t-old", admitted_seq=40, pointer=ptr(40))
    new = SourceInput(id="in-new", text="and the docs for both", state="pending", turn_id="t-new",
                      admitted_seq=41, pointer=ptr(41))
    ctx = assemble_context(None, capsule, actionable_inputs=[old, new])
    inline = ctx.fit_inline(js_len(render_capsule(capsule)) + 1500, str(tmp_path / "spill.md")).text
    assert "\nand the docs for both\n" in inline  # whole, in its own block
    assert 'BEGIN user input id="in-old"' in inline and "characters in all; the middle is left out" in inline
