"""Damaged transcripts: counted and reported, never fatal, and never imported twice."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from continuation.session.engine import Engine
from continuation.importers import TranscriptUnreadable, import_transcript, reader
from import_helpers import PROJECT_TRANSCRIPTS, run_import, snapshot, states, thread_of

SESSION = "synth-claude-1"
BASE = PROJECT_TRANSCRIPTS / "claude_queue_interrupt.jsonl"


def _line(uuid, parent, text, prompt_id=None, **extra) -> bytes:
    rec = {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": SESSION,
           "message": {"role": "user", "content": text}, **extra}
    if prompt_id:
        rec["promptId"] = prompt_id
    return json.dumps(rec).encode() + b"\n"


def _write(tmp_path, data: bytes, name="t.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_torn_final_line_stops_there_and_resumes_when_complete(home, tmp_path):
    base = BASE.read_bytes()
    full = _line("u9", "u8", "one more thing", prompt_id="p9")
    path = _write(tmp_path, base + full[:25])
    r = run_import(home, "claude", path, session_over=False)
    assert r.stopped_at == len(base) and r.torn_line == 17 and "torn" in r.stop_reason
    assert r.malformed == [] and r.cursor_to == len(base)
    assert "one more thing" not in states(home, "claude", SESSION)
    # the writer finishes the line: the next import starts at the cursor and takes it
    path.write_bytes(base + full)
    before = snapshot(home, "claude", SESSION)
    r2 = run_import(home, "claude", path, session_over=False)
    assert r2.resumed and r2.cursor_from == len(base) and r2.stopped_at is None
    assert r2.inputs_admitted == 1 and r2.duplicates == 3
    after = snapshot(home, "claude", SESSION)
    # the unanswered prompt before it was cut by the new one: nothing else is written again
    assert after["types"] - before["types"] == Counter({"input_admitted": 1, "turn_aborted": 1,
                                                        "transcript_imported": 1})
    got = states(home, "claude", SESSION)
    assert got["one more thing"] == "pending" and got["explain the diff"] == "interrupted"


def test_nul_filled_tail(home, tmp_path):
    base = BASE.read_bytes()
    path = _write(tmp_path, base + b"\x00" * 8192)
    r = run_import(home, "claude", path, session_over=True)
    assert r.stopped_at == len(base) and r.stop_reason == "NUL-filled tail"
    assert r.malformed == [] and r.inputs_admitted == 3
    assert f"stopped at byte {len(base)}" in r.render()


def test_nul_hole_inside_the_file_is_reported(home, tmp_path):
    lines = BASE.read_bytes().splitlines(keepends=True)
    path = _write(tmp_path, b"".join(lines[:5]) + b"\x00" * 100 + b"\n" + b"".join(lines[5:]))
    r = run_import(home, "claude", path, session_over=True)
    assert r.stopped_at is None
    assert [m["reason"] for m in r.malformed] == ["NUL-filled region inside the file"]
    assert r.inputs_admitted == 3


def test_malformed_lines_counted_with_numbers(home, tmp_path):
    lines = BASE.read_bytes().splitlines(keepends=True)
    data = lines[0] + b"{not json\n" + b"[1, 2]\n" + b'"text"\n' + b"".join(lines[1:])
    path = _write(tmp_path, data)
    r = run_import(home, "claude", path, session_over=True)
    assert [(m["line"], m["reason"].split(":")[0]) for m in r.malformed] == [
        (2, "invalid JSON"), (3, "not a JSON object (list)"), (4, "not a JSON object (str)")]
    assert r.malformed[0]["offset"] == len(lines[0])
    assert r.inputs_admitted == 3


def test_unknown_types_and_future_versions(home, tmp_path):
    base = BASE.read_bytes()
    extra = (json.dumps({"type": "quantum-state", "version": "99.0.0", "sessionId": SESSION}).encode()
             + b"\n" + _line("u10", "u8", "future prompt", prompt_id="p10", version="99.1.0",
                             schemaVersion=7, unknownBlock={"a": [1, {"b": None}]}))
    path = _write(tmp_path, base + extra)
    r = run_import(home, "claude", path, session_over=False)
    assert r.unknown_types == Counter({"hologram": 1, "quantum-state": 1})
    assert {"99.0.0", "99.1.0", "9.0.0"} <= r.versions
    assert states(home, "claude", SESSION)["future prompt"] == "pending"


def test_codex_future_fields_and_unknown_items(home, tmp_path):
    meta = {"type": "session_meta", "payload": {"id": "synth-future", "cwd": "/tmp/x",
                                                 "cli_version": "9.9.9", "brand_new": {"x": 1}}}
    records = [
        meta,
        {"type": "event_msg", "payload": {"type": "task_started", "turn_id": "t1", "new": 1}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "hello"}, {"type": "input_hologram", "x": 1}]}},
        {"type": "response_item", "payload": {"type": "quantum_call", "call_id": "q1"}},
        {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "t1"}},
        {"type": "timeline_v9", "payload": {}},
    ]
    path = _write(tmp_path, b"".join(json.dumps(r).encode() + b"\n" for r in records))
    r = run_import(home, "codex", path, session_over=True)
    assert states(home, "codex", "synth-future") == {"hello": "handled"}
    assert r.unknown_types == Counter({"timeline_v9": 1})
    assert r.skipped_by_type["response_item:quantum_call"] == 1 and "9.9.9" in r.versions


def test_ten_megabyte_line(home, tmp_path):
    lines = BASE.read_bytes().splitlines(keepends=True)
    big_result = {"type": "user", "uuid": "ubig", "parentUuid": "a1", "sessionId": SESSION,
                  "promptId": "p1", "message": {"role": "user", "content": [
                      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * (10 * 1024 * 1024)}]}}
    # the huge result replaces the normal one (line 4)
    data = b"".join(lines[:3]) + json.dumps(big_result).encode() + b"\n" + b"".join(lines[4:])
    path = _write(tmp_path, data)
    r = run_import(home, "claude", path, session_over=True)
    assert r.malformed == [] and r.tool_calls_paired == 2 and r.bytes_read == len(data)
    with Engine(home) as e:
        call = [c for c in thread_of(e, "claude", SESSION).tool_calls() if c.call_id == "toolu_1"][0]
        assert call.status == "ok" and len(call.outcome["output"]) < 5000  # an excerpt is stored
    assert states(home, "claude", SESSION)["run the migration"] == "handled"


def test_oversized_line_is_skipped_not_held(home, tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 4096)
    lines = BASE.read_bytes().splitlines(keepends=True)
    huge = _line("uh", "u8", "y" * 50_000, prompt_id="ph")
    data = b"".join(lines) + huge + _line("u11", "uh", "after the huge one", prompt_id="p11")
    path = _write(tmp_path, data)
    r = run_import(home, "claude", path, session_over=False)
    [bad] = r.malformed
    assert bad["line"] == len(lines) + 1 and bad["offset"] == len(b"".join(lines))
    assert "longer than 4096" in bad["reason"] and r.bytes_read == len(data)
    got = states(home, "claude", SESSION)
    assert "after the huge one" in got and not any(t.startswith("yyy") for t in got)


def test_invalid_utf8_is_repaired_and_listed(home, tmp_path):
    base = BASE.read_bytes()
    bad = _line("u12", "u8", "caf__ au lait", prompt_id="p12").replace(b"__", b"\xff\xfe")
    path = _write(tmp_path, base + bad)
    r = run_import(home, "claude", path, session_over=False)
    assert r.invalid_utf8_lines == [17] and r.malformed == []
    assert "caf\ufffd\ufffd au lait" in states(home, "claude", SESSION)


def test_binary_garbage_file(home, tmp_path):
    import random

    rnd = random.Random(7)
    path = _write(tmp_path, bytes(rnd.randrange(256) for _ in range(20000)), "garbage.jsonl")
    from continuation.importers import NothingRecognised

    with pytest.raises(NothingRecognised, match="none of its .* line.* is a JSON record"):
        run_import(home, "claude", path, session_over=True)
    with Engine(home) as e:
        assert e.store.threads() == []  # no empty thread to become the default


def test_empty_file(home, tmp_path):
    r = run_import(home, "codex", _write(tmp_path, b"", "rollout-empty.jsonl"), session_over=True)
    assert r.lines == 0 and r.records_read == 0 and r.session_id == "rollout-empty"
    assert r.thread_created is False and "no user input or tool call yet" in r.nothing_imported
    with Engine(home) as e:
        assert e.store.threads() == []


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_unreadable_file(home, tmp_path, kind, capsys):
    from continuation.commands import run

    path = tmp_path / "nope.jsonl"
    if kind == "folder":
        path.mkdir()
    with Engine(home) as e, pytest.raises(TranscriptUnreadable):
        import_transcript("claude", path, engine=e)
    assert run(["import", "claude", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1


def test_cli_exit_zero_with_skipped_records(home, tmp_path, capsys):
    from continuation.commands import run

    path = _write(tmp_path, BASE.read_bytes() + b"{broken\n" + b"\x00" * 64)
    assert run(["import", "claude", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["malformed_count"] == 1 and data["stop_reason"] == "NUL-filled tail"
    assert data["unknown_types"] == {"hologram": 1}
