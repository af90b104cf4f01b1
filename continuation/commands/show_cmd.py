"""``show --html`` and ``serve``: a thread's timeline as a page (docs/timeline.md)."""
from __future__ import annotations

import os
import sys

from continuation.commands import CommandError, add_thread_arg, open_engine


def register(sub) -> None:
    p = sub.add_parser("show", help="a thread's timeline as one self-contained HTML file")
    add_thread_arg(p)
    p.add_argument("--html", action="store_true", required=True,
                   help="write the page as HTML (the only format)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (default: standard output; on a terminal, "
                        "continuation-THREAD.html here)")
    p.add_argument("--all", action="store_true",
                   help="hold every page of a long thread (default: the newest pages, "
                        "about 20,000 events)")
    _secrets_arg(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("serve", help="the timeline live, read-only, on 127.0.0.1")
    add_thread_arg(p, "the thread shown first (the page links every other)")
    p.add_argument("--port", type=int, default=0,
                   help="the port (default: a free one)")
    p.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                   help="how often the page checks for new events (default 2)")
    _secrets_arg(p)
    p.set_defaults(func=cmd_serve)


def _secrets_arg(p) -> None:
    p.add_argument("--show-secrets", action="store_true",
                   help="show token-like strings and credentials as recorded "
                        "(default: [redacted: KIND])")


def cmd_show(args) -> int:
    from continuation.commands.timeline import document, shown

    shown.configure(show_secrets=args.show_secrets)
    with open_engine() as engine:
        thread = engine.select(args.thread)
        page = document.render(document.file_data(engine, thread, all_pages=args.all))
    target = args.output
    if target is None and sys.stdout.isatty():
        target = f"continuation-{_file_safe(thread.key)}.html"
    if target is None or target == "-":
        sys.stdout.buffer.write(page.encode("utf-8"))
        return 0
    from continuation.host.atomic import atomic_write

    try:
        atomic_write(target, page.encode("utf-8"), fault_points=None)
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror or exc}") from None
    from continuation.commands.output import echo, size

    echo(f"wrote {target} ({size(len(page.encode('utf-8')))}) for thread {thread.key}")
    return 0


def _file_safe(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:80]


def cmd_serve(args) -> int:
    from continuation.commands.timeline import shown
    from continuation.commands.timeline.server import TimelineServer

    shown.configure(show_secrets=args.show_secrets)
    if not 0 <= args.port <= 65535:
        raise CommandError("--port must be 0..65535")
    if not 0.2 <= args.refresh <= 3600:
        raise CommandError("--refresh must be 0.2..3600 seconds")
    with open_engine() as engine:
        thread = engine.select(args.thread)  # a clear error now rather than on the first page
    try:
        server = TimelineServer(engine.home_str, thread=args.thread or thread.key,
                                port=args.port, poll_ms=int(args.refresh * 1000),
                                cwd=os.getcwd())
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    from continuation.commands.output import echo

    echo(f"serving the timeline of {thread.key} (read-only); Ctrl-C stops it")
    print(server.url)  # whole, never wrapped: it is copied or clicked
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
