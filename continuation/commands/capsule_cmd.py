"""``capsule show``, ``context``, ``source``: the handoff capsule by hand."""
from __future__ import annotations

import json
import sys

from continuation.commands import CommandError, add_json_arg, add_thread_arg, open_engine
from continuation.commands.output import emit_json

#: an instructions file larger than this is not instructions
INSTRUCTIONS_MAX = 1024 * 1024


def register(sub) -> None:
    p = sub.add_parser("capsule", help="show a committed capsule")
    capsule_sub = p.add_subparsers(dest="capsule_command", metavar="SUBCOMMAND")
    show = capsule_sub.add_parser("show", help="print the newest (or a given) capsule")
    add_thread_arg(show)
    fmt = show.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="the capsule as JSON")
    fmt.add_argument("--text", action="store_true", help="the rendered block (default)")
    show.add_argument("--generation", type=int, help="this generation (default: the newest)")
    show.set_defaults(func=cmd_capsule_show)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    p = sub.add_parser("context", help="print the assembled fresh context for a thread")
    add_thread_arg(p)
    add_json_arg(p)
    p.add_argument("--instructions", help="a file with the current instructions to put first")
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("source", help="print the full text a capsule pointer names")
    p.add_argument("pointer", metavar="POINTER", help="a pointer from a capsule cut: "
                   "event:<thread>:<N>, event:<thread>:<a>..<b> or "
                   "work:<thread>:<generation>:<page>")
    p.add_argument("--json", action="store_true", help="print JSON: the pointer and what it "
                   "names (an input's text, events, or a work record page)")
    p.set_defaults(func=cmd_source)


def _load(engine, selector, generation=None):
    from continuation.boundary.checkpoints import load

    thread = engine.select(selector)
    loaded = load(thread, generation)
    if loaded is None:
        raise CommandError(f"thread {thread.key} has no checkpoint yet "
                           "(run `continuation checkpoint`)")
    for problem in loaded.problems:
        print(f"continuation: {problem}", file=sys.stderr)
    return thread, loaded


def cmd_capsule_show(args) -> int:
    with open_engine() as engine:
        _, loaded = _load(engine, args.thread, args.generation)
        if args.json:
            sys.stdout.write(json.dumps(loaded.capsule.model_dump(mode="json"), indent=2,
                                        ensure_ascii=False) + "\n")
        else:
            from capsule.render import render_capsule

            sys.stdout.write(render_capsule(loaded.capsule))
            if not render_capsule(loaded.capsule).endswith("\n"):
                sys.stdout.write("\n")
    return 0


class _Unstored:
    """A capsule built for printing only, shaped like a loaded checkpoint."""

    def __init__(self, seq: int, rendered: str):
        from types import SimpleNamespace

        self.checkpoint = SimpleNamespace(seq=seq)
        self._rendered = rendered

    def rendered(self) -> str:
        return self._rendered


def cmd_context(args) -> int:
    """The fresh context as of now, built in memory: printing it commits nothing, takes no
    snapshot and records no delivery."""
    from capsule.render import render_capsule

    from continuation.boundary.crossing import assembled_context
    from continuation.boundary.checkpoints import build

    instructions = None
    if args.instructions:
        try:
            from continuation.host.userfiles import read_bounded

            instructions = read_bounded(args.instructions, INSTRUCTIONS_MAX).decode("utf-8")
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read instructions: {exc}") from None
    with open_engine() as engine:
        thread = engine.select(args.thread)
        row = thread.row
        capsule = build(thread, generation=int(row["generation"]) + 1, reason="context")
        current = _Unstored(int(row["last_seq"]), render_capsule(capsule))
        context = assembled_context(thread, current, instructions)
        if args.json:
            emit_json({"thread": thread.key, "as_of_event": int(row["last_seq"]),
                       "messages": [{"role": m.role, "kind": m.kind, "input_id": m.input_id,
                                     "state": m.state, "text": m.text}
                                    for m in context.messages]})
        else:
            sys.stdout.write(context.as_text().rstrip("\n") + "\n")
    return 0


def cmd_source(args) -> int:
    """Print what a pointer names: ``event:<thread>:<seq>`` (an input's text as the user wrote
    it, else the event as JSON), a range ``event:<thread>:<a>..<b>`` (also written
    ``event:<thread>:<a>..event:<thread>:<b>``, as a cut's pointers are: every event of it, one
    JSON object per line, at most ``RANGE_MAX``) or a work record page
    ``work:<thread>:<generation>:<page>`` (verified against its sha256)."""
    kind, _, rest = args.pointer.partition(":")
    if kind == "work":
        return _print_work_page(args.pointer, rest, args.json)
    if kind in ("context", "handoff"):
        return _print_boundary_file(kind, args.pointer, rest)
    if kind != "event" or ":" not in rest:
        raise CommandError(f"not a pointer this version can read: {args.pointer!r} (expected "
                           "event:<thread>:<seq>, event:<thread>:<a>..<b>, work:<thread>:<generation>:<page>, "
                           "context:<thread>:<generation>[:<part>] or handoff:<thread>:<generation>)")
    thread_key, first, last = _event_range(args.pointer, rest)
    with open_engine() as engine:
        thread = engine.get_thread(thread_key)
        if last is None:
            rows = thread.events(after=first - 1, upto=first)
            if not rows:
                raise CommandError(f"thread {thread.key} has no event {first}")
            data = rows[0]["data"]
            text = data.get("text")
            if args.json:
                emit_json({"pointer": args.pointer, "thread": thread.key,
                           "text": text if isinstance(text, str) else None,
                           "events": [_event_json(rows[0])]})
                return 0
            if text is None:
                text = json.dumps(data, indent=2, ensure_ascii=False)
            _write_text(text)
            return 0
        if last - first + 1 > RANGE_MAX:
            raise CommandError(f"the range {first}..{last} holds more than {RANGE_MAX} events: "
                               "ask for a shorter one")
        rows = thread.events(after=first - 1, upto=last)
        if not rows:
            raise CommandError(f"thread {thread.key} has no event in {first}..{last}")
        if args.json:
            emit_json({"pointer": args.pointer, "thread": thread.key, "text": None,
                       "events": [_event_json(row) for row in rows]})
            return 0
        for row in rows:
            _write_text(json.dumps(_event_json(row), ensure_ascii=False))
    return 0


def _event_json(row: dict) -> dict:
    return {"seq": row["seq"], "type": row["type"], "data": row["data"]}


#: events one range prints at most (a page of a long turn's calls is ~200 events)
RANGE_MAX = 2_000


def _event_range(pointer: str, rest: str) -> tuple[str, int, int | None]:
    head, sep, tail = rest.partition("..")
    thread_key, _, first_text = head.rpartition(":")
    if sep and tail.startswith("event:"):
        other, _, tail = tail[len("event:"):].rpartition(":")
        if other != thread_key:
            raise CommandError(f"a range names one thread: {pointer!r} names two")
    if not first_text.isdigit() or (sep and not tail.isdigit()):
        raise CommandError(f"bad sequence number in pointer {pointer!r}")
    first, last = int(first_text), int(tail) if sep else None
    if last is not None and last < first:
        raise CommandError(f"the range in {pointer!r} ends before it starts")
    return thread_key, first, last


def _print_work_page(pointer: str, rest: str, as_json: bool = False) -> int:
    from continuation.boundary.work_pages import read_page

    thread_key, _, numbers = rest.rpartition(":")
    thread_key, _, generation = thread_key.rpartition(":")
    if not (thread_key and generation.isdigit() and numbers.isdigit()):
        raise CommandError(f"bad work record pointer {pointer!r} (expected work:<thread>:<generation>:<page>)")
    with open_engine() as engine:
        thread = engine.get_thread(thread_key)
        try:
            text = read_page(engine.home, thread.key, int(generation), int(numbers),
                             sealer=engine.store.codec.sealer)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read {pointer!r}: {exc}") from None
    if as_json:
        emit_json({"pointer": pointer, "thread": thread.key, "text": text, "events": []})
        return 0
    _write_text(text)
    return 0


def _print_boundary_file(kind: str, pointer: str, rest: str) -> int:
    """A spilled context (whole, or part k) or a handoff prompt of a generation, opened when
    sealed: ``context:<thread>:<generation>[:<part>]``, ``handoff:<thread>:<generation>``."""
    import os

    from continuation.boundary import sealed_files
    from continuation.host.sealing import SealError

    fields = rest.split(":")
    part = fields.pop() if kind == "context" and len(fields) >= 3 and fields[-1].isdigit() \
        and fields[-2].isdigit() else None
    thread_key, generation = ":".join(fields[:-1]), fields[-1] if fields else ""
    if not (thread_key and generation.isdigit()):
        raise CommandError(f"bad {kind} pointer {pointer!r} (expected {kind}:<thread>:<generation>"
                           + ("[:<part>])" if kind == "context" else ")"))
    with open_engine() as engine:
        thread = engine.get_thread(thread_key)
        folder = "contexts" if kind == "context" else "handoff"
        name = f"g{int(generation):06d}" + (f".part{int(part)}" if part else "") + ".md"
        try:
            data = sealed_files.read(os.path.join(engine.home_str, folder, thread.key, name),
                                     engine.store.codec.sealer)
        except (OSError, SealError) as exc:
            raise CommandError(f"cannot read {pointer!r}: {exc}") from None
    sys.stdout.buffer.write(data if data.endswith(b"\n") else data + b"\n")
    return 0


def _write_text(text: str) -> None:
    out = text.encode("utf-8", "surrogatepass")  # the user's exact text, lone surrogates too
    sys.stdout.buffer.write(out)
    if not out.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")
