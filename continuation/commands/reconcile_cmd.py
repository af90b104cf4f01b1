"""``reconcile``: tool calls with unknown outcome, and the user's decision about each.

    continuation reconcile [--thread T] [--json]                  list them (with checks)
    continuation reconcile CALL [--thread T]                      show one
    continuation reconcile CALL --applied|--not-applied|--retry-safe [--note TEXT]
    continuation reconcile --accept-suggested [--thread T]        record what the evidence shows
                                                                  (read-only: retry-safe; verified
                                                                  edits: applied / not applied)

Listing first records ``crash_detected`` for threads whose owner is gone without a clean end
(as ``continuation recover`` does): only then are their in-flight calls known to be unknown.
A decision is a ``reconciled`` fact; after it the held input is handled (``--applied`` and its
turn had completed) or pending again. Nothing is ever retried by continuation itself.
"""
from __future__ import annotations

from continuation.commands import CommandError, add_json_arg, add_thread_arg, open_engine
from continuation.commands.output import echo, emit_json, when


def register(sub) -> None:
    p = sub.add_parser("reconcile", help="tool calls with unknown outcome: list them or record "
                       "a decision",
                       # argparse keeps the decisions' group on one line, too long for 80 columns
                       usage="%(prog)s [-h] [--thread THREAD] [--json] [CALL]\n"
                             "       [--applied | --not-applied | --retry-safe |\n"
                             "        --accept-suggested] [--note NOTE]")
    p.add_argument("call", nargs="?", help="tool call id (or a unique prefix)")
    add_thread_arg(p)
    add_json_arg(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--applied", dest="decision", action="store_const", const="applied",
                       help="the call took effect (do not run it again)")
    group.add_argument("--not-applied", dest="decision", action="store_const",
                       const="not_applied", help="the call did not take effect")
    group.add_argument("--retry-safe", dest="decision", action="store_const",
                       const="retry_safe", help="running it again is safe")
    group.add_argument("--accept-suggested", action="store_true",
                       help="record the suggested decision of every call that has one (read-only "
                       "calls: retry-safe; edits verified against the files: applied / not "
                       "applied); calls with external effects are left for you")
    p.add_argument("--note", default="", help="a note stored with the decision")
    p.set_defaults(func=cmd_reconcile, decision=None)


def _threads(engine, selector):
    if selector:
        return [engine.get_thread(selector)]
    return engine.threads()


def _record_crashes(engine) -> list[str]:
    """Calls of a dead session only show as unknown once its crash is recorded."""
    from continuation.session.engine import Thread
    from continuation.recovery import interrupted

    done = []
    for item in interrupted.detect(engine):
        if interrupted.record_crash(Thread(engine, item.thread_key), item,
                                    source="cli:reconcile"):
            done.append(item.thread_key)
    return done


def cmd_reconcile(args) -> int:
    from continuation.recovery import reconcile

    with open_engine() as engine:
        if args.decision and not args.call:
            raise CommandError("name the tool call to decide about (see `continuation reconcile`)")
        crashed = _record_crashes(engine)
        if args.accept_suggested:
            if args.call:
                raise CommandError("--accept-suggested takes no CALL (use --thread to narrow it)")
            return _accept(engine, args)
        if args.call:
            try:
                thread, call = reconcile.find_call(engine, args.call, args.thread)
            except reconcile.RecoveryError as exc:
                raise CommandError(str(exc)) from None
            if args.decision:
                return _decide(thread, call, args)
            items = [i for i in reconcile.pending(thread) if i.call_id == call.call_id]
            if not items:
                raise CommandError(f"tool call {call.call_id} is not waiting for reconciliation "
                                   f"(status {call.status})")
        else:
            items = [i for t in _threads(engine, args.thread) for i in reconcile.pending(t)]
        if args.json:
            emit_json({"calls": [i.to_dict() for i in items], "crash_recorded": crashed})
            return 0
        for key in crashed:
            echo(f"(recorded the crash of thread {key}: its owner is gone)")
        if not items:
            echo("no tool calls wait for reconciliation")
            return 0
        for it in items:
            _print_item(it)
    return 0


def _print_item(it) -> None:
    from continuation.recovery.reconcile import args_text

    echo(f"call {it.call_id}  ({it.tool or '?'}, thread {it.thread_key})")
    echo(f"  arguments: {args_text(it.args, 400)}")
    echo(f"  started:   {when(it.started_at)}   turn {it.turn_id or '-'}")
    held = ", ".join(f"{i['input_id']} ({i['state']})" for i in it.inputs) or "none"
    echo(f"  holds:     {held}")
    echo(f"  kind:      {it.classification.kind.replace('_', '-')}: {it.classification.reason}")
    if it.check is not None:
        echo(f"  verified:  {it.check.verdict.replace('_', ' ')}")
        for f in it.check.files:
            echo(f"             {f.path}: {f.verdict.replace('_', ' ')} - {f.detail}")
    echo(f"  question:  {it.question}")
    print()


def _decide(thread, call, args) -> int:
    from continuation.recovery import reconcile

    if call.status not in ("unknown", "in_flight"):
        # a runtime id reused in a later turn names two calls: say which one waits
        reused = [c.call_id for c in thread.tool_calls(("unknown", "in_flight"))
                  if c.runtime_call_id == call.call_id]
        hint = f"; the call waiting with this runtime id is {reused[0]}" if reused else ""
        raise CommandError(f"tool call {call.call_id} already has an outcome ({call.status}), "
                           f"nothing to reconcile{hint}")
    reconcile.decide(thread, call.call_id, args.decision, args.note)
    held = [r for r in thread.inputs() if r.turn_id == call.turn_id and call.turn_id]
    if args.json:
        emit_json({"thread": thread.key, "call_id": call.call_id, "decision": args.decision,
                   "inputs": [{"input_id": r.input_id, "state": r.state} for r in held]})
        return 0
    echo(f"recorded: {call.call_id} {args.decision.replace('_', '-')}")
    for r in held:
        echo(f"  input {r.input_id}: {r.state}")
    return 0


def _accept(engine, args) -> int:
    from continuation.recovery import reconcile

    recorded, left = [], []
    for thread in _threads(engine, args.thread):
        for it in reconcile.pending(thread):
            if it.suggestion is None:
                left.append(it)
                continue
            why = it.check.summary() if it.check else it.classification.reason
            reconcile.decide(thread, it.call_id, it.suggestion,
                             (args.note + "; " if args.note else "") + f"suggested: {why}")
            recorded.append((it, it.suggestion))
    if args.json:
        emit_json({"recorded": [{"thread": it.thread_key, "call_id": it.call_id, "decision": d}
                                for it, d in recorded],
                   "left": [it.to_dict() for it in left]})
        return 0
    for it, decision in recorded:
        echo(f"recorded: {it.call_id} {decision.replace('_', '-')}  ({it.tool}, thread {it.thread_key})")
    if left:
        echo(f"{len(left)} call(s) need your decision:")
        for it in left:
            _print_item(it)
    elif not recorded:
        echo("no tool calls wait for reconciliation")
    return 0
