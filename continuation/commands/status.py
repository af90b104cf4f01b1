"""``status``, ``inputs``, ``events``: what the engine knows, read from the derived tables."""
from __future__ import annotations

import json

from continuation.commands import (CommandError, add_json_arg, add_thread_arg,
                                   open_engine)
from continuation.commands.output import (Column, echo, emit_json, lineage, line_width, paint,
                                          position, short_path, table, thread_title, when)

#: threads ``status`` lists (the most recently active; ``--all`` lists every one)
STATUS_THREADS = 5
#: inputs listed per thread by ``status`` when it lists several threads, and with ``--thread``
#: (the counts per state cover them all)
STATUS_INPUTS = 3
STATUS_INPUTS_ONE = 20


def _input_states() -> list[str]:
    from statemachine.lifecycle import STATES

    return [s for s in STATES if s != "new"]


def register(sub) -> None:
    p = sub.add_parser("status", help="threads (the most recently active first), each input "
                       "count per state and the newest inputs")
    add_thread_arg(p, "only this thread (key, session id, name, or a unique prefix)")
    p.add_argument("--all", action="store_true",
                   help=f"list every thread (default: the {STATUS_THREADS} most recently active, "
                        "and the default thread)")
    add_json_arg(p)
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("inputs", help="the inputs of a thread with their states")
    add_thread_arg(p)
    add_json_arg(p)
    p.add_argument("--state", choices=_input_states(), metavar="STATE",
                   help="only inputs in this state: " + ", ".join(_input_states()))
    p.set_defaults(func=cmd_inputs)
    p = sub.add_parser("events", help="the event log of a thread")
    add_thread_arg(p)
    add_json_arg(p)
    p.add_argument("--after", type=int, default=0, metavar="N",
                   help="only events after event N")
    p.add_argument("--limit", type=int, metavar="N", help="at most N events")
    p.set_defaults(func=cmd_events)


def _input_rows(thread, state: str | None = None) -> list[dict]:
    rows = [r.to_row() for r in thread.inputs()]
    return [r for r in rows if state is None or r["state"] == state]


def _runtime(thread) -> dict:
    """The liveness verdict of the thread's runtime (recovery.interrupted.runtime_verdict): a
    thread whose runtime was killed is not `active`, and its pending inputs are not being
    worked on, though nothing is recorded until `continuation recover`."""
    from continuation.recovery.interrupted import runtime_verdict

    return runtime_verdict(thread)


def _runtime_line(verdict: dict) -> str:
    return f"runtime: {paint(verdict['verdict'])} - {verdict['detail']}"


#: the input table of ``status`` and ``inputs``
INPUT_COLUMNS = [Column("input_id", "input", "id"), Column("state", "state", "fixed"),
                 Column("turn_id", "turn", "id", 24), Column("text", "text")]


def _counts_text(counts: dict) -> str:
    return ", ".join(f"{paint(k)} {v}" for k, v in sorted(counts.items())) or "no inputs"


def _default_key(engine) -> str | None:
    rows = engine.by_workspace()
    return rows[0]["thread_key"] if rows else None


def cmd_status(args) -> int:
    """Counts per state and the newest inputs, read through indexes: the text form decodes
    only the inputs it prints, whatever the thread's length. The most recently active
    threads first, at most :data:`STATUS_THREADS` (and the default thread, marked) unless
    ``--all``; ``--json`` lists every thread and every input. Each thread's ``status`` is
    the liveness verdict of its runtime (``runtime`` details it)."""
    from continuation.session.engine import Thread

    with open_engine() as engine:
        default = _default_key(engine)
        if args.thread:
            threads = [engine.get_thread(args.thread)]
        elif args.json:
            threads = [Thread(engine, r["thread_key"]) for r in engine.by_workspace()]
        else:
            threads = [Thread(engine, r["thread_key"]) for r in _listed(engine, default, args.all)]
        total_threads = len(engine.store.threads()) if not args.thread else 1
        per_thread = STATUS_INPUTS_ONE if args.thread else STATUS_INPUTS
        report = []
        for t in threads:
            counts = engine.store.input_counts(t.key)
            inputs = (_input_rows(t) if args.json else
                      [r.to_row() for r in engine.store.newest_inputs(t.key, per_thread)])
            runtime = _runtime(t)
            report.append({"thread": {**t.row, "status": runtime["verdict"]}, "runtime": runtime,
                           "counts": counts, "inputs": inputs, "guard": _guard(engine, t)})
        stale = _stale_notice(engine.store)
        if args.json:
            emit_json({"store": engine.store.location, "stale": stale,
                       "schema_version": engine.store.schema_version,
                       "default_thread": default, "threads": report})
            return 0
        if stale:
            echo(stale)
        if not report:
            echo(f"no threads yet (store: {engine.store.location})")
            return 0
        if len(report) < total_threads:
            echo(f"{total_threads} threads: the {len(report)} most recently active "
                 "(`--all` lists every one)")
            print()
        for item in report:
            _print_thread(item, default)
    return 0


def _listed(engine, default: str | None, everything: bool) -> list[dict]:
    """The thread rows ``status`` lists: the most recently active first, at most
    :data:`STATUS_THREADS` unless ``everything``, the default thread always among them."""
    rows = sorted(engine.store.threads(), key=lambda r: -(r["updated_at"] or 0))
    if everything or len(rows) <= STATUS_THREADS:
        return rows
    shown = rows[:STATUS_THREADS]
    if default and all(r["thread_key"] != default for r in shown):
        shown[-1] = next(r for r in rows if r["thread_key"] == default)
    return shown


def _guard(engine, thread) -> dict | None:
    """The recovery loop's state (None: the thread never ran a check)."""
    from continuation.session.guard_notes import status

    return status(engine.store, thread.key)


def _guard_line(g: dict) -> str:
    from continuation.commands.output import clip
    from continuation.host.secret_text import redact

    return (f"guard: {paint(g['verdict'])} ({g['action']}) `{clip(redact(g['command'] or ''), 40)}`"
            f", last passing checkpoint {g['good_checkpoint'] or '-'}, automatic rewinds "
            f"{g['rewinds_used']}/{g['rewinds_budget']} this request")


def _print_thread(item: dict, default: str | None) -> None:
    row = item["thread"]
    limit = line_width()
    echo(thread_title(row, default=row["thread_key"] == default), *lineage(row))
    echo(f"  {row['runtime']} session, at {position(row['last_seq'])}, last active "
         f"{when(row.get('updated_at'))}")
    workspace = row["workspace_root"] or "-"
    echo("  workspace " + short_path(workspace, None if limit is None else limit - 12))
    if item["runtime"]["verdict"] != "unknown":  # no marker on this host: nothing to say
        echo("  " + _runtime_line(item["runtime"]))
    if item.get("guard"):
        echo("  " + _guard_line(item["guard"]))
    shown = len(item["inputs"])
    total = sum(item["counts"].values())
    echo(f"  inputs: {_counts_text(item['counts'])}" + (
        f"; the newest {shown} of {total} below" if total > shown else ""))
    if item["inputs"]:
        table(item["inputs"], [c for c in INPUT_COLUMNS if c.key != "turn_id"], indent=2)
    print()


def cmd_inputs(args) -> int:
    with open_engine() as engine:
        thread = engine.select(args.thread)
        rows = _input_rows(thread, args.state)
        runtime = _runtime(thread)
        if args.json:
            emit_json({"thread": thread.key, "runtime": runtime, "inputs": rows})
            return 0
        echo(thread_title(thread.row), *lineage(thread.row), _runtime_line(runtime))
        table(rows, INPUT_COLUMNS, empty=f"(no {args.state} inputs)" if args.state
              else "(no inputs)")
    return 0


#: the event table of ``events``
EVENT_COLUMNS = [Column("seq", "event", "fixed"), Column("when", "time", "fixed"),
                 Column("type", "type", "id", 22), Column("source", "source", "id", 14),
                 Column("data", "data")]


def cmd_events(args) -> int:
    if args.after < 0 or (args.limit is not None and args.limit < 1):
        raise CommandError("--after takes 0 or more, --limit 1 or more", code=2)
    with open_engine() as engine:
        thread = engine.select(args.thread)
        rows = thread.events(after=args.after, limit=args.limit)
        if args.json:
            emit_json({"thread": thread.key, "events": rows})
            return 0
        echo(thread_title(thread.row), *lineage(thread.row))
        table([{**r, "when": when(r.get("ts")),
                "data": json.dumps(r["data"], ensure_ascii=False)} for r in rows], EVENT_COLUMNS)
    return 0


def _stale_notice(store) -> str | None:
    """Said first when the store read is the local spool (the server is unreachable)."""
    if not getattr(store, "stale", False):
        return None
    return (f"stale local view: the store server {store.server} cannot be reached "
            f"({store.reason}); this shows only what was recorded on this machine since, "
            "spooled until the server is back")
