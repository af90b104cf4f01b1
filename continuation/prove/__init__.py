"""``continuation prove``: the offline system proof.

Each scenario runs in its own sandbox (temporary HOME, state home and workspaces), drives one or
more simulated runtimes (:mod:`continuation.prove.simruntime`, separate processes that call the
real ``continuation hook`` command and play a scripted agent), and reports PASS/FAIL with every
check it made and its metrics. A scenario whose feature does not exist yet FAILs with
"not available: ..."; a scenario that raises FAILs with the error. Scenarios are independent:
``run_prove(scenario=N)`` runs one.
"""
from __future__ import annotations

import json
import sys
import time
import traceback

from .report import NotAvailable, Result, table
from .sandbox import Sandbox
from .scenarios import SCENARIOS


def run_scenario(number: int) -> Result:
    title, func = SCENARIOS[number]
    result = Result(number, title)
    t0 = time.perf_counter()
    box = Sandbox(f"s{number}")
    try:
        func(box, result)
    except NotAvailable as exc:
        result.error = f"not available: {exc}"
    except Exception as exc:  # a scenario that breaks is a FAIL, with what broke
        tail = traceback.format_exc(limit=3).strip().splitlines()[-1]
        result.error = f"error: {type(exc).__name__}: {exc}"[:600]
        if tail not in result.error:
            result.error += f" [{tail[:200]}]"
    finally:
        try:
            result.finish()
        except Exception as exc:
            result.error = result.error or f"error while measuring: {exc}"
        box.close()
    result.seconds = time.perf_counter() - t0
    return result


def run_all(numbers=None) -> list[Result]:
    return [run_scenario(n) for n in (numbers or sorted(SCENARIOS))]


def report(results: list[Result]) -> dict:
    return {"passed": all(r.passed for r in results),
            "summary": {"total": len(results), "passed": sum(r.passed for r in results)},
            "seconds": round(sum(r.seconds for r in results), 2),
            "scenarios": [r.to_dict() for r in results]}


def run_prove(scenario: int | None = None, as_json: bool = False) -> int:
    if scenario is not None and scenario not in SCENARIOS:
        sys.stderr.write(f"continuation prove: no scenario {scenario} "
                         f"(there are {min(SCENARIOS)}..{max(SCENARIOS)})\n")
        return 2
    results = []
    numbers = [scenario] if scenario is not None else sorted(SCENARIOS)
    for n in numbers:
        r = run_scenario(n)
        results.append(r)
        if not as_json:
            sys.stderr.write(f"  {n:>2} {'PASS' if r.passed else 'FAIL'}  {r.title} "
                             f"({r.seconds:.1f}s)\n")
    rep = report(results)
    if as_json:
        sys.stdout.write(json.dumps(rep, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table(results) + "\n")
        s = rep["summary"]
        sys.stdout.write(f"\n{s['passed']}/{s['total']} scenarios passed in {rep['seconds']:.1f}s\n")
    return 0 if rep["passed"] else 1


__all__ = ["run_prove", "run_scenario", "run_all", "NotAvailable"]
