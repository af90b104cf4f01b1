"""What kind of process this is, for choices only the process's entry can make: set by the
command line's entry point (``continuation.cli.entry``) before anything else is imported, so
saying it costs no import (the hook hot path forks its boundary worker as early as it can)."""
from __future__ import annotations

#: a short process of the command line (a command or a hook), not a long-lived library caller:
#: it reaches a team store through the local relay (``continuation.store.factory``)
COMMAND_LINE = False


def command_line() -> None:
    global COMMAND_LINE
    COMMAND_LINE = True
