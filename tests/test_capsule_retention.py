"""`continuation gc` prunes per-generation files beyond CONTINUATION_KEEP_GENERATIONS; every
capsule stays in the store, listed, shown and loadable."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from continuation import checkpoints
from continuation.engine import Engine


def run_cli(home, *args, env=None):
    return subprocess.run([sys.executable, "-m", "continuation", *args], capture_output=True,
                          timeout=120, env={**os.environ, "CONTINUATION_HOME": str(home), **(env or {})})


def _thread_with_checkpoints(home, n=5):
    with Engine(home) as e:
        t = e.thread("codex", "s1")
        for g in range(1, n + 1):
            t.admit(f"request {g}", turn_id=f"t{g}")
            cp = checkpoints.commit(t, reason="manual")
            spill = e.home / "contexts" / t.key / f"g{g:06d}.md"
            spill.parent.mkdir(parents=True, exist_ok=True)
            spill.write_text(f"context of generation {g}\n")
        orphan = checkpoints.capsule_dir(e.home, t.key) / "g000003-0123456789ab.json"
        orphan.write_bytes(b"{}")  # a commit that lost its race for generation 3
        return t.key, cp


def test_gc_keeps_the_newest_generations_files_and_every_capsule_in_the_store(home):
    key, newest = _thread_with_checkpoints(home)
    r = run_cli(home, "gc", "--json", env={"CONTINUATION_KEEP_GENERATIONS": "2"})
    assert r.returncode == 0, r.stderr
    pruned = json.loads(r.stdout)["generation_files"]["files"]
    names = sorted(os.path.basename(p) for p in pruned)
    assert len([n for n in names if n.endswith(".md")]) == 3  # contexts of generations 1-3
    assert len([n for n in names if n.endswith(".json")]) == 4  # copies 1-3 and the orphan
    capsules = sorted(p.name for p in (home / "capsules" / key).iterdir())
    assert [c[:7] for c in capsules] == ["g000004", "g000005"]
    contexts = sorted(p.name for p in (home / "contexts" / key).iterdir())
    assert contexts == ["g000004.md", "g000005.md"]
    with Engine(home) as e:
        t = e.get_thread(key)
        listed = checkpoints.list_checkpoints(t)
        assert [cp.generation for cp in listed] == [1, 2, 3, 4, 5]
        assert [cp.file_path is None for cp in listed] == [True, True, True, False, False]
        assert checkpoints.load(t, 1).capsule.objective.text == "request 1"
    r = run_cli(home, "capsule", "show", "--generation", "1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["generation"] == 1, r.stderr
    from continuation.recovery.health import check_checkpoints

    with Engine(home) as e:  # a pruned copy is not a missing one
        assert not [f for f in check_checkpoints(e) if f.check == "checkpoints.files"]


def test_gc_dry_run_changes_nothing_and_a_bad_setting_is_one_line(home):
    key, _ = _thread_with_checkpoints(home, n=3)
    before = sorted(p.name for p in (home / "capsules" / key).iterdir())
    r = run_cli(home, "gc", "--dry-run", env={"CONTINUATION_KEEP_GENERATIONS": "1"})
    assert r.returncode == 0 and b"would delete" in r.stdout, r.stderr
    assert sorted(p.name for p in (home / "capsules" / key).iterdir()) == before
    r = run_cli(home, "gc", env={"CONTINUATION_KEEP_GENERATIONS": "zero"})
    assert r.returncode != 0 and r.stderr.decode().count("\n") == 1
    assert b"CONTINUATION_KEEP_GENERATIONS" in r.stderr and b"Traceback" not in r.stderr
