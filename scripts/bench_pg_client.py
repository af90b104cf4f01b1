#!/usr/bin/env python3
"""What a hook process pays to be able to speak to PostgreSQL, by client path: the options
weighed for the team store (docs/teams.md, "Why a relay"). Each measure is a fresh
``python -c`` doing only the import (or library load) named, against a bare interpreter
measured in the same rounds:

- ``psycopg (binary)``: ``import psycopg`` with its C implementation (``psycopg[binary]``,
  the one ``psycopg-c`` also builds: the same extension, so the same import);
- ``psycopg (python)``: ``PSYCOPG_IMPL=python`` (libpq through ctypes);
- ``libpq by ctypes``: ``ctypes`` and ``libpq.so.5`` loaded (the floor of a driver of our own);
- ``relay client``: ``continuation.store.relay_client`` (what a hook imports to use the relay).

Interleaved runs, medians; only the differences to the bare interpreter mean anything.

Usage: python scripts/bench_pg_client.py [--runs 30] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "bare python": ("pass", {}),
    "psycopg (binary)": ("import psycopg", {}),
    "psycopg (python)": ("import psycopg", {"PSYCOPG_IMPL": "python"}),
    "libpq by ctypes": ("import ctypes; ctypes.CDLL('libpq.so.5')", {}),
    "relay client": ("import continuation.store.relay_client", {}),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    times: dict[str, list[float]] = {k: [] for k in CASES}
    failed: dict[str, str] = {}
    for n in range(args.runs + 2):
        order = list(CASES.items())
        if n % 2:
            order.reverse()
        for name, (code, extra) in order:
            if name in failed:
                continue
            start = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", code], env={**os.environ, **extra},
                               capture_output=True)
            elapsed = time.perf_counter() - start
            if r.returncode != 0:
                failed[name] = r.stderr.decode(errors="replace").strip().splitlines()[-1]
                continue
            if n >= 2:
                times[name].append(elapsed)
    ms = {k: statistics.median(v) * 1000 for k, v in times.items() if v}
    bare = ms["bare python"]
    report = {"runs": args.runs, **{f"{k} ms": round(v, 1) for k, v in ms.items()},
              **{f"{k} over bare ms": round(v - bare, 1) for k, v in ms.items()},
              "not measured": failed}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"medians of {args.runs} interleaved runs")
    print("| client path | ms | over a bare interpreter |")
    print("|---|---|---|")
    for name, value in ms.items():
        print(f"| {name} | {value:.0f} | +{value - bare:.0f} ms |")
    for name, why in failed.items():
        print(f"| {name} | not measured: {why} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
