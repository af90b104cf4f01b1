"""`continuation gc` and checkpoint data (continuation/boundary/retention.py): the newest
CONTINUATION_KEEP_GENERATIONS generations of a thread whole, older ones as capsule bytes, and
under the CONTINUATION_KEEP_BYTES cap of the state home the oldest capsules pruned first,
never a thread's newest; a pruned checkpoint stays listed and rewindable and says so."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from continuation.boundary import checkpoints
from continuation.boundary.retention import RetentionError, keep_bytes, parse_size, prune
from continuation.session.engine import Engine


def run_cli(home, *args, env=None):
    return subprocess.run([sys.executable, "-m", "continuation", *args], capture_output=True,
                          timeout=120, env={**os.environ, "CONTINUATION_HOME": str(home), **(env or {})})


def _spill(home, key, g, text):
    path = home / "contexts" / key / f"g{g:06d}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _thread(e, session, n, *, t0=1000.0, step=10.0, spill=True):
    """A thread with ``n`` checkpoints, committed at t0, t0+step, ... (created_at set so the
    age order across threads is known), each with a spilled context."""
    t = e.thread("codex", session)
    for g in range(1, n + 1):
        t.admit(f"{session} request {g} " + "x" * 300, turn_id=f"t{g}")
        checkpoints.commit(t, reason="manual")
        with e.store.transaction() as c:
            c.execute("UPDATE checkpoints SET created_at=? WHERE thread_key=? AND generation=?",
                      (t0 + step * (g - 1), t.key, g))
        if spill:
            _spill(e.home, t.key, g, f"context of {session} generation {g}\n" * 20)
    return t.key


def _rows(home):
    """(thread, generation) -> (capsule bytes, rendered bytes, file_path), read apart from the code under test."""
    con = sqlite3.connect(home / "store.sqlite3")
    try:
        return {(k, g): (len(c), len(r.encode("utf-8")), p) for k, g, c, r, p in con.execute(
            "SELECT thread_key, generation, capsule, rendered, file_path FROM checkpoints")}
    finally:
        con.close()


def _files(home):
    return {str(p.relative_to(home)): p.stat().st_size
            for folder in ("capsules", "contexts", "handoff") if (home / folder).is_dir()
            for p in (home / folder).rglob("*") if p.is_file()}


def _payload(home):
    return sum(c + r for c, r, _ in _rows(home).values()) + sum(
        s for name, s in _files(home).items() if not name.startswith("capsules"))


def test_generations_beyond_keep_lose_rendering_and_files_but_stay_whole_capsules(home):
    with Engine(home) as e:
        key = _thread(e, "s1", 5)
        # copies written per boundary by earlier versions (one a lost race's orphan)
        legacy = checkpoints.capsule_dir(e.home, key)
        legacy.mkdir(parents=True)
        (legacy / "g000002-0123456789ab.json").write_bytes(b"{}")
        (legacy / "g000005-0123456789ab.json").write_bytes(b'{"a": 1}')
        with e.store.transaction() as c:
            c.execute("UPDATE checkpoints SET file_path=? WHERE thread_key=? AND generation=5",
                      (str(legacy / "g000005-0123456789ab.json"), key))
    before = _rows(home)
    r = run_cli(home, "gc", "--json", env={"CONTINUATION_KEEP_GENERATIONS": "2"})
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["checkpoint_data"]
    after = _rows(home)
    # generations 1-3: capsule bytes kept, rendering dropped; 4-5 untouched
    for g in (1, 2, 3):
        assert after[(key, g)][0] == before[(key, g)][0] > 0 and after[(key, g)][1] == 0
    for g in (4, 5):
        assert after[(key, g)][:2] == before[(key, g)][:2]
    assert after[(key, 5)][2] is None  # the deleted copy is forgotten
    assert data["renderings"] == 3 and data["capsules"] == 0 and data["legacy_copies"] == 2
    assert data["rendering_bytes"] == sum(before[(key, g)][1] for g in (1, 2, 3))
    assert sorted(_files(home)) == [f"contexts/{key}/g000004.md", f"contexts/{key}/g000005.md"]
    assert data["kept_bytes"] == _payload(home)
    # every generation is still listed, loads, and renders (from its bytes) as committed
    with Engine(home) as e:
        t = e.get_thread(key)
        assert [cp.generation for cp in checkpoints.list_checkpoints(t)] == [1, 2, 3, 4, 5]
        loaded = checkpoints.load(t, 2)
        assert loaded.capsule.objective.text.startswith("s1 request 2")
        assert loaded.checkpoint.rendered == "" and "s1 request 2" in loaded.rendered()
    r = run_cli(home, "capsule", "show", "--generation", "1")
    assert r.returncode == 0 and b"s1 request 1" in r.stdout, r.stderr


def test_the_byte_cap_prunes_oldest_first_across_threads_and_never_a_newest(home):
    with Engine(home) as e:
        a = _thread(e, "a", 4, t0=1000.0)  # a1 1000, a2 1010, a3 1020, a4 1030
        b = _thread(e, "b", 3, t0=1005.0)  # b1 1005, b2 1015, b3 1025
    rows, files = _rows(home), _files(home)

    def size(key, g):
        return sum(rows[(key, g)][:2]) + files[f"contexts/{key}/g{g:06d}.md"]

    total = _payload(home)
    # room for everything but the three oldest generations: a1, b1, a2 go, in that order
    cap = total - size(a, 1) - size(b, 1) - size(a, 2) + 1
    r = run_cli(home, "gc", "--json", "--keep", "100", "--keep-bytes", str(cap))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["checkpoint_data"]
    after = _rows(home)
    pruned = sorted(k for k, v in after.items() if v[0] == 0)
    assert pruned == sorted([(a, 1), (a, 2), (b, 1)])
    assert all(after[k][1] == 0 for k in pruned)
    assert not any(f"g{g:06d}" in name for name in _files(home)
                   for g, key in ((1, a), (2, a), (1, b)) if key in name)
    assert data["capsules"] == 3 and data["kept_bytes"] == _payload(home) <= cap
    assert data["bytes"] == total - data["kept_bytes"]
    # a cap of 0 prunes everything but each thread's newest generation, and says so
    r = run_cli(home, "gc", "--json", "--keep-bytes", "0")
    data = json.loads(r.stdout)["checkpoint_data"]
    after = _rows(home)
    assert sorted(k for k, v in after.items() if v[0]) == sorted([(a, 4), (b, 3)])
    assert data["over_cap"] == data["kept_bytes"] == size(a, 4) + size(b, 3) > 0
    r = run_cli(home, "gc", "--keep-bytes", "0")
    assert r.returncode == 0 and "over the cap (the newest is never pruned)" in " ".join(r.stdout.decode().split())
    with Engine(home) as e:  # the newest answers a boundary as before
        assert checkpoints.load(e.get_thread(a), decode=False).checkpoint.generation == 4


def test_dry_run_reports_counts_and_bytes_and_changes_nothing(home):
    with Engine(home) as e:
        key = _thread(e, "s1", 6)
    rows, files = _rows(home), _files(home)
    env = {"CONTINUATION_KEEP_GENERATIONS": "3", "CONTINUATION_KEEP_BYTES": "20K"}
    r = run_cli(home, "gc", "--dry-run", "--json", env=env)
    assert r.returncode == 0, r.stderr
    dry = json.loads(r.stdout)["checkpoint_data"]
    assert _rows(home) == rows and _files(home) == files
    assert dry["bytes"] > 0 and dry["renderings"] >= 3 and len(dry["files"]) >= 3
    r = run_cli(home, "gc", "--dry-run", env=env)
    text = " ".join(r.stdout.decode().split())  # one line, wrapped to the terminal's width
    from continuation.host.units import size_text as size

    assert (f"would free {size(dry['bytes'])} of checkpoint data: {len(dry['files'])} file(s) "
            f"({size(dry['file_bytes'])}), {dry['renderings']} rendering(s) "
            f"({size(dry['rendering_bytes'])}), {dry['capsules']} capsule(s) "
            f"({size(dry['capsule_bytes'])}) checkpoint data left") in text
    assert _rows(home) == rows and _files(home) == files
    r = run_cli(home, "gc", "--json", env=env)  # the real run frees what the dry run said
    real = json.loads(r.stdout)["checkpoint_data"]
    assert real == dry
    assert _payload(home) == real["kept_bytes"] == _payload_before(rows, files) - dry["bytes"]
    r = run_cli(home, "gc", env=env)
    assert b"nothing to collect" in r.stdout and b"checkpoint data kept" in r.stdout
    assert key


def _payload_before(rows, files):
    return sum(c + r for c, r, _ in rows.values()) + sum(
        s for n, s in files.items() if not n.startswith("capsules"))


@pytest.mark.parametrize("env,args,name", [
    ({"CONTINUATION_KEEP_BYTES": "lots"}, (), "CONTINUATION_KEEP_BYTES"),
    ({"CONTINUATION_KEEP_BYTES": "-1"}, (), "CONTINUATION_KEEP_BYTES"),
    ({"CONTINUATION_KEEP_BYTES": "12X"}, (), "CONTINUATION_KEEP_BYTES"),
    ({"CONTINUATION_KEEP_BYTES": "1.5G"}, (), "CONTINUATION_KEEP_BYTES"),
    ({}, ("--keep-bytes", "ten"), "--keep-bytes"),
    ({"CONTINUATION_KEEP_GENERATIONS": "zero"}, (), "CONTINUATION_KEEP_GENERATIONS"),
    ({"CONTINUATION_KEEP_GENERATIONS": "0"}, (), "CONTINUATION_KEEP_GENERATIONS"),
    ({}, ("--keep", "0"), "--keep"),
])
def test_a_bad_setting_is_one_line_and_changes_nothing(home, env, args, name):
    with Engine(home) as e:
        _thread(e, "s1", 3)
    rows, files = _rows(home), _files(home)
    r = run_cli(home, "gc", *args, env={"CONTINUATION_KEEP_GENERATIONS": "1", **env})
    err = r.stderr.decode()
    assert r.returncode != 0 and err.count("\n") == 1 and name in err and "Traceback" not in err
    assert _rows(home) == rows and _files(home) == files


def test_sizes_parse_as_powers_of_1024():
    assert parse_size("0", "x") == 0 and parse_size("123456", "x") == 123456
    assert parse_size("512K", "x") == parse_size("512kib", "x") == 512 * 1024
    assert parse_size("256M", "x") == parse_size("256MB", "x") == 256 * 1024 ** 2
    assert parse_size(" 1G ", "x") == 1024 ** 3
    assert keep_bytes({}) == 256 * 1024 ** 2 and keep_bytes({"CONTINUATION_KEEP_BYTES": "1K"}) == 1024
    for bad in ("", "K", "1T", "1e6", "-5", "one"):
        with pytest.raises(RetentionError, match="must be a size"):
            parse_size(bad, "x")


def _pruned_home(home):
    with Engine(home) as e:
        key = _thread(e, "s1", 4)
        prune(e, keep=1, cap=0)  # generations 1-3 pruned, 4 whole
        ids = {cp.generation: cp.checkpoint_id for cp in checkpoints.list_checkpoints(e.get_thread(key))}
    return key, ids


def test_a_pruned_checkpoint_is_listed_and_says_so_when_its_capsule_is_asked_for(home):
    key, ids = _pruned_home(home)
    r = run_cli(home, "checkpoints", "--json")
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)["checkpoints"]
    assert [(c["generation"], c["pruned"], c["corrupt"]) for c in listed] == [
        (1, True, None), (2, True, None), (3, True, None), (4, False, None)]
    assert listed[0]["objective"] == "(capsule pruned by `continuation gc`)"
    assert listed[3]["objective"].startswith("s1 request 4")
    r = run_cli(home, "checkpoints")
    assert r.returncode == 0 and b"capsule pruned by" in r.stdout and b"CORRUPT" not in r.stdout
    for fmt in ("--json", "--text"):
        r = run_cli(home, "capsule", "show", "--generation", "2", fmt)
        err = r.stderr.decode()
        assert r.returncode != 0 and err.count("\n") == 1 and "Traceback" not in err
        assert ids[2] in err and "pruned by `continuation gc`" in err
    r = run_cli(home, "doctor", "--json")
    found = {f["check"]: f for f in json.loads(r.stdout)["findings"]} if r.stdout else {}
    assert found["checkpoints"]["status"] == "ok" and "3 of them pruned" in found["checkpoints"]["message"]


def test_a_rewind_to_a_pruned_checkpoint_rebuilds_its_capsule_from_the_log(home):
    key, ids = _pruned_home(home)
    r = run_cli(home, "rewind", ids[2], "--conversation", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    with Engine(home) as e:
        t = e.get_thread(key)
        newest = checkpoints.load(t)
        assert newest.checkpoint.reason == "rewind" and newest.checkpoint.generation == 5
        assert newest.capsule.objective.text.startswith("s1 request 2")


def test_the_previous_capsule_fallback_skips_pruned_ones_with_a_clear_problem(home):
    with Engine(home) as e:
        key = _thread(e, "s1", 4)
        # the cap pruned 2 and 3 (not 1: e.g. it was committed later, by an import)
        with e.store.transaction() as c:
            c.execute("UPDATE checkpoints SET created_at=0 WHERE thread_key=? AND generation IN (2, 3)",
                      (key,))
        data = prune(e, keep=10, cap=_payload(home) - 1)
        assert data.capsules == 1
        data = prune(e, keep=10, cap=_payload(home) - 1)
        assert data.capsules == 1
    assert [g for (k, g), v in sorted(_rows(home).items()) if not v[0]] == [2, 3]
    con = sqlite3.connect(home / "store.sqlite3")
    blob = bytearray(con.execute("SELECT capsule FROM checkpoints WHERE thread_key=? AND generation=4",
                                 (key,)).fetchone()[0])
    blob[len(blob) // 2] ^= 1  # the newest fails its hash
    con.execute("UPDATE checkpoints SET capsule=? WHERE thread_key=? AND generation=4", (bytes(blob), key))
    con.commit()
    with Engine(home) as e:
        loaded = checkpoints.load(e.get_thread(key))
        assert loaded.checkpoint.generation == 1
        assert "corrupt" in loaded.problems[0]
        assert loaded.problems[1] == ("the capsules of generations 2-3 were pruned by "
                                      "`continuation gc`; skipped")
    con.execute("UPDATE checkpoints SET capsule=? WHERE thread_key=? AND generation=1", (b"", key))
    con.commit()
    con.close()
    with Engine(home) as e:
        with pytest.raises(checkpoints.CheckpointError, match="generations 1-3 were pruned.*no valid"):
            checkpoints.load(e.get_thread(key))
    r = run_cli(home, "capsule", "show")
    err = r.stderr.decode()
    assert r.returncode != 0 and err.count("\n") == 1 and "no valid checkpoint remains" in err
    assert "Traceback" not in err


def test_torn_missing_and_foreign_files_do_not_stop_gc(home):
    with Engine(home) as e:
        key = _thread(e, "s1", 4)
    ctx = home / "contexts" / key
    (ctx / "g000001.md").unlink()  # gone already
    (ctx / "g000002.md").write_bytes(b"half a con")  # torn by a crash: counted by its size
    (ctx / ".g000003.md.ab12.tmp").write_bytes(b"a writer may be busy")  # doctor's, not gc's
    (ctx / "notes.txt").write_text("not ours")
    (ctx / "g000009.md").write_text("a generation with no checkpoint yet")
    (ctx / "g000000.md").write_text("a generation no checkpoint names")
    r = run_cli(home, "gc", "--json", "--keep", "1", "--keep-bytes", "1G")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["checkpoint_data"]
    names = sorted(os.path.basename(p) for p in data["files"])
    assert names == ["g000000.md", "g000002.md", "g000003.md"]
    assert data["file_bytes"] == len(b"half a con") + sum(
        len(t) for t in ("a generation no checkpoint names",)) + len(
        f"context of s1 generation 3\n" * 20)
    assert sorted(p.name for p in ctx.iterdir()) == [
        ".g000003.md.ab12.tmp", "g000004.md", "g000009.md", "notes.txt"]


def test_a_boundary_whose_newest_capsule_fails_with_older_ones_pruned_delivers_a_rebuilt_one(home):
    from continuation import hooks

    def hook(event, **fields):
        raw = json.dumps({"session_id": "s9", "hook_event_name": event, "cwd": "/nonexistent",
                          **fields}).encode()
        return hooks.run("claude", raw)[0]

    for k in range(3):
        if k:
            hook("SessionStart", source="compact")
        hook("UserPromptSubmit", prompt=f"task {k}")
        hook("Stop", last_assistant_message="done")
        hook("PreCompact", trigger="auto")
    with Engine(home) as e:
        data = prune(e, keep=1, cap=0)
        key = e.find_thread("claude", "s9").key
    assert data.capsules == 2
    con = sqlite3.connect(home / "store.sqlite3")
    blob = bytearray(con.execute("SELECT capsule FROM checkpoints WHERE thread_key=? AND generation=3",
                                 (key,)).fetchone()[0])
    blob[len(blob) // 2] ^= 1
    con.execute("UPDATE checkpoints SET capsule=? WHERE thread_key=? AND generation=3", (bytes(blob), key))
    con.commit()
    con.close()
    out = hook("SessionStart", source="compact")
    ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "is corrupt" in ctx and "generations 1-2 were pruned" in ctx
    assert '"task 2"' in ctx or "task 2" in ctx
    with Engine(home) as e:
        newest = checkpoints.newest_checkpoint(e.get_thread(key))
        assert newest.generation == 4 and not checkpoints.verify(newest)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_policy_reads_sizes_and_prunes_through_either_store(home, backend, request, monkeypatch):
    """The sizes gc adds up are the database's (no blob is read) and must be bytes on both
    backends: a rendering with non-ASCII text counts its UTF-8 bytes."""
    if backend == "postgresql":
        monkeypatch.setenv("CONTINUATION_STORE", request.getfixturevalue("pg_url"))
    with Engine(home) as e:
        t = e.thread("codex", "s1")
        for g in range(1, 5):
            t.admit(f"réparer le module {g} — naïve café " * 20, turn_id=f"t{g}")
            checkpoints.commit(t, reason="manual")
        cps = checkpoints.list_checkpoints(t)
        sizes = {cp.generation: len(cp.capsule_bytes) + len(cp.rendered.encode("utf-8")) for cp in cps}
        dry = prune(e, keep=2, cap=10 ** 9, dry_run=True)
        assert dry.renderings == 2 and dry.rendering_bytes == sum(
            len(cp.rendered.encode("utf-8")) for cp in cps[:2])
        assert dry.kept_bytes == sum(sizes.values()) - dry.rendering_bytes
        cap = sizes[3] + sizes[4]  # generations 1 and 2 go whole
        done = prune(e, keep=100, cap=cap)
        assert (done.capsules, done.kept_bytes, done.over_cap) == (2, cap, 0)
        listed = checkpoints.list_checkpoints(t)
        assert [cp.pruned for cp in listed] == [True, True, False, False]
        assert listed[0].rendered == "" and listed[0].sha256 == cps[0].sha256
        with pytest.raises(checkpoints.CheckpointPruned, match="generation 2"):
            checkpoints.load(t, 2)
        assert checkpoints.load(t, 3).capsule.objective.text.startswith("réparer le module 3")
