"""What a command shows never holds a token-like string unless the user asks (``--show-secrets``).

Redaction (``continuation.host.secret_text.redact``) applies to what is shown, not to what is
stored: the store, capsules and the contexts handed to the model keep the user's text as it was.
Two places do it, so no command has to remember:

- the output helpers (``commands.output``: every table cell and clipped value, ``emit_json``'s
  data) redact a value before it is laid out, so a table stays aligned and a value cut to fit
  never shows the start of a secret;
- the command's stdout and stderr are wrapped (:func:`install`) for every other line a command
  prints.

Commands whose output is the model's own input print it verbatim (:func:`verbatim`):
``context`` (the fresh context), ``source`` (what a capsule pointer names, run by the model to
read its record), ``capsule show`` (the block as the model receives it), and ``rewind`` or
``fork`` with ``--print-prompt`` (the handoff prompt a new session starts from). ``hook`` never
comes here.
"""
from __future__ import annotations

import sys

#: commands whose output a model reads: verbatim, whatever the flag
VERBATIM = frozenset({"context", "source", "capsule"})
FLAG = "--show-secrets"


class RedactingStream:
    """A text stream that redacts what is written to it, delegating everything else."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        from continuation.host.secret_text import redact

        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):  # flush, fileno, isatty, encoding, buffer...
        return getattr(self._stream, name)


def add_flag(parser) -> None:
    """``--show-secrets`` on every command that shows stored text (each leaf command: the flag
    goes after the command's name, as the others do)."""
    import argparse

    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        if not any(FLAG in a.option_strings for a in parser._actions):
            parser.add_argument(FLAG, action="store_true", dest="show_secrets",
                                help="show token-like strings (keys, passwords) as stored; "
                                     "by default they are redacted")
        return
    for action in subparsers:
        for name, child in action.choices.items():
            if name not in VERBATIM and name != "hook":
                add_flag(child)


def verbatim(args) -> bool:
    """The command's output is a model's input, or the user asked for secrets."""
    return (getattr(args, "show_secrets", False) or getattr(args, "print_prompt", False)
            or getattr(args, "command", None) in VERBATIM | {"hook"})


def install(args) -> bool:
    """Wrap stdout and stderr for the command of ``args`` unless :func:`verbatim`; True when
    wrapped."""
    if verbatim(args):
        return False
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
    return True


def uninstall() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, RedactingStream):
            setattr(sys, name, stream._stream)
