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
import os
import sys
import time
import traceback

from continuation.prove.report import METRIC_DEFINITIONS, NotAvailable, Result, table
from continuation.prove.sandbox import Sandbox
from continuation.prove.scenarios import SCENARIOS


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
    result.sessions = []  # handles on finished processes: not needed past the metrics
    return result


def _run_many(numbers: list[int], jobs: int, progress) -> list[Result]:
    """Scenarios are independent (own sandbox each): with ``jobs`` > 1 they run in worker
    processes, results reported in scenario order."""
    if jobs <= 1 or len(numbers) <= 1:
        out = []
        for n in numbers:
            out.append(run_scenario(n))
            progress(out[-1])
        return out
    from concurrent.futures import ProcessPoolExecutor

    results: dict[int, Result] = {}
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_start)
    try:
        # longest first, so the slow one does not start last
        order = sorted(numbers, key=lambda n: -SLOW.get(n, 0))
        futures = {n: pool.submit(_run_in_worker, n) for n in order}
        for n in order:
            try:
                results[n] = futures[n].result()
            except Exception as exc:  # the worker died: the scenario failed, say how
                results[n] = Result(n, SCENARIOS[n][0], error=f"worker failed: {exc}")
            progress(results[n])
    except KeyboardInterrupt:
        _stop(pool, len(numbers) - len(results))
        raise
    pool.shutdown(wait=True)
    return [results[n] for n in numbers]


def _run_in_worker(number: int) -> Result:
    """:func:`run_scenario` in a pool worker; stopped (:func:`_stop`), the worker ends once the
    scenario's ``finally`` has cleaned up (the pool would otherwise wait for its next task)."""
    try:
        return run_scenario(number)
    except SystemExit as exc:
        os._exit(exc.code if isinstance(exc.code, int) else 1)


def _worker_start() -> None:
    """In each worker: a process group of its own, holding every process its scenarios start,
    so the parent's stop reaches them all; Ctrl-C is the parent's to act on; the stop
    (SIGTERM) ends the scenario through its ``finally`` (the sandbox is removed). Python
    handlers, not SIG_IGN: the simulated runtimes a scenario starts get the default
    dispositions back at exec."""
    import signal

    def stop(signum, frame):
        # once: the pool, seeing a worker gone, terminates the others while they clean up
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        raise SystemExit(128 + signum)

    os.setpgrp()
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    signal.signal(signal.SIGTERM, stop)


#: seconds a stopped worker has to clean its sandbox up before it is killed
STOP_GRACE_S = 10.0


def _stop(pool, left: int) -> None:
    """Ctrl-C: the scenarios not started are cancelled, the running ones stopped (each cleans
    its sandbox up), instead of waiting for every one of them to finish."""
    import multiprocessing

    sys.stderr.write(f"continuation prove: interrupted; stopping ({left} scenario(s) not "
                     "finished)\n")
    import signal

    workers = multiprocessing.active_children()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        _signal_group(worker.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        _signal_group(worker.pid, signal.SIGKILL)  # what is left of its scenario


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


#: rough relative run time, to schedule the long scenarios first
SLOW = {13: 50, 7: 25, 24: 20, 9: 18, 16: 16, 11: 14, 14: 13}


def run_all(numbers=None, jobs: int = 1) -> list[Result]:
    return _run_many(list(numbers or sorted(SCENARIOS)), jobs, lambda r: None)


def default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def report(results: list[Result], jobs: int = 1, wall: float | None = None) -> dict:
    return {"passed": all(r.passed for r in results), "jobs": jobs,
            "wall_seconds": round(wall, 2) if wall is not None else None,
            "summary": {"total": len(results), "passed": sum(r.passed for r in results)},
            "seconds": round(sum(r.seconds for r in results), 2),
            "metric_definitions": METRIC_DEFINITIONS,
            "scenarios": [r.to_dict() for r in results]}


def run_prove(scenario=None, as_json: bool = False, jobs: int | None = None,
              verbose: bool = False, width: int | None = None) -> int:
    """Run the scenarios (all, one number, or a list of numbers); print the table (fitted to
    ``width``; None: no limit) or the JSON report; 0 only when every scenario run passed.
    Ctrl-C stops at once: scenarios not started are cancelled, running ones cleaned up."""
    if scenario is None:
        numbers = sorted(SCENARIOS)
    else:
        numbers = sorted(set([scenario] if isinstance(scenario, int) else scenario))
    unknown = [n for n in numbers if n not in SCENARIOS]
    if unknown or not numbers:
        sys.stderr.write(f"continuation prove: no scenario {unknown[0] if unknown else ''} "
                         f"(there are {min(SCENARIOS)}..{max(SCENARIOS)})\n")
        return 2
    jobs = default_jobs() if jobs is None else max(1, jobs)

    def progress(r: Result) -> None:
        if not as_json:
            sys.stderr.write(f"  {r.number:>2} {'PASS' if r.passed else 'FAIL'}  {r.title} "
                             f"({r.seconds:.1f}s)\n")
            sys.stderr.flush()

    t0 = time.perf_counter()
    results = _run_many(numbers, jobs, progress)
    rep = report(results, jobs, time.perf_counter() - t0)
    if as_json:
        sys.stdout.write(json.dumps(rep, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table(results, verbose, width) + "\n")
        s = rep["summary"]
        sys.stdout.write(f"\n{s['passed']}/{s['total']} scenarios passed in "
                         f"{rep['wall_seconds']:.1f}s ({jobs} at a time)\n")
    return 0 if rep["passed"] else 1


__all__ = ["run_prove", "run_scenario", "run_all", "NotAvailable"]
