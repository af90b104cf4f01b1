#!/usr/bin/env python3
"""The own token counter (``capsule.tokens.VocabularyCounter``: the ranks from the state home's
cache, the pattern, a reference merge only for pieces outside the vocabulary) against tiktoken's
own ``Encoding.encode``, as a boundary uses them:

- cold: a fresh interpreter that loads the counter and counts one capsule-sized text (~12 KB)
  plus 700 distinct short pieces (a capsule build's budget fitting), start to exit; the own
  counter reads its prepared rank table (``continuation install`` prepares it), tiktoken builds
  its encoder from the same offline file; interleaved runs, medians;
- warm: counting the ~1 MB mixed corpus of ``tests/token_corpus.py`` in one process, already
  loaded.

Only the ratios mean anything (a shared, noisy machine).
Usage: python scripts/bench_tokens.py [--runs 15]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

SETUP = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
         "from token_corpus import corpus\n"
         "texts = corpus(40_000, seed=7)\n"
         "big = ''.join(texts)[:12_000]\n"
         "pieces = sorted(set(w for t in texts for w in t.split()))[:700]\n")
OWN = ("from capsule import tokens\n"
       "tokens.set_ranks_cache(sys.argv[1])\n"
       "c = tokens.get_token_counter()\n"
       "n = c.count(big) + sum(c.count(p) for p in pieces)\n")
TIKTOKEN = ("from capsule import tokens\n"
            "enc = tokens._load_offline()\n"
            "n = len(enc.encode(big, disallowed_special=())) + "
            "sum(len(enc.encode(p, disallowed_special=())) for p in pieces)\n")


def _run(body: str, cache: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", SETUP + body, cache], check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from capsule import tokens
    from token_corpus import corpus

    with tempfile.TemporaryDirectory() as cache:
        tokens.set_ranks_cache(cache)
        own = tokens.get_token_counter()  # writes the rank table, as `continuation install` does
        print(f"own counter: {type(own).__name__} {own.name}")
        base = _run("pass\n", cache)  # the corpus generation both sides pay
        own_t, tik_t, base_t = [], [], []
        for _ in range(args.runs):
            base_t.append(_run("pass\n", cache))
            own_t.append(_run(OWN, cache))
            tik_t.append(_run(TIKTOKEN, cache))
        base = statistics.median(base_t)
        o, t = statistics.median(own_t) - base, statistics.median(tik_t) - base
        print(f"cold (load + 12 KB + 700 pieces, beyond the shared setup {base * 1000:.0f} ms): "
              f"own {o * 1000:.0f} ms, tiktoken {t * 1000:.0f} ms, own/tiktoken {o / t:.2f}x")
    texts = corpus()
    enc = tokens._load_offline()
    fresh = tokens.VocabularyCounter(tokens._offline_vocabulary())
    start = time.perf_counter()
    sum(fresh.count(x) for x in texts)
    own_w = time.perf_counter() - start
    start = time.perf_counter()
    sum(len(enc.encode(x, disallowed_special=())) for x in texts)
    tik_w = time.perf_counter() - start
    print(f"warm (~1 MB corpus, {len(texts)} texts): own {own_w * 1000:.0f} ms, tiktoken "
          f"{tik_w * 1000:.0f} ms, own/tiktoken {own_w / tik_w:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
