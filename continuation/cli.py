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
        from .hooks import main as hook_main

        return hook_main(argv[1:])
    from .commands import run

    return run(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
