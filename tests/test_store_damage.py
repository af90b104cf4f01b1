"""A damaged SQLite store: hooks never lose a fact silently (a damaged store is set aside,
kept, and a new one records), commands say what is wrong in one line, ``doctor`` names the
damage and never crashes, and ``doctor --salvage`` copies every readable event into a new
store and counts the rest."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from safety_harness import damaged_store_home

from continuation.store.damage import StoreDamaged, damage_of, set_aside, set_aside_copies

SEEDS = (1, 2, 3, 4, 5)
EVENTS = 300
PAGE = 4096


def _run(home, *args, payload=None):
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    env.pop("CONTINUATION_STORE", None)
    return subprocess.run([sys.executable, "-m", "continuation", *args], env=env,
                          input=json.dumps(payload) if payload is not None else None,
                          capture_output=True, text=True, timeout=120)


def _damaged_home(tmp_path, seed: int):
    return damaged_store_home(tmp_path / f"h{seed}", seed, EVENTS, PAGE)


def _prompt(text):
    return {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": text,
            "cwd": "/tmp"}


def _live_texts(home):
    conn = sqlite3.connect(home / "store.sqlite3")
    try:
        return [json.loads(d).get("text") for (d,) in conn.execute(
            "SELECT data FROM events WHERE type='input_admitted' ORDER BY seq")]
    finally:
        conn.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_damaged_store_loses_no_fact_silently_and_every_verb_answers(tmp_path, seed):
    from continuation.host import lost_writes

    home = _damaged_home(tmp_path, seed)
    hook = _run(home, "hook", "--runtime", "claude", payload=_prompt("after the damage"))
    assert hook.returncode == 0 and "Traceback" not in hook.stderr
    answer = json.loads(hook.stdout)
    aside = set_aside_copies(str(home), "store.sqlite3")
    record = lost_writes.read(str(home))
    # the prompt is recorded (in the store, or in the new one after the damaged one was set
    # aside: then the user is told where it is), or it is counted lost: never silently gone
    if aside:
        assert "set aside" in answer.get("systemMessage", "") and record["store_reset"]
    recorded = "after the damage" in _safe_texts(home)
    assert recorded or record["lost"] >= 1, (seed, answer, record)
    for verb in (["status"], ["inputs"], ["context"], ["events"], ["checkpoints"], ["doctor"]):
        done = _run(home, *verb)
        out = done.stdout + done.stderr
        assert "Traceback" not in out and "internal error" not in out, (seed, verb, out[-400:])
        if done.returncode != 0 and verb != ["doctor"]:
            assert "damaged" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    doctor = _run(home, "doctor", "--json")
    findings = json.loads(doctor.stdout)["findings"]
    named = [f for f in findings if f["status"] == "problem" and f["check"].startswith("store")]
    assert named, (seed, findings)  # the damage (or the set-aside copy) is named


def _safe_texts(home):
    """The texts of the live store's newest prompts, read row by row (a damaged page elsewhere
    does not hide them)."""
    conn = sqlite3.connect(f"file:{home / 'store.sqlite3'}?mode=ro", uri=True)
    conn.text_factory = bytes
    try:
        last = conn.execute("SELECT max(last_seq) FROM threads").fetchone()[0] or 0
        texts = []
        for seq in range(max(1, last - 5), last + 1):
            try:
                row = conn.execute("SELECT data FROM events WHERE thread_key='claude-s1'"
                                   " AND seq=? AND type=?", (seq, "input_admitted")).fetchone()
                texts += [json.loads(row[0].decode())["text"]] if row else []
            except (sqlite3.DatabaseError, ValueError):
                pass
        return texts
    except sqlite3.DatabaseError:
        return []
    finally:
        conn.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_salvage_copies_every_readable_event_and_counts_the_rest(tmp_path, seed):
    home = _damaged_home(tmp_path, seed)
    original = tmp_path / f"copy{seed}.sqlite3"
    original.write_bytes((home / "store.sqlite3").read_bytes())
    _run(home, "hook", "--runtime", "claude", payload=_prompt("after the damage"))
    done = _run(home, "doctor", "--salvage", "--force", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["events_read"] + report["events_lost"] + report["refused"] >= EVENTS
    assert report["events_read"] >= EVENTS * 0.8  # 64 bytes lose a few rows, not the thread
    texts = _live_texts(home)
    assert "after the damage" in texts  # the fact recorded since (or in) the damaged store
    # every copied event and every fact carried from the store that took over, nothing else
    conn = sqlite3.connect(home / "store.sqlite3")
    stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    conn.close()
    assert stored == report["events_read"] + report["carried"]
    # nothing deleted: the damaged file is kept beside the store
    assert any(p.endswith(".salvaged") for p in os.listdir(home)) or report["source"]
    assert os.path.exists(report["source"])
    after = _run(home, "doctor", "--json")
    problems = [f["check"] for f in json.loads(after.stdout)["findings"]
                if f["status"] == "problem" and f["check"].startswith("store")]
    assert problems == []
    again = _run(home, "doctor", "--salvage")
    assert again.returncode != 0 and "nothing to salvage" in again.stderr


def test_the_salvaged_events_keep_their_seqs(tmp_path):
    """A lost event leaves a gap: every later seq still names the same event."""
    home = _damaged_home(tmp_path, 1)
    damaged = tmp_path / "damaged-copy.sqlite3"
    damaged.write_bytes((home / "store.sqlite3").read_bytes())
    _run(home, "doctor", "--salvage", "--force")
    conn = sqlite3.connect(home / "store.sqlite3")
    rows = conn.execute("SELECT seq, data FROM events WHERE type='input_admitted'").fetchall()
    conn.close()
    for seq, data in rows:
        # the event that was at this seq: whole, or as the damage left it readable (a flipped
        # byte inside a text can still read as JSON), never a neighbour's
        got = json.loads(data)
        assert got["input_id"] == f"in-{seq - 1}" or got == _row_at(damaged, seq), (seq, got)
    assert len(rows) < EVENTS  # this seed loses rows


def _row_at(path, seq: int):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT data FROM events WHERE seq=?", (seq,)).fetchone()
        return json.loads(row[0]) if row else None
    except (sqlite3.DatabaseError, ValueError):
        return None
    finally:
        conn.close()


def test_what_is_damage_and_what_is_not():
    assert damage_of(sqlite3.DatabaseError("database disk image is malformed"))
    assert damage_of(sqlite3.DatabaseError("file is not a database"))
    assert damage_of(sqlite3.OperationalError("Could not decode to UTF-8 column 'data'"))
    assert damage_of(StoreDamaged("/s", "x")) == "x"
    for whole in (sqlite3.OperationalError("database is locked"),
                  sqlite3.OperationalError("database or disk is full"),
                  sqlite3.OperationalError("attempt to write a readonly database"),
                  sqlite3.IntegrityError("UNIQUE constraint failed"),
                  OSError(28, "No space left on device")):
        assert damage_of(whole) is None, whole
    try:
        json.loads("{not json")
    except ValueError as exc:  # not raised reading the store: a payload, not damage
        assert damage_of(exc) is None


def test_setting_aside_keeps_the_file_and_moves_only_the_damaged_one(tmp_path):
    path = tmp_path / "store.sqlite3"
    path.write_bytes(b"damaged")
    seen = path.stat().st_ino
    target = set_aside(str(path), "malformed", seen_inode=seen)
    assert target and open(target, "rb").read() == b"damaged" and not path.exists()
    path.write_bytes(b"the new store another process made")
    assert set_aside(str(path), "malformed", seen_inode=seen) is None  # not the damaged file
    assert path.read_bytes() == b"the new store another process made"
    assert set_aside_copies(str(tmp_path), "store.sqlite3") == [target]
