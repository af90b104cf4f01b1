"""``status``, ``inputs``, ``events``: what the engine knows, read from the derived tables."""
from __future__ import annotations

import json

from continuation.commands import add_json_arg, add_thread_arg, open_engine
from continuation.commands.output import emit_json, table


def register(sub) -> None:
    p = sub.add_parser("status", help="threads, and each input with its state")
    add_thread_arg(p)
    add_json_arg(p)
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("inputs", help="the inputs of a thread with their states")
    add_thread_arg(p)
    add_json_arg(p)
    p.add_argument("--state", help="only inputs in this state")
    p.set_defaults(func=cmd_inputs)
    p = sub.add_parser("events", help="the event log of a thread")
    add_thread_arg(p)
    add_json_arg(p)
    p.add_argument("--after", type=int, default=0, help="only events after this sequence number")
    p.add_argument("--limit", type=int, help="at most this many events")
    p.set_defaults(func=cmd_events)


def _input_rows(thread, state: str | None = None) -> list[dict]:
    rows = [r.to_row() for r in thread.inputs()]
    return [r for r in rows if state is None or r["state"] == state]


#: inputs listed per thread by ``status`` (``inputs`` lists them all)
STATUS_INPUTS = 20


def _runtime(thread) -> dict:
    """The liveness verdict of the thread's runtime (recovery.interrupted.runtime_verdict): a
    thread whose runtime was killed is not `active`, and its pending inputs are not being
    worked on, though nothing is recorded until `continuation recover`."""
    from continuation.recovery.interrupted import runtime_verdict

    return runtime_verdict(thread)


def _runtime_line(verdict: dict) -> str:
    return f"runtime: {verdict['verdict']} - {verdict['detail']}"


def cmd_status(args) -> int:
    """Counts per state and the newest inputs, read through indexes: the text form decodes
    only the inputs it prints, whatever the thread's length. ``--json`` lists every input.
    Each thread's ``status`` is the liveness verdict of its runtime (``runtime`` details it).
    The threads of the workspace you are in come first."""
    from continuation.session.engine import Thread

    with open_engine() as engine:
        threads = [engine.get_thread(args.thread)] if args.thread else [
            Thread(engine, r["thread_key"]) for r in engine.by_workspace()]
        report = []
        for t in threads:
            counts = engine.store.input_counts(t.key)
            inputs = (_input_rows(t) if args.json else
                      [r.to_row() for r in engine.store.newest_inputs(t.key, STATUS_INPUTS)])
            runtime = _runtime(t)
            report.append({"thread": {**t.row, "status": runtime["verdict"]}, "runtime": runtime,
                           "counts": counts, "inputs": inputs})
        stale = _stale_notice(engine.store)
        if args.json:
            emit_json({"store": engine.store.location, "stale": stale, "schema_version": engine.store.schema_version,
                       "threads": report})
            return 0
        if stale:
            print(stale)
        if not report:
            print(f"no threads yet (store: {engine.store.location})")
            return 0
        for item in report:
            row = item["thread"]
            counts = ", ".join(f"{k} {v}" for k, v in sorted(item["counts"].items())) or "no inputs"
            print(f"thread {row['thread_key']}  runtime={row['runtime']}  "
                  f"workspace={row['workspace_root'] or '-'}  events={row['last_seq']}  ({counts})")
            print(_runtime_line(item["runtime"]))
            shown = len(item["inputs"])
            total = sum(item["counts"].values())
            if total > shown:
                print(f"(the newest {shown} of {total} inputs; `continuation inputs` lists all)")
            table(item["inputs"], [("input_id", "input", 24), ("state", "state", 11),
                                   ("turn_id", "turn", 14), ("text", "text", 60)])
            print()
    return 0


def cmd_inputs(args) -> int:
    with open_engine() as engine:
        thread = engine.select(args.thread)
        rows = _input_rows(thread, args.state)
        runtime = _runtime(thread)
        if args.json:
            emit_json({"thread": thread.key, "runtime": runtime, "inputs": rows})
        else:
            print(_runtime_line(runtime))
            table(rows, [("input_id", "input", 40), ("state", "state", 11),
                         ("turn_id", "turn", 40), ("text", "text", 70)])
    return 0


def cmd_events(args) -> int:
    with open_engine() as engine:
        thread = engine.select(args.thread)
        rows = thread.events(after=args.after, limit=args.limit)
        if args.json:
            emit_json({"thread": thread.key, "events": rows})
        else:
            table([{**r, "data": json.dumps(r["data"], ensure_ascii=False)} for r in rows],
                  [("seq", "seq", 8), ("kind", "kind", 6), ("type", "type", 22),
                   ("source", "source", 14), ("data", "data", 90)])
    return 0


def _stale_notice(store) -> str | None:
    """Said first when the store read is the local spool (the server is unreachable)."""
    if not getattr(store, "stale", False):
        return None
    return (f"stale local view: the store server {store.server} cannot be reached "
            f"({store.reason}); this shows only what was recorded on this machine since, "
            "spooled until the server is back")
