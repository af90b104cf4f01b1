"""The import's memory stays bounded whatever the transcript's size, and a long import shows a
progress line on stderr (only there) — measured on the installed command, in a subprocess."""
from __future__ import annotations

import importlib.util
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from continuation.importers.oplog import OpLog
from continuation.importers.timeline import Op

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"


def _script(name):
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _script("bench_import")
gen = _script("gen_claude_transcript")


def test_a_60_mb_transcript_imports_in_bounded_memory_with_a_progress_line(tmp_path):
    big, tiny = tmp_path / "big.jsonl", tmp_path / "tiny.jsonl"
    info = gen.generate(big, 60)
    gen.generate(tiny, 0.05)
    size_mb = info["bytes"] / (1024 * 1024)
    # the command's fixed cost (interpreter, modules, store), measured here: machines differ
    tiny_rss, _, _, _ = bench.import_once(tiny, tmp_path / "home-tiny")
    rss, seconds, stdout, stderr = bench.import_once(
        big, tmp_path / "home-big", extra_env={"CONTINUATION_IMPORT_PROGRESS_AFTER": "0"})
    # the old import held every op with its whole output: 54 MB over the fixed cost here
    # (76 vs 21 MB; 304 MB for 300 MB), over this bound of 18 MB; streamed: ~11 MB (what
    # grows is per record and per call: ids, counts, never outputs or arguments)
    assert rss - tiny_rss < 0.3 * size_mb, (rss, tiny_rss, size_mb)
    assert f"tool calls: {info['tool_calls']} seen, {info['tool_calls']} paired" in stdout
    lines = stderr.splitlines()
    assert lines and all(line.startswith("continuation import: ") for line in lines), stderr
    assert lines[0].startswith("continuation import: reading ")
    assert lines[-1].startswith("continuation import: done: 60 MB read, ")
    assert "continuation import:" not in stdout


def test_the_progress_line_is_on_stderr_only_and_only_when_asked_or_on_a_terminal(tmp_path):
    src = FIXTURE / "claude_queue_interrupt.jsonl"
    env = {"CONTINUATION_IMPORT_PROGRESS_AFTER": "0"}
    outs = {}
    for flag in ("--progress", "--no-progress", None):
        home = tmp_path / f"home{flag}"
        cmd = [sys.executable, "-m", "continuation", "import", "claude", str(src), "--json"]
        r = subprocess.run(cmd + ([flag] if flag else []), capture_output=True, text=True,
                           env={**os.environ, **env, "CONTINUATION_HOME": str(home)})
        assert r.returncode == 0, r.stderr
        outs[flag] = (json.loads(r.stdout), r.stderr)
    for report, _ in outs.values():
        report.pop("path")
    assert outs["--progress"][0] == outs["--no-progress"][0] == outs[None][0]
    assert outs["--progress"][1].startswith("continuation import: reading ")
    assert outs["--no-progress"][1] == ""
    assert outs[None][1] == ""  # stderr is a pipe: no progress unless asked

    # stderr a terminal: shown by default, rewritten in place, ended by a newline
    master, slave = pty.openpty()
    r = subprocess.run([sys.executable, "-m", "continuation", "import", "claude", str(src)],
                       stdout=subprocess.PIPE, stderr=slave, text=True,
                       env={**os.environ, **env, "CONTINUATION_HOME": str(tmp_path / "tty")})
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    shown = shown.decode().replace("\r\n", "\n")  # the terminal's own newline translation
    assert r.returncode == 0
    assert shown.startswith("\rcontinuation import: ") and shown.endswith("\n")
    assert "done: " in shown and "continuation import" not in r.stdout


def test_a_short_import_shows_no_progress_even_when_asked(tmp_path):
    src = FIXTURE / "claude_queue_interrupt.jsonl"
    r = subprocess.run([sys.executable, "-m", "continuation", "import", "claude", str(src),
                        "--progress"], capture_output=True, text=True,
                       env={**os.environ, "CONTINUATION_HOME": str(tmp_path)})
    assert r.returncode == 0 and r.stderr == ""  # under the 2 s that make an import long


def test_the_op_log_spills_to_disk_and_reads_back_the_same_ops_with_later_renames(tmp_path):
    log = OpLog(spill_bytes=4096)
    ops = [Op("admit", {"input_id": f"i{n % 7}", "id_source": "hash", "text": "x" * 300},
              n, n) for n in range(60)]
    for op in ops[:30]:
        log.append(op)
    log.rename_input("i3", "runtime-3")  # applies to the 30 ops written so far only
    for op in ops[30:]:
        log.append(op)
    assert log.spilled and len(log) == 60
    back = list(log)
    assert [o.offset for o in back] == list(range(60))
    renamed = [o.offset for o in back if o.data["input_id"] == "runtime-3"]
    assert renamed == [n for n in range(30) if n % 7 == 3]
    assert all(o.data["id_source"] == "runtime" for o in back if o.offset in renamed)
    assert [o.data["input_id"] for o in back[30:]] == [f"i{n % 7}" for n in range(30, 60)]
    assert list(log) == back  # read again: the same ops
    log.close()


def test_the_compact_parent_map_answers_as_a_dict_for_any_id():
    import random
    import uuid

    from continuation.importers.parent_map import ParentMap

    rng = random.Random(35)
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3000)]
    # ids a dict takes as they are but that are not a canonical uuid's exact spelling
    odd = ["u1", "A" * 36, ids[3].upper(), ids[5][:35] + "_", "+" + ids[7][1:], "", "-" * 36]
    pool = ids + odd
    expected, got = {}, ParentMap()
    for _ in range(12000):  # past several table growths; parents before and after children
        key, parent = rng.choice(pool), rng.choice(pool + [None])
        expected.setdefault(key, parent)
        got.setdefault(key, parent)
    # a linear conversation (each record's parent the record before: the cached fast path),
    # then walked up from its end as the rewind check does
    chain = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(500)]
    for parent, key in zip([ids[0]] + chain, chain):
        expected.setdefault(key, parent)
        got.setdefault(key, parent)
    walked, node = [], chain[-1]
    while node is not None and len(walked) < 600:
        walked.append(node)
        node = got.get(node)
    assert walked[:500] == chain[::-1]
    probe = pool + chain + [str(uuid.UUID(int=rng.getrandbits(128), version=4))
                            for _ in range(200)]
    assert [k in got for k in probe] == [k in expected for k in probe]
    assert [got.get(k) for k in probe] == [expected.get(k) for k in probe]
    assert len(got) == len(expected)
