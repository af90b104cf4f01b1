"""scripts/bench_all.py: the sizes it runs each benchmark at, and how it reads their rows."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _bench_all():
    spec = importlib.util.spec_from_file_location("bench_all_under_test", SCRIPTS / "bench_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROW = ("print('| PreCompact hook | 150 | `git stash create` | 50 | 3.00x | <= 3x | 2.9-3.1 |')\n"
       "print('warm-up: 1.50x faster (target <= 9x)')\n")


def test_a_table_row_is_read_with_its_baseline_and_a_quick_run_says_where_its_target_applies(
        tmp_path, monkeypatch):
    bench_all = _bench_all()
    (tmp_path / "bench_fake.py").write_text(ROW)
    monkeypatch.setattr(bench_all, "HERE", tmp_path)
    full, note = bench_all.run_script("bench_fake.py", [], 60)
    assert note.startswith("ok")
    assert full[0] == ("PreCompact hook: 150 ms vs `git stash create` 50 ms (target <= 3x)",
                       "3.00x (paired 2.9-3.1)")
    assert ("warm-up", "1.50x") in full  # a free-text ratio; its "target <= 9x" is not one
    assert all(ratio != "9x" for _, ratio in full)
    quick, _ = bench_all.run_script("bench_fake.py", [], 60, quick=True)
    assert quick[0][0].endswith("(target <= 3x at full sizes)")


def test_each_benchmark_runs_at_its_own_target_sizes_unless_quick(monkeypatch, capsys):
    bench_all = _bench_all()
    calls = []

    def fake_run(name, args, timeout, *, quick=False):
        calls.append((name, list(args), quick))
        return [], "ok"

    monkeypatch.setattr(bench_all, "run_script", fake_run)
    monkeypatch.setattr(bench_all, "HERE", SCRIPTS)
    only = ["--only", "bench_boundaries.py", "--skip-recovery"]
    assert bench_all.main(only) == 0
    assert calls == [("bench_boundaries.py", [], False)]
    assert "(full sizes," in capsys.readouterr().out
    calls.clear()
    assert bench_all.main(["--quick", *only]) == 0
    assert calls == [("bench_boundaries.py", bench_all.BENCHES["bench_boundaries.py"], True)]
    assert "(quick sizes," in capsys.readouterr().out
    calls.clear()
    assert bench_all.main(["--full", *only]) == 0  # the former flag: the same as the default
    assert calls == [("bench_boundaries.py", [], False)]


def test_busy_cores_spin_while_the_block_runs_and_stop_after():
    """``bench_boundaries.py --busy N``: the neighbours of a shared machine, for as long as
    the measurement runs."""
    import time

    sys.path.insert(0, str(SCRIPTS))
    try:
        from benchlib import busy_cores
    finally:
        sys.path.remove(str(SCRIPTS))
    with busy_cores(2) as spinning:
        time.sleep(0.3)
        assert len(spinning) == 2 and all(p.poll() is None for p in spinning)
        for p in spinning:  # on a core: user time accumulates (/proc/<pid>/stat, field 14)
            if Path(f"/proc/{p.pid}/stat").exists():
                fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
                assert int(fields[11]) > 0
    assert all(p.returncode is not None for p in spinning)
