"""The timeline page's first screen on a short and on a long thread, in headless Chromium.

Each thread is turns of distinct work (a prompt, a shell call and its outcome, a claim, the
turn's end: 6 events) with a compaction and a checkpoint every 5,000 events, and one turn of
1,000 calls in the middle. For each size it measures, alternating sizes and repeating:

- ``serve``: navigation to the page's script saying it rendered (``performance.now()`` at the
  first screen: the server's outline and newest page, the transfer, the parse, the render);
- ``file``: ``continuation show --html -o FILE`` (the command's wall time, a process of its
  own) and the browser's first screen of that file;
- the 1,000-call turn's page, opened through the server.

It prints the medians, and the ratio long/short measured in the same run.

    python scripts/bench_timeline.py [--sizes 1000,200000] [--repeat 3] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _turn(t: int) -> list[tuple[str, dict]]:
    turn, call, inp = (str(uuid.UUID(int=t)), str(uuid.UUID(int=(1 << 64) + t)),
                       str(uuid.UUID(int=(1 << 65) + t)))
    return [
        ("input_admitted", {"input_id": inp, "text": f"request {t}: rename helper_{t} in src/mod_{t}.py",
                            "turn_id": turn, "ordinal": 0, "queued": False, "id_source": "runtime"}),
        ("tool_started", {"call_id": call, "tool": "Bash", "turn_id": turn,
                          "args": {"command": f"sed -i 's/helper_{t}/tool_{t}/' src/mod_{t}.py"}}),
        ("tool_finished", {"call_id": call, "status": "error" if t % 50 == 7 else "ok",
                           "turn_id": turn, "exit_code": 1 if t % 50 == 7 else 0,
                           "output": f"edited src/mod_{t}.py"}),
        ("assistant_claim", {"text": f"renamed helper_{t}", "turn_id": turn}),
        ("turn_completed", {"turn_id": turn}),
        ("settings", {"model": "gpt-5"}),
    ]


def _long_turn(n: int) -> list[tuple[str, dict]]:
    turn = "long-turn"
    out = [("input_admitted", {"input_id": "in-long-turn", "text": "fix every failing test",
                               "turn_id": turn, "ordinal": 0, "queued": False})]
    for k in range(n):
        call = f"long-{k:04d}"
        out.append(("tool_started", {"call_id": call, "tool": "Bash" if k % 3 else "Read",
                                     "turn_id": turn, "args": {"command": f"pytest tests/test_{k}.py"}}))
        out.append(("tool_finished", {"call_id": call, "status": "error" if k % 97 == 5 else "ok",
                                      "turn_id": turn, "exit_code": 0, "output": f"{k} passed"}))
    out.append(("turn_completed", {"turn_id": turn}))
    return out


def build(home: Path, events: int) -> str:
    from continuation.boundary.crossing import commit_checkpoint
    from continuation.session.engine import Engine

    with Engine(home) as engine:
        thread = engine.thread("claude", f"bench-{events}")
        store, t, batch, long_done, next_cp = thread.store, 0, [], False, 5000
        while store.last_seq(thread.key) + len(batch) < events:
            batch += _turn(t)
            t += 1
            if not long_done and store.last_seq(thread.key) + len(batch) >= events // 2:
                batch += _long_turn(1000)
                long_done = True
            if len(batch) >= 3000 or store.last_seq(thread.key) + len(batch) >= next_cp:
                store.append_many(thread.key, batch, source="bench")
                batch = []
                if store.last_seq(thread.key) >= next_cp:
                    store.append(thread.key, "boundary", {"kind": "compact", "trigger": "auto"},
                                 source="bench")
                    commit_checkpoint(thread, reason="auto", snapshot=False)
                    next_cp += 5000
        if batch:
            store.append_many(thread.key, batch, source="bench")
        commit_checkpoint(thread, reason="manual", snapshot=False)
        return thread.key


def _render_ms(browser, url: str) -> float:
    browser.get("about:blank")
    browser.get(url)
    deadline = time.time() + 120
    while time.time() < deadline:
        ready = browser.execute_script("return window.__timelineReady || null")
        if ready:
            problems = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            if problems:
                raise SystemExit(f"console errors: {problems}")
            return float(ready)
        time.sleep(0.02)
    raise SystemExit("the page never rendered")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,200000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from timeline_helpers import browser_unavailable, start_browser

    why = browser_unavailable()
    if why:
        raise SystemExit(f"no browser: {why}")
    from continuation.commands.timeline.server import TimelineServer

    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-timeline-"))
    homes, keys, servers = {}, {}, {}
    for n in sizes:
        homes[n] = work / f"home-{n}"
        started = time.perf_counter()
        keys[n] = build(homes[n], n)
        print(f"built {n:,} events in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        servers[n] = TimelineServer(str(homes[n]), thread=keys[n])
        threading.Thread(target=servers[n].serve_forever, daemon=True).start()
    browser = start_browser()
    results: dict = {n: {"serve_ms": [], "show_s": [], "file_ms": [], "long_turn_ms": [],
                         "file_bytes": 0} for n in sizes}
    try:
        for _ in range(args.repeat):
            for n in sizes:  # alternate the sizes, so the machine's load falls on both
                r = results[n]
                r["serve_ms"].append(_render_ms(browser, servers[n].url))
                out = work / f"t-{n}.html"
                env = {**os.environ, "CONTINUATION_HOME": str(homes[n])}
                env.pop("CONTINUATION_STORE", None)
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "continuation", "show", "--thread", keys[n],
                                "--html", "-o", str(out)], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                r["show_s"].append(time.perf_counter() - started)
                r["file_bytes"] = out.stat().st_size
                r["file_ms"].append(_render_ms(browser, out.as_uri()))
                # the long turn's page, opened from the newest page (the server reads it)
                with servers[n].engine() as engine:
                    thread = engine.get_thread(keys[n])
                    seq = thread.store.events_matching(thread.key, "fix every failing test", 1)[0][0]
                _render_ms(browser, servers[n].url)
                started = browser.execute_script(f"window.__timelineGo({seq}); return performance.now()")
                deadline = time.time() + 60
                while not browser.execute_script(
                        "return !!document.querySelector('[data-input-id=\"in-long-turn\"]')"):
                    if time.time() > deadline:
                        raise SystemExit("the 1,000-call turn's page never rendered")
                    time.sleep(0.02)
                r["long_turn_ms"].append(browser.execute_script("return performance.now()") - started)
    finally:
        browser.quit()
        for s in servers.values():
            s.shutdown()
    summary = {n: {"events": n, "serve_first_screen_ms": statistics.median(r["serve_ms"]),
                   "file_first_screen_ms": statistics.median(r["file_ms"]),
                   "show_html_s": statistics.median(r["show_s"]),
                   "file_bytes": r["file_bytes"],
                   "long_turn_page_ms": statistics.median(r["long_turn_ms"]),
                   "runs": {k: v for k, v in r.items() if isinstance(v, list)}}
               for n, r in results.items()}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    base = summary[sizes[0]]
    for n in sizes:
        s = summary[n]
        print(f"{n:>9,} events: serve first screen {s['serve_first_screen_ms']:.0f} ms "
              f"({s['serve_first_screen_ms'] / base['serve_first_screen_ms']:.2f}x), "
              f"file first screen {s['file_first_screen_ms']:.0f} ms, show --html "
              f"{s['show_html_s']:.2f} s ({s['show_html_s'] / base['show_html_s']:.2f}x, "
              f"{s['file_bytes'] / 1e6:.1f} MB), 1,000-call turn's page "
              f"{s['long_turn_page_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
