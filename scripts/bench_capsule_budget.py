"""Micro-benchmark of capsule budgeting: build time, the share spent counting tokens, and the
ratio to a baseline measured in the same run (serialising the same source to JSON once, the
least any builder must do to look at every item).

    python scripts/bench_capsule_budget.py [--inputs 10000] [--repeat 3]

Prints one line per scenario; numbers are medians of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import datetime, timezone

from capsule import Budget, build_capsule, encode_capsule
from capsule.source import CapsuleSource, SourceClaim, SourceFact, SourceInput, SourceToolCall, ThreadKey
from capsule.tokens import OFFLINE_NAME, TokenCounter, token_counter_for


class TimedCounter(TokenCounter):
    """The same counter, timing every call."""

    def __init__(self, inner: TokenCounter):
        super().__init__(inner._encoding)
        self.seconds = 0.0
        self.calls = 0

    def count(self, text: str) -> int:
        start = time.perf_counter()
        try:
            return super().count(text)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def source(n_inputs: int, objective_bytes: int = 200) -> CapsuleSource:
    ptr = lambda k: f"event:bench:{k}"  # noqa: E731
    inputs = [
        SourceInput(id=f"in-{k}", text=f"request {k}: change module {k % 97} and add a test " * 3,
                    state="handled", turn_id=f"t{k}", admitted_seq=k, pointer=ptr(k))
        for k in range(n_inputs)
    ]
    inputs.append(SourceInput(id="in-open", text=("Make the parser keep spans. " * 10_000_000)[:objective_bytes],
                              state="pending", admitted_seq=n_inputs + 1, pointer=ptr(n_inputs + 1)))
    return CapsuleSource(
        thread=ThreadKey(runtime="codex", session_id="s", thread_id="bench"),
        generation=1, reason="auto", created_at=datetime(2026, 1, 1, tzinfo=timezone.utc), inputs=inputs,
        tool_calls=[SourceToolCall(call_id=f"c{k}", tool="shell", args={"command": f"pytest -k {k}"},
                                   status="ok", pointer=ptr(k)) for k in range(n_inputs // 10)],
        facts=[SourceFact(kind="turn_completed", text=f"turn t{k} completed", seq=k, pointer=ptr(k))
               for k in range(n_inputs)],
        claims=[SourceClaim(text=f"Done with request {k}.", seq=k, pointer=ptr(k)) for k in range(n_inputs)],
    )


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base_counter = token_counter_for(OFFLINE_NAME)
    scenarios = [
        (f"{args.inputs} inputs + facts + claims", source(args.inputs)),
        (f"{args.inputs // 10} inputs", source(args.inputs // 10)),
        ("5 MB objective", source(10, objective_bytes=5_000_000)),
    ]
    print(f"encoding: {base_counter.name}; budget: {Budget().max_bytes} bytes, {Budget().max_tokens} tokens")
    for name, src in scenarios:
        baseline = median_time(lambda: json.dumps(src.model_dump(mode="json")), args.repeat)
        timed = TimedCounter(base_counter)
        capsule = build_capsule(src, counter=timed)  # warm-up and a sample of the token share
        share = timed.seconds
        calls = timed.calls
        total = median_time(lambda: build_capsule(src, counter=base_counter), args.repeat)
        print(
            f"{name:38s} build {total * 1000:8.1f} ms  = {total / baseline:5.2f} x baseline "
            f"({baseline * 1000:.1f} ms json of source)  tokens {share * 1000:7.1f} ms "
            f"({100 * share / max(total, 1e-9):4.1f}% of build, {calls} counts)  "
            f"capsule {len(encode_capsule(capsule))} B / {capsule.budget.tokens} tok"
        )


if __name__ == "__main__":
    main()
