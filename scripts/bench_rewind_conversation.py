"""``rewind --conversation`` (and ``--both``) going back a few events on a short and on a long
thread: the command's wall time and peak memory at each size, and the ratio long/short (the
target: within 1.2x between 1,000 and 200,000 events).

Each thread is turns of distinct work with 36-character UUID ids (a prompt, a shell call and its
outcome, a claim, the turn's end), appended in batches through the store; a checkpoint (with a
workspace snapshot of a small repository) near the end, then two more turns: the rewind rolls
those back. The command runs as a subprocess of its own (``/usr/bin/time``-like: its peak RSS
from ``wait4``).

    python scripts/bench_rewind_conversation.py [--sizes 1000,200000] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
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


def run(home: Path, repo: Path, checkpoint: str, mode: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``continuation rewind CHECKPOINT --MODE --yes``."""
    env = {**os.environ, "CONTINUATION_HOME": str(home)}
    env.pop("CONTINUATION_STORE", None)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "continuation", "rewind", checkpoint,
                             f"--{mode}", "--yes"], env=env, cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"rewind failed: {proc.stderr.read().decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,200000")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-rewind-conv-") as tmp:
        for size in sizes:
            home, repo = Path(tmp) / f"home-{size}", Path(tmp) / f"repo-{size}"
            repo.mkdir()
            for name in ("README.md", "setup.py"):
                (repo / name).write_text(f"{name}\n")
            subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
            subprocess.run(["git", "add", "."], cwd=repo, check=True)
            subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm",
                            "init"], cwd=repo, check=True)
            built = time.perf_counter()
            checkpoint = build(home, repo, size)
            built = time.perf_counter() - built
            for mode in ("conversation", "both"):
                seconds, rss = run(home, repo, checkpoint, mode)
                rows.append({"events": size, "mode": mode, "seconds": round(seconds, 3),
                             "peak_rss_mb": round(rss, 1), "built_s": round(built, 1)})
    small = {r["mode"]: r for r in rows if r["events"] == sizes[0]}
    for r in rows:
        r["ratio_seconds"] = round(r["seconds"] / small[r["mode"]]["seconds"], 2)
        r["ratio_rss"] = round(r["peak_rss_mb"] / small[r["mode"]]["peak_rss_mb"], 2)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| events | mode | seconds | peak RSS MB | seconds vs the shortest | RSS vs the shortest |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['events']} | {r['mode']} | {r['seconds']:.2f} | {r['peak_rss_mb']:.0f} | "
              f"{r['ratio_seconds']:.2f}x | {r['ratio_rss']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
