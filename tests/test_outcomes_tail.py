"""Outcomes read back from a transcript's tail (continuation.hooks.outcomes): only the lines
holding a call's output or a Codex turn marker are parsed, and the answer is the one parsing
every line gives, on both runtimes' real transcripts, made ones and arbitrary ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuation.hooks import outcomes

SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
REAL = [SHARED / "codex" / "rollout-2026-11-29T09-44-16-01a226b0-e445-74a1-b671-074faf6bd457.jsonl",
        SHARED / "claude-real" / "69f7cc13-8194-4e19-9222-92d4ebe52422.jsonl"]


def _all_lines(data: bytes, *, partial_first: bool) -> list[bytes]:
    lines = data.split(b"\n")
    return [line for line in (lines[1:] if partial_first else lines) if line.strip()]


def _every_line(path, calls, monkeypatch) -> dict:
    """The answer when every line is parsed (as before the search for record kinds)."""
    with monkeypatch.context() as m:
        m.setattr(outcomes, "_lines_of_kinds", _all_lines)
        return outcomes.find_outcomes(str(path), calls)


def _ids(path: Path) -> list[str]:
    found = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        payload, message = record.get("payload") or {}, record.get("message") or {}
        if isinstance(payload, dict) and payload.get("call_id"):
            found.append(payload["call_id"])
        for block in message.get("content") or [] if isinstance(message, dict) else []:
            if isinstance(block, dict) and block.get("tool_use_id"):
                found.append(block["tool_use_id"])
    return sorted(set(found))


@pytest.mark.parametrize("path", REAL, ids=["codex", "claude"])
def test_real_transcripts_answer_as_when_every_line_is_parsed(path, monkeypatch):
    if not path.exists():
        pytest.skip("../shared is absent")
    ids = _ids(path)
    assert ids
    calls = [*ids, "call_absent", ("k-strict", ids[0], "turn-that-is-not-there"),
             ("k-loose", ids[-1], None)]
    fast = outcomes.find_outcomes(str(path), calls)
    assert fast == _every_line(path, calls, monkeypatch)
    assert fast and "call_absent" not in fast  # answers found, and only for calls there


def test_a_tail_that_begins_inside_a_line_skips_that_line(tmp_path, monkeypatch):
    """The partial first line of a tail is never parsed, needle or not."""
    monkeypatch.setattr(outcomes, "TAIL_BYTES", 200)
    out = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                                  "output": "Process exited with code 3"}}
    long_line = json.dumps({**out, "pad": "x" * 300})
    path = tmp_path / "rollout.jsonl"
    path.write_text(long_line + "\n" + json.dumps(out) + "\n")
    assert outcomes.find_outcomes(str(path), ["c1"])["c1"]["exit_code"] == 3
    path.write_text(json.dumps({"pad": "y" * 50}) + "\n" + long_line + "\n")  # c1 only partial
    assert outcomes.find_outcomes(str(path), ["c1"]) == _every_line(path, ["c1"], monkeypatch) == {}


def test_ids_of_any_spelling_and_any_number_are_found(tmp_path, monkeypatch):
    """The search is for record kinds, not ids: an id JSON writes escaped is found, and a
    turn asking for many calls costs one search."""
    odd = ['we"ird', "back\\slash", "ünï", "a/b"]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": cid, "output": f"Exit code: {n}"}}) + "\n"
        for n, cid in enumerate(odd + [f"call_{i}" for i in range(200)])))
    calls = odd + [f"call_{i}" for i in range(0, 200, 2)]
    found = outcomes.find_outcomes(str(path), calls)
    assert [found[cid]["exit_code"] for cid in odd] == [0, 1, 2, 3]
    assert len(found) == len(calls) and found == _every_line(path, calls, monkeypatch)


_record = st.one_of(
    st.builds(lambda cid, code: {"type": "response_item", "payload": {
        "type": "function_call_output", "call_id": cid, "output": f"Process exited with code {code}"}},
        st.sampled_from(["c1", "c2", "c3"]), st.integers(0, 3)),
    st.builds(lambda turn: {"type": "turn_context", "payload": {"turn_id": turn}},
              st.sampled_from(["t1", "t2"])),
    st.builds(lambda turn: {"type": "event_msg", "payload": {"type": "task_started", "turn_id": turn}},
              st.sampled_from(["t1", "t2"])),
    st.builds(lambda cid, err: {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": cid, "is_error": err, "content": "done"}]}},
        st.sampled_from(["c1", "c2", "toolu_9"]), st.booleans()),
    st.builds(lambda text: {"type": "assistant", "message": {"content": [
        {"type": "text", "text": text}]}}, st.text(max_size=40)),
)


@settings(max_examples=150, deadline=None)
@given(records=st.lists(_record, max_size=25), tail=st.integers(50, 4000),
       torn=st.booleans())
def test_arbitrary_transcripts_answer_as_when_every_line_is_parsed(tmp_path_factory, records,
                                                                   tail, torn):
    path = tmp_path_factory.mktemp("t") / "t.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(text[:-7] if torn and len(text) > 7 else text)
    calls = ["c1", "c2", ("k3", "c3", "t1"), ("k9", "toolu_9", "t2")]
    old = outcomes.TAIL_BYTES
    outcomes.TAIL_BYTES = tail
    try:
        fast = outcomes.find_outcomes(str(path), calls)
        real_search = outcomes._lines_of_kinds
        outcomes._lines_of_kinds = _all_lines
        try:
            slow = outcomes.find_outcomes(str(path), calls)
        finally:
            outcomes._lines_of_kinds = real_search
    finally:
        outcomes.TAIL_BYTES = old
    assert fast == slow
