"""The capsule's versions: today's round-trips, schema 1 stays readable, newer is a clear error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_capsule_sample import counter, representative_source

from capsule import (
    SCHEMA_VERSION,
    CapsuleFormatError,
    CapsuleVersionError,
    build_capsule,
    decode_capsule,
    encode_capsule,
    render_capsule,
)

V1_SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "capsule_v1.json"
V2_SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "capsule_v2.json"


def current_bytes() -> bytes:
    return encode_capsule(build_capsule(representative_source(), counter=counter()))


def test_round_trip_is_byte_exact():
    data = current_bytes()
    capsule = decode_capsule(data)
    assert capsule.schema_version == SCHEMA_VERSION == 4
    assert encode_capsule(capsule) == data
    assert decode_capsule(data.decode("utf-8")) == decode_capsule(json.loads(data)) == capsule


def test_canonical_encoding_is_sorted_compact_utf8():
    data = current_bytes()
    obj = json.loads(data)
    assert data == json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert obj["budget"]["bytes"] == len(data)


def test_v1_sample_is_read_and_upgraded_forever():
    capsule = decode_capsule(V1_SAMPLE.read_bytes())
    raw = json.loads(V1_SAMPLE.read_text(encoding="utf-8"))
    assert raw["schema_version"] == 1 and capsule.schema_version == 4
    assert capsule.thread.runtime == "claude" and capsule.thread.thread_id == raw["thread_id"]
    assert capsule.generation == 2 and capsule.reason == "auto"
    assert capsule.objective.input_id == "prompt-7c1e" and capsule.objective.text == raw["objective"]
    assert capsule.objective.actionable and capsule.objective.state == "reconciling"
    assert [(i.id, i.state) for i in capsule.inputs] == [(i["id"], i["state"]) for i in raw["inputs"]]
    assert capsule.queued_input_ids == ["prompt-9f03"]
    assert capsule.input_counts == {"handled": 1, "reconciling": 1, "queued": 1}
    (call,) = capsule.tool_calls
    assert call.status == "unknown" and json.loads(call.args) == raw["unknown_tool_calls"][0]["args"]
    # facts and claims stay apart
    assert [f.text for f in capsule.runtime_facts] == raw["facts"]
    assert [c.text for c in capsule.assistant_claims] == raw["claims"]
    assert capsule.next_action.kind == "reconcile_tool_call" and capsule.next_action.text == raw["next_action"]
    assert capsule.model_settings.model == "claude-sonnet-4-5" and capsule.permissions.permission_mode == "acceptEdits"
    assert capsule.model_settings.extra == {"max_thinking_tokens": "8000"}
    assert capsule.workspace["snapshot_ref"] == "refs/continuation/claude/2"
    assert (capsule.source.event_seq_first, capsule.source.event_seq_last) == (1, 41)
    (cut,) = capsule.cuts
    assert (cut.field, cut.original_bytes, cut.kept_bytes) == ("facts", 5120, 37) and not cut.original_tokens_exact
    assert capsule.budget.encoding == "unknown (schema 1)"
    # the upgraded capsule renders and re-encodes as the current schema
    assert "state=reconciling" in render_capsule(capsule)
    assert decode_capsule(encode_capsule(capsule)) == capsule


def test_v2_sample_is_read_and_upgraded_forever():
    """Schema 2 (written by the release before the work ledger) listed finished calls in
    tool_calls and carried the internal workspace record: read as schema 3, the finished call
    is a work-ledger row and the workspace is what a model needs."""
    raw = json.loads(V2_SAMPLE.read_text(encoding="utf-8"))
    capsule = decode_capsule(V2_SAMPLE.read_bytes())
    assert raw["schema_version"] == 2 and capsule.schema_version == 4
    assert [(c.call_id, c.status) for c in capsule.tool_calls] == [("call_b7", "unknown"), ("call_c9", "in_flight")]
    (done,) = capsule.work_done
    finished = next(c for c in raw["tool_calls"] if c["status"] == "ok")
    assert (done.tool, done.status, done.count, done.args, done.exit_code, done.turn_id) == (
        finished["tool"], "ok", 1, finished["args"], 0, "turn-1")
    assert done.input_ids == [i["id"] for i in raw["inputs"] if i.get("turn_id") == "turn-1"]
    assert {"snapshot_tree", "size_cap_bytes", "schema_version", "exclude_patterns"} <= set(raw["workspace"])
    assert capsule.workspace == {"root": "/home/dev/proj", "head": "3f2a9c1e5b7d", "branch": "main",
                                 "dirty": ["M export.py", "?? notes.txt"],
                                 "snapshot_ref": "refs/continuation/019a7c2e/3"}
    text = render_capsule(capsule)
    assert '- done turn="turn-1"' in text and "snapshot_tree" not in text
    assert decode_capsule(encode_capsule(capsule)) == capsule


def test_future_version_is_a_typed_error():
    obj = json.loads(current_bytes())
    obj["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(CapsuleVersionError) as info:
        decode_capsule(json.dumps(obj).encode())
    assert info.value.found == SCHEMA_VERSION + 1
    assert "newer" in str(info.value)
    assert isinstance(info.value, CapsuleFormatError)


def test_unknown_fields_are_ignored_at_every_level():
    obj = json.loads(current_bytes())
    obj["added_in_2_1"] = {"x": 1}
    obj["objective"]["confidence"] = 0.9
    obj["inputs"][0]["new_flag"] = True
    obj["budget"]["new_total"] = 7
    capsule = decode_capsule(json.dumps(obj))
    assert capsule == decode_capsule(current_bytes())


@pytest.mark.parametrize("data", [
    b"", b"{", b"\xff\xfe not utf-8", b"[]", b'"text"', b"{}",
    b'{"schema_version": "2"}', b'{"schema_version": true}', b'{"schema_version": 0}',
    b'{"schema_version": 2, "thread": {}}',
], ids=["empty", "torn", "binary", "list", "string", "no-version", "str-version", "bool-version", "zero", "missing"])
def test_malformed_input_is_a_clear_error(data):
    with pytest.raises(CapsuleFormatError) as info:
        decode_capsule(data)
    assert str(info.value)


def test_torn_capsule_is_a_clear_error():
    data = current_bytes()
    for cut in (1, len(data) // 2, len(data) - 1):
        with pytest.raises(CapsuleFormatError):
            decode_capsule(data[:cut])


def test_escaped_lone_surrogates_in_json_are_replaced_on_read():
    obj = json.loads(current_bytes())
    text = json.dumps(obj).replace('"text":', '"text": "\\ud800 lone" , "ignored_text":', 1)
    capsule = decode_capsule(text)
    assert capsule.assistant_claims[0].text == "\ufffd lone"
    render_capsule(capsule).encode("utf-8")
    encode_capsule(capsule)


def test_v1_with_wrong_types_is_a_clear_error():
    obj = json.loads(V1_SAMPLE.read_text(encoding="utf-8"))
    obj["inputs"][0]["state"] = "finished"
    with pytest.raises(CapsuleFormatError, match="schema 1"):
        decode_capsule(json.dumps(obj))


def test_schemas_are_built_on_first_use_and_still_validate():
    """Importing the capsule package builds no pydantic schema (``defer_build``: a
    boundary pays only for the models it uses); a model's first use builds it, and a capsule
    read back is still validated against it."""
    import subprocess
    import sys

    probe = (
        "import pydantic, capsule.model as m, capsule.source as s, capsule.budget as b, capsule.v1 as v\n"
        "from capsule.decode import decode_capsule\n"
        "models = [c for mod in (m, s, b, v) for c in vars(mod).values()\n"
        "          if isinstance(c, type) and issubclass(c, pydantic.BaseModel) and c.__module__ == mod.__name__]\n"
        "assert len(models) > 30, len(models)\n"
        "built = [c.__name__ for c in models if c.__pydantic_complete__]\n"
        "assert not built, built\n"
        "try:\n"
        "    decode_capsule(b'{\"schema_version\": 3, \"thread\": {}}')\n"
        "except m.CapsuleFormatError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('an invalid capsule was accepted')\n"
        "assert m.Capsule.__pydantic_complete__\n"
        "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_guard_field_is_optional_both_ways():
    """A capsule of a thread without a check has no ``guard`` key (byte for byte as before);
    one with it keeps the loop's state in the always-kept header and reads back; an older
    reader's input (no key) reads as None; a wrongly typed guard is a clear error."""
    from capsule.source import SourceGuard

    plain = build_capsule(representative_source(), counter=counter())
    assert plain.guard is None and b'"guard"' not in encode_capsule(plain)
    guard = SourceGuard(command="pytest -q " + "x" * 400, verdict="fail", action="report",
                        exit_code=1, at_seq=40, failures_in_row=1, good_checkpoint="cp-7-abc",
                        good_seq=31, rewinds_used=1, rewinds_budget=3, runs=6)
    capsule = build_capsule(representative_source(guard=guard), counter=counter())
    assert capsule.guard.good_checkpoint == "cp-7-abc" and capsule.guard.rewinds_used == 1
    assert len(json.dumps(capsule.guard.command)) <= 160  # clipped in the header
    assert decode_capsule(encode_capsule(capsule)) == capsule
    assert "## guard (the project's check" in render_capsule(capsule)
    assert "verdict=fail action=report" in render_capsule(capsule)
    obj = json.loads(encode_capsule(capsule))
    obj["guard"] = {"verdict": ["not", "text"]}
    with pytest.raises(CapsuleFormatError):
        decode_capsule(json.dumps(obj))
