"""``rewind --conversation`` (and ``--both``) going back a few events on a short and on a long
thread: the command's wall time and peak memory at each size, and the ratio long/short (the
target: within 1.2x between 1,000 and 200,000 events).

Each thread is turns of distinct work with 36-character UUID ids (a prompt, a shell call and its
outcome, a claim, the turn's end), appended in batches through the store; a checkpoint (with a
workspace snapshot of a small repository) near the end, then two more turns: the rewind rolls
those back. The command runs as a subprocess of its own on a fresh copy of the built state
home, the sizes alternating, ``--repeat`` times each: its wall time, the CPU time of its whole
process tree (the capsule worker and git included: this process is their subreaper), and its
peak RSS (from ``wait4``). Medians are printed. On a shared machine the wall time follows the
neighbours' load; the tree's CPU time is the steadier measure of the work done.

    python scripts/bench_rewind_conversation.py [--sizes 1000,200000] [--repeat 5] [--json]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _turn_events(t: int) -> list[tuple[str, dict]]:
    turn, call = str(uuid.UUID(int=t)), str(uuid.UUID(int=(1 << 64) + t))
    return [
        ("input_admitted", {"input_id": str(uuid.UUID(int=(1 << 65) + t)),
                            "text": f"request {t}: rename helper_{t} in src/pkg_{t % 97}/mod_{t}.py",
                            "turn_id": turn, "ordinal": 0, "queued": False, "id_source": "runtime"}),
        ("input_delivered", {"input_id": str(uuid.UUID(int=(1 << 65) + t)), "turn_id": turn}),
        ("tool_started", {"call_id": call, "tool": "Bash", "turn_id": turn,
                          "args": {"command": f"sed -i 's/helper_{t}/tool_{t}/' src/pkg_{t % 97}/mod_{t}.py"}}),
        ("tool_finished", {"call_id": call, "status": "ok", "turn_id": turn, "exit_code": 0,
                           "output_excerpt": f"edited src/pkg_{t % 97}/mod_{t}.py"}),
        ("assistant_claim", {"text": f"renamed helper_{t}", "turn_id": turn, "via": "Stop"}),
        ("turn_completed", {"turn_id": turn}),
    ]


def build(home: Path, repo: Path, events: int) -> str:
    """A thread of about ``events`` events; the checkpoint to rewind to."""
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.session.engine import Engine

    with Engine(home) as engine:
        thread = engine.thread("claude", str(uuid.uuid4()), workspace_root=str(repo))
        t, batch = 0, []
        while thread.store.last_seq(thread.key) + len(batch) < events - 12:
            batch += _turn_events(t)
            t += 1
            if len(batch) >= 3000:
                thread.store.append_many(thread.key, batch, source="bench")
                batch = []
        if batch:
            thread.store.append_many(thread.key, batch, source="bench")
        checkpoint = commit_checkpoint(thread, reason="manual")
        thread.store.append_many(thread.key, [*_turn_events(t), *_turn_events(t + 1)],
                                 source="bench")
        return checkpoint.checkpoint_id


def run(home: Path, repo: Path, checkpoint: str, mode: str) -> tuple[float, float, float]:
    """(seconds, CPU seconds of the whole process tree, peak RSS in MB of the command) of
    ``continuation rewind CHECKPOINT --MODE --yes``."""
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    env.pop("CONTINUATION_STORE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "continuation", "rewind", checkpoint,
                             f"--{mode}", "--yes"], env=env, cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    while True:  # the command's descendants, reparented here: their CPU time counts too
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"rewind failed: {proc.stderr.read().decode()[-500:]}")
    return seconds, cpu, usage.ru_maxrss / 1024


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER (Linux)
    except (OSError, AttributeError):
        pass  # elsewhere the worker's CPU time is not counted


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,200000")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each size and mode")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    _become_subreaper()
    samples: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-rewind-conv-") as tmp:
        built = {}
        for size in sizes:
            home, repo = Path(tmp) / f"home-{size}", Path(tmp) / f"repo-{size}"
            repo.mkdir()
            for name in ("README.md", "setup.py"):
                (repo / name).write_text(f"{name}\n")
            subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
            subprocess.run(["git", "add", "."], cwd=repo, check=True)
            subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm",
                            "init"], cwd=repo, check=True)
            built[size] = (home, repo, build(home, repo, size))
        for _ in range(args.repeat):
            for mode in ("conversation", "both"):
                for size in sizes:  # alternating: the load of the moment falls on every size
                    home, repo, checkpoint = built[size]
                    run_home, run_repo = Path(tmp) / "run-home", Path(tmp) / "run-repo"
                    shutil.rmtree(run_home, ignore_errors=True)
                    shutil.rmtree(run_repo, ignore_errors=True)
                    shutil.copytree(home, run_home, symlinks=True)
                    shutil.copytree(repo, run_repo, symlinks=True)
                    samples.setdefault((size, mode), []).append(
                        run(run_home, run_repo, checkpoint, mode))
    rows = []
    for (size, mode), runs in samples.items():
        rows.append({"events": size, "mode": mode, "runs": len(runs),
                     "seconds": round(statistics.median(r[0] for r in runs), 3),
                     "cpu_seconds": round(statistics.median(r[1] for r in runs), 3),
                     "peak_rss_mb": round(statistics.median(r[2] for r in runs), 1)})
    small = {r["mode"]: r for r in rows if r["events"] == sizes[0]}
    for r in rows:
        for measure in ("seconds", "cpu_seconds", "peak_rss_mb"):
            r[f"ratio_{measure}"] = round(r[measure] / small[r["mode"]][measure], 2)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| events | mode | wall s | tree CPU s | peak RSS MB | wall vs the shortest |"
          " CPU vs the shortest | RSS vs the shortest |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['events']} | {r['mode']} | {r['seconds']:.2f} | {r['cpu_seconds']:.2f} | "
              f"{r['peak_rss_mb']:.0f} | {r['ratio_seconds']:.2f}x | {r['ratio_cpu_seconds']:.2f}x | "
              f"{r['ratio_peak_rss_mb']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
