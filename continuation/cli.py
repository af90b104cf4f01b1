"""The ``continuation`` command line.

``continuation hook`` is dispatched before argparse is even imported: it runs on every prompt
and tool call and must cost little more than the interpreter's own start.
User errors print one line on stderr and exit non-zero; never a traceback
(``CONTINUATION_DEBUG=1`` shows one for internal errors).
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "hook":
        from continuation.hooks import main as hook_main

        return hook_main(argv[1:])
    from continuation.commands import run

    return run(argv)


def entry() -> None:
    """The installed command: :func:`main`, then the end of the process without the
    interpreter's teardown. Every command has closed its store and files when
    ``main`` returns; what a normal exit would add is freeing every module's objects (a loaded
    tokenizer alone takes ~130 ms, the rest of a rewind's imports as much again). Output is
    flushed first; ``logging`` handlers (an adapter may have set some) are shut down."""
    import os

    from continuation.host import process_role

    # a process of the command line, short: a team store through the local relay, so the
    # driver's import and the connection are not paid each time (a long-lived library caller
    # connects itself, once)
    process_role.command_line()
    try:
        code = main()
    except SystemExit as exc:  # argparse's --help / --version / usage errors
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
    code = int(code or 0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was written is all we can do
            pass
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
